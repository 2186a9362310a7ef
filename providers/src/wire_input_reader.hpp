// Path-aware reading of provider-format input and the Pi blocks and messages it becomes.
#pragma once

#include <agentctx/providers/error.hpp>
#include <agentctx/providers/wire_input.hpp>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace agentctx::providers::detail {

namespace json = boost::json;

inline std::string index_path(const std::string& path, std::size_t i)
{
    return path + "[" + std::to_string(i) + "]";
}

inline std::string field_path(const std::string& path, std::string_view key)
{
    return path + "." + std::string(key);
}

/// Reads provider JSON; the first failure is kept in `diag.message` as `<path>: <why>` and every
/// later call fails too, so a converter can stop at its next check.
class wire_reader
{
public:
    explicit wire_reader(diagnostics& diag) : diag_(diag) {}

    bool failed() const noexcept { return failed_; }
    /// Records the failure (the first one wins); always false, to `return rd.fail(…)`.
    bool fail(const std::string& path, std::string_view why);

    const json::object* object(const json::value& v, const std::string& path);
    /// A required string field.
    std::optional<std::string> string(const json::object& o, std::string_view key, const std::string& path);
    /// A string field that may be absent or null (nullopt then, without failing).
    std::optional<std::string> opt_string(
        const json::object& o, std::string_view key, const std::string& path
    );
    /// A boolean field that may be absent or null (false then).
    bool opt_bool(const json::object& o, std::string_view key, const std::string& path, bool& out);
    /// A required array field.
    const json::array* array(const json::object& o, std::string_view key, const std::string& path);
    /// A required object field.
    const json::object* object_field(const json::object& o, std::string_view key, const std::string& path);

    /// Tool-call arguments sent as a JSON string: a JSON object ("" counts as `{}`).
    std::optional<json::object> arguments_text(
        const json::object& o, std::string_view key, const std::string& path
    );
    /// A Pi image block: `media_type` one of compaction::image_media_types (else refused at
    /// `type_path`), `data` base64 (else refused at `data_path`).
    std::optional<json::object> image(
        std::string data, std::string media_type, const std::string& data_path, const std::string& type_path
    );
    /// `data:<mime>;base64,<data>` as a Pi image block.
    std::optional<json::object> data_url_image(
        const json::object& o, std::string_view key, const std::string& path
    );

private:
    diagnostics& diag_;
    bool failed_ = false;
};

json::object pi_text(std::string text);
json::object pi_image(std::string data, std::string mime_type);
json::object pi_tool_call(std::string id, std::string name, json::object arguments);

/// The Pi messages of one batch as they are read; wire_input.cpp completes them.
struct pi_batch
{
    std::vector<json::object> messages;
    /// Beside each message, the input paths of its tool-call ids (wire_id_paths).
    std::vector<std::vector<std::string>> id_paths;
    /// Responses only: whether a `compaction` item is accepted, and the one that was read.
    bool accept_compaction = false;
    std::optional<wire_compaction_item> compaction;

    void user(json::value content)
    {
        messages.push_back(json::object{{"role", "user"}, {"content", std::move(content)}});
        id_paths.emplace_back();
    }
    void system(json::value content)
    {
        messages.push_back(json::object{{"role", "system"}, {"content", std::move(content)}});
        id_paths.emplace_back();
    }
    /// A new assistant message with `content`; its other fields are added at the end. `calls`:
    /// the paths of the ids of the tool calls in `content`, in order.
    void assistant(json::array content, std::vector<std::string> calls = {})
    {
        messages.push_back(json::object{{"role", "assistant"}, {"content", std::move(content)}});
        id_paths.push_back(std::move(calls));
    }
    /// `id_path`: where the call id was read.
    void tool_result(std::string call_id, json::array content, bool is_error, std::string id_path)
    {
        messages.push_back(json::object{
            {"role", "toolResult"},
            {"toolCallId", std::move(call_id)},
            {"toolName", ""},
            {"content", std::move(content)},
            {"isError", is_error}});
        id_paths.push_back({std::move(id_path)});
    }
};

/// Reads each item of `items` (at `path[i]`) with `read(object, path)`; false at the first item
/// that is not an object or that `read` refuses.
template <class Read>
bool read_each_object(const json::array& items, const std::string& path, wire_reader& rd, Read&& read)
{
    for (std::size_t i = 0; i < items.size(); ++i)
    {
        const std::string at = index_path(path, i);
        const auto* o = rd.object(items[i], at);
        if (!o || !read(*o, at))
            return false;
    }
    return true;
}

/// As read_each_object, for items with a string `type`: `read(object, type, path)`.
template <class Read>
bool read_each_typed(const json::array& items, const std::string& path, wire_reader& rd, Read&& read)
{
    return read_each_object(items, path, rd, [&](const json::object& o, const std::string& at) {
        const auto type = rd.string(o, "type", at);
        return type && read(o, *type, at);
    });
}

/// A tool result into `out`: the call id from `id_key`, then the content `read_content()` reads
/// (std::optional<json::value> holding an array; nullopt when refused).
template <class ReadContent>
bool read_tool_result(
    const json::object& o,
    std::string_view id_key,
    const std::string& path,
    wire_reader& rd,
    pi_batch& out,
    ReadContent&& read_content
)
{
    auto id = rd.string(o, id_key, path);
    auto content = id ? read_content() : std::nullopt;
    if (!content)
        return false;
    out.tool_result(std::move(*id), std::move(content->get_array()), false, field_path(path, id_key));
    return true;
}

/// One converter per format: false (the failure in `rd`) at the first bad item.
bool read_chat_messages(const json::array& items, const std::string& path, wire_reader& rd, pi_batch& out);
bool read_responses_items(const json::array& items, const std::string& path, wire_reader& rd, pi_batch& out);
bool read_anthropic_messages(
    const json::array& items, const std::string& path, wire_reader& rd, pi_batch& out
);

}  // namespace agentctx::providers::detail
