// wire_reader: typed field access with field paths; Pi block builders.
#include "wire_input_reader.hpp"

#include <agentctx/compaction/client_values.hpp>

#include <boost/json/parse.hpp>

namespace agentctx::providers::detail {

namespace {

std::string_view kind_of(const json::value& v)
{
    switch (v.kind())
    {
    case json::kind::null:
        return "null";
    case json::kind::bool_:
        return "a boolean";
    case json::kind::int64:
    case json::kind::uint64:
    case json::kind::double_:
        return "a number";
    case json::kind::string:
        return "a string";
    case json::kind::array:
        return "an array";
    case json::kind::object:
        return "an object";
    }
    return "a value";
}

std::string expected(std::string_view what, const json::value& got)
{
    return "expected " + std::string(what) + ", got " + std::string(kind_of(got));
}

}  // namespace

bool wire_reader::fail(const std::string& path, std::string_view why)
{
    if (!failed_)
    {
        failed_ = true;
        diag_.message = path + ": " + std::string(why);
    }
    return false;
}

const json::object* wire_reader::object(const json::value& v, const std::string& path)
{
    if (failed_)
        return nullptr;
    if (!v.is_object())
        return fail(path, expected("an object", v)), nullptr;
    return &v.get_object();
}

std::optional<std::string> wire_reader::string(
    const json::object& o, std::string_view key, const std::string& path
)
{
    const auto* v = o.if_contains(key);
    if (failed_)
        return std::nullopt;
    if (!v)
        return fail(field_path(path, key), "required field is missing"), std::nullopt;
    if (!v->is_string())
        return fail(field_path(path, key), expected("a string", *v)), std::nullopt;
    return std::string(v->get_string());
}

std::optional<std::string> wire_reader::opt_string(
    const json::object& o, std::string_view key, const std::string& path
)
{
    const auto* v = o.if_contains(key);
    if (failed_ || !v || v->is_null())
        return std::nullopt;
    if (!v->is_string())
        return fail(field_path(path, key), expected("a string", *v)), std::nullopt;
    return std::string(v->get_string());
}

bool wire_reader::opt_bool(const json::object& o, std::string_view key, const std::string& path, bool& out)
{
    out = false;
    const auto* v = o.if_contains(key);
    if (failed_)
        return false;
    if (!v || v->is_null())
        return true;
    if (!v->is_bool())
        return fail(field_path(path, key), expected("a boolean", *v));
    out = v->get_bool();
    return true;
}

const json::array* wire_reader::array(const json::object& o, std::string_view key, const std::string& path)
{
    const auto* v = o.if_contains(key);
    if (failed_)
        return nullptr;
    if (!v)
        return fail(field_path(path, key), "required field is missing"), nullptr;
    if (!v->is_array())
        return fail(field_path(path, key), expected("an array", *v)), nullptr;
    return &v->get_array();
}

const json::object* wire_reader::object_field(
    const json::object& o, std::string_view key, const std::string& path
)
{
    const auto* v = o.if_contains(key);
    if (failed_)
        return nullptr;
    if (!v)
        return fail(field_path(path, key), "required field is missing"), nullptr;
    return object(*v, field_path(path, key));
}

std::optional<json::object> wire_reader::arguments_text(
    const json::object& o, std::string_view key, const std::string& path
)
{
    const auto text = string(o, key, path);
    if (!text)
        return std::nullopt;
    // Some servers send "" for a call without parameters.
    if (text->empty())
        return json::object{};
    boost::system::error_code ec;
    auto v = json::parse(*text, ec);
    if (ec)
        return fail(field_path(path, key), "not valid JSON"), std::nullopt;
    if (!v.is_object())
        return fail(field_path(path, key), "not a JSON object"), std::nullopt;
    // 1e400 parses as infinity, which JSON cannot hold (it would be written as null).
    if (const auto at = compaction::first_non_finite(v, ""))
        return fail(field_path(path, key), *at + ": a number out of the range of a double"), std::nullopt;
    return std::move(v.get_object());
}

std::optional<json::object> wire_reader::image(
    std::string data, std::string media_type, const std::string& data_path, const std::string& type_path
)
{
    if (!compaction::is_image_media_type(media_type))
        return fail(type_path, "not an accepted image type (image/png, image/jpeg, image/gif, image/webp)"),
               std::nullopt;
    if (!compaction::is_base64(data))
        return fail(data_path, "not base64 image data"), std::nullopt;
    return pi_image(std::move(data), std::move(media_type));
}

std::optional<json::object> wire_reader::data_url_image(
    const json::object& o, std::string_view key, const std::string& path
)
{
    const auto url = string(o, key, path);
    if (!url)
        return std::nullopt;
    constexpr std::string_view scheme = "data:", marker = ";base64,";
    const auto at = url->find(marker);
    if (!url->starts_with(scheme) || at == std::string::npos || at == scheme.size())
        return fail(field_path(path, key), "only base64 data: URLs are accepted (images are not fetched)"),
               std::nullopt;
    const std::string where = field_path(path, key);
    return image(
        url->substr(at + marker.size()), url->substr(scheme.size(), at - scheme.size()), where, where
    );
}

json::object pi_text(std::string text)
{
    return json::object{{"type", "text"}, {"text", std::move(text)}};
}

json::object pi_image(std::string data, std::string mime_type)
{
    return json::object{{"type", "image"}, {"data", std::move(data)}, {"mimeType", std::move(mime_type)}};
}

json::object pi_tool_call(std::string id, std::string name, json::object arguments)
{
    return json::object{
        {"type", "toolCall"},
        {"id", std::move(id)},
        {"name", std::move(name)},
        {"arguments", std::move(arguments)}};
}

}  // namespace agentctx::providers::detail
