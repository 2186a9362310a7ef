// Reads `input_transformations` from OpenAI Responses and Anthropic Messages replies, whole or streamed.
#include <agentctx/providers/input_transformations.hpp>

#include "wire_input_reader.hpp"

#include <algorithm>

namespace agentctx::providers {

namespace json = boost::json;
using detail::field_path;
using detail::index_path;
using detail::wire_reader;

namespace {

constexpr std::string_view root = "input_transformations";

// One OpenAI entry `{id, action, reason, type: "reasoning"}`; nullopt with no failure: a type
// or action we do not know (left out).
std::optional<input_transformation> openai_entry(
    const json::object& o, const std::string& at, wire_reader& rd
)
{
    auto type = rd.string(o, "type", at);
    if (!type || *type != "reasoning")
        return std::nullopt;
    auto action = rd.string(o, "action", at);
    auto reason = rd.string(o, "reason", at);
    auto id = rd.string(o, "id", at);
    if (rd.failed() || *action != "removed")
        return std::nullopt;
    return input_transformation{true, std::move(*reason), std::move(*id)};
}

// One Anthropic entry `{type: "thinking_dropped" | "thinking_mismatch_allowed", reason, path}`.
std::optional<input_transformation> anthropic_entry(
    const json::object& o, const std::string& at, wire_reader& rd
)
{
    auto type = rd.string(o, "type", at);
    if (!type || (*type != "thinking_dropped" && *type != "thinking_mismatch_allowed"))
        return std::nullopt;
    auto reason = rd.string(o, "reason", at);
    auto path = rd.string(o, "path", at);
    if (rd.failed())
        return std::nullopt;
    return input_transformation{*type == "thinking_dropped", std::move(*reason), std::move(*path)};
}

}  // namespace

std::int64_t input_transformations::removed() const noexcept
{
    return std::count_if(items.begin(), items.end(), [](const auto& t) { return t.removed; });
}

std::int64_t input_transformations::allowed() const noexcept
{
    return static_cast<std::int64_t>(items.size()) - removed();
}

json::object to_json(const input_transformations& t, input_format f)
{
    json::array items;
    for (const auto& i : t.items)
        items.push_back(json::object{
            {"action", i.removed ? "removed" : "allowed"},
            {"reason", i.reason},
            {f == input_format::anthropic ? "path" : "id", i.where}});
    return json::object{{"removed", t.removed()}, {"allowed", t.allowed()}, {"items", std::move(items)}};
}

compaction::result<input_transformations> read_input_transformations(
    input_format f, const json::value& list, diagnostics& diag
)
{
    wire_reader rd(diag);
    const auto invalid = make_error_code(errc::invalid_wire_message);
    const std::string path(root);
    if (f == input_format::openai)
        return rd.fail(path, "Chat Completions replies carry none"), invalid;
    input_transformations out;
    if (list.is_null())
        return out;
    if (!list.is_array())
        return rd.fail(path, "expected an array"), invalid;
    const auto& a = list.get_array();
    for (std::size_t i = 0; i < a.size(); ++i)
    {
        const auto at = index_path(path, i);
        const auto* o = rd.object(a[i], at);
        if (!o)
            return invalid;
        auto entry = f == input_format::responses ? openai_entry(*o, at, rd) : anthropic_entry(*o, at, rd);
        if (rd.failed())
            return invalid;
        if (entry)
            out.items.push_back(std::move(*entry));
    }
    return out;
}

compaction::result<std::optional<input_transformations>> reply_input_transformations(
    input_format f, const json::object& reply, diagnostics& diag
)
{
    const auto* list = reply.if_contains(root);
    if (!list)
        return std::optional<input_transformations>{};
    auto read = read_input_transformations(f, *list, diag);
    if (!read)
        return read.error();
    return std::optional<input_transformations>{std::move(*read)};
}

bool input_transformation_stream::feed(const json::object& event, diagnostics& diag)
{
    const auto* type = event.if_contains("type");
    if (!type || !type->is_string())
        return true;
    const std::string_view t = type->get_string();
    const json::value* holder = nullptr;
    const json::object* list_owner = nullptr;
    if (format_ == input_format::responses &&
        (t == "response.created" || t == "response.in_progress" || t == "response.completed" ||
         t == "response.incomplete" || t == "response.failed"))
        holder = event.if_contains("response");
    else if (format_ == input_format::anthropic && t == "message_start")
        holder = event.if_contains("message");
    else if (format_ == input_format::anthropic && t == "message_delta")
        list_owner = &event;  // carries its own list only after a model fallback
    if (holder && holder->is_object())
        list_owner = &holder->get_object();
    if (!list_owner)
        return true;
    const auto* list = list_owner->if_contains(root);
    if (!list || (list->is_null() && t == "message_delta"))
        return true;
    auto read = read_input_transformations(format_, *list, diag);
    if (!read)
        return false;
    result_ = std::move(*read);
    return true;
}

}  // namespace agentctx::providers
