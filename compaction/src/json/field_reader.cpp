// field_reader: strict typed field access with JSON-path error messages.
#include "field_reader.hpp"

#include <cmath>
#include <limits>

namespace agentctx::compaction::detail {

const char* kind_name(boost::json::kind k) noexcept
{
    switch (k)
    {
    case boost::json::kind::null:
        return "null";
    case boost::json::kind::bool_:
        return "boolean";
    case boost::json::kind::int64:
    case boost::json::kind::uint64:
    case boost::json::kind::double_:
        return "number";
    case boost::json::kind::string:
        return "string";
    case boost::json::kind::array:
        return "array";
    case boost::json::kind::object:
        return "object";
    }
    return "?";
}

std::string field_reader::path_of(std::string_view key) const
{
    if (path_.empty())
        return std::string(key);
    std::string p(path_);
    p += '.';
    p += key;
    return p;
}

void field_reader::fail(errc code, std::string_view key, std::string_view what)
{
    if (failed())
        return;
    code_ = code;
    diag_.field = path_of(key);
    diag_.message = "field '" + diag_.field + "': " + std::string(what);
}

const boost::json::value* field_reader::opt_value(std::string_view key) const
{
    return obj_.if_contains(key);
}

const boost::json::value* field_reader::typed(
    std::string_view key, boost::json::kind k, const char* expected, bool required
)
{
    const auto* v = obj_.if_contains(key);
    if (!v)
    {
        if (required)
            fail(errc::missing_field, key, "required field is missing");
        return nullptr;
    }
    const bool is_number_wanted = k == boost::json::kind::double_;
    const bool ok = is_number_wanted ? v->is_number() : v->kind() == k;
    if (!ok)
    {
        fail(errc::wrong_type, key, std::string("expected ") + expected + ", got " + kind_name(v->kind()));
        return nullptr;
    }
    return v;
}

std::string field_reader::req_string(std::string_view key)
{
    const auto* v = typed(key, boost::json::kind::string, "string", true);
    return v ? std::string(v->get_string()) : std::string();
}

std::optional<std::string> field_reader::opt_string(std::string_view key)
{
    const auto* v = typed(key, boost::json::kind::string, "string", false);
    if (!v)
        return std::nullopt;
    return std::string(v->get_string());
}

std::optional<std::string> field_reader::nullable_string(std::string_view key, bool required)
{
    const auto* v = obj_.if_contains(key);
    if (!v)
    {
        if (required)
            fail(errc::missing_field, key, "required field is missing");
        return std::nullopt;
    }
    if (v->is_null())
        return std::nullopt;
    if (!v->is_string())
    {
        fail(errc::wrong_type, key, std::string("expected string or null, got ") + kind_name(v->kind()));
        return std::nullopt;
    }
    return std::string(v->get_string());
}

bool field_reader::opt_bool(std::string_view key, bool fallback)
{
    const auto* v = typed(key, boost::json::kind::bool_, "boolean", false);
    return v ? v->get_bool() : fallback;
}

std::optional<double> field_reader::opt_number(std::string_view key)
{
    const auto* v = obj_.if_contains(key);
    if (!v || v->is_null())
        return std::nullopt;  // JSON.stringify writes undefined numbers as absent, NaN as null
    if (!v->is_number())
    {
        fail(errc::wrong_type, key, std::string("expected number, got ") + kind_name(v->kind()));
        return std::nullopt;
    }
    return v->to_number<double>();
}

double field_reader::req_number(std::string_view key)
{
    const auto* v = typed(key, boost::json::kind::double_, "number", true);
    return v ? v->to_number<double>() : 0.0;
}

std::int64_t field_reader::opt_int(std::string_view key)
{
    const auto d = opt_number(key);
    if (!d || std::isnan(*d))
        return 0;
    // Saturate: a cast of a double outside the int64 range is undefined behaviour.
    if (*d >= 9.2233720368547758e18)
        return std::numeric_limits<std::int64_t>::max();
    if (*d <= -9.2233720368547758e18)
        return std::numeric_limits<std::int64_t>::min();
    return static_cast<std::int64_t>(*d);
}

const boost::json::object* field_reader::opt_object(std::string_view key)
{
    const auto* v = typed(key, boost::json::kind::object, "object", false);
    return v ? &v->get_object() : nullptr;
}

const boost::json::object* field_reader::req_object(std::string_view key)
{
    const auto* v = typed(key, boost::json::kind::object, "object", true);
    return v ? &v->get_object() : nullptr;
}

const boost::json::array* field_reader::req_array(std::string_view key)
{
    const auto* v = typed(key, boost::json::kind::array, "array", true);
    return v ? &v->get_array() : nullptr;
}

}  // namespace agentctx::compaction::detail
