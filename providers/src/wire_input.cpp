// from_wire_messages: one batch of provider-format input as complete Pi messages, or nothing.
#include <agentctx/providers/wire_input.hpp>
#include <agentctx/providers/input_transformations.hpp>

#include <agentctx/compaction/client_values.hpp>
#include <agentctx/compaction/summary.hpp>

#include "json_fields.hpp"
#include "wire_input_reader.hpp"

#include <map>

namespace agentctx::providers {

namespace json = boost::json;
using compaction::stop_reason;
using namespace detail;

namespace {

std::string_view pi_api(input_format f)
{
    switch (f)
    {
    case input_format::openai:
        return "openai-completions";
    case input_format::responses:
        return "openai-responses";
    case input_format::anthropic:
        return "anthropic-messages";
    }
    return "";
}

std::string_view pi_stop(stop_reason r)
{
    switch (r)
    {
    case stop_reason::length:
        return "length";
    case stop_reason::tool_use:
        return "toolUse";
    case stop_reason::error:
        return "error";
    case stop_reason::aborted:
        return "aborted";
    default:
        return "stop";
    }
}

// A Responses `status` (`completed`, `incomplete`, `failed`, `cancelled`) or
// `incomplete_details.reason` (`max_output_tokens`, `content_filter`).
stop_reason responses_stop(std::string_view s)
{
    if (s == "incomplete" || s == "max_output_tokens")
        return stop_reason::length;
    if (s == "failed" || s == "content_filter")
        return stop_reason::error;
    if (s == "cancelled")
        return stop_reason::aborted;
    return stop_reason::stop;
}

stop_reason provider_stop(input_format f, std::string_view s)
{
    switch (f)
    {
    case input_format::openai:
        return openai_stop(s);
    case input_format::responses:
        return responses_stop(s);
    case input_format::anthropic:
        return anthropic_stop(s);
    }
    return stop_reason::stop;
}

compaction::usage provider_usage(input_format f, const json::object& u)
{
    if (f == input_format::openai)
        return chat_completions_usage(u);
    if (f == input_format::responses)
        return responses_usage(u);
    compaction::usage out;
    anthropic_usage(u, out);
    return out;
}

bool has_tool_call(const json::array& content)
{
    for (const auto& b : content)
        if (b.get_object().at("type").get_string() == "toolCall")
            return true;
    return false;
}

// The assistant message in Pi's key order: role, content, api, provider, model, usage, stopReason.
json::object complete_assistant(input_format f, json::object m, const wire_input_options& opt, bool last)
{
    auto& content = m["content"].get_array();
    const bool calls = has_tool_call(content);
    stop_reason stop = calls ? stop_reason::tool_use : stop_reason::stop;
    if (last && opt.stop_reason)
        stop = provider_stop(f, *opt.stop_reason);
    if (stop == stop_reason::stop && calls)
        stop = stop_reason::tool_use;
    compaction::usage usage;
    if (last && opt.usage)
        usage = provider_usage(f, opt.usage->get_object());
    json::object out{{"role", "assistant"}, {"content", std::move(content)}, {"api", pi_api(f)}};
    if (opt.provider)
        out["provider"] = *opt.provider;
    if (opt.model)
        out["model"] = *opt.model;
    out["usage"] = compaction::usage_to_json(usage);
    if (last && opt.input_transformations)
    {
        diagnostics ignored;  // checked by from_wire_messages before the batch is converted
        if (auto t = read_input_transformations(f, *opt.input_transformations, ignored))
            out["usage"].as_object()["inputTransformations"] = to_json(*t, f);
    }
    out["stopReason"] = pi_stop(stop);
    return out;
}

// Adds what the provider format does not carry: assistant api/usage/stop reason, the tool
// names of results (from calls earlier in the batch, else the caller), timestamps.
void complete(input_format f, const wire_input_options& opt, std::vector<json::object>& messages)
{
    std::size_t last = messages.size();
    for (std::size_t i = 0; i < messages.size(); ++i)
        if (messages[i].at("role").get_string() == "assistant")
            last = i;
    std::map<std::string, std::string, std::less<>> names;
    for (std::size_t i = 0; i < messages.size(); ++i)
    {
        auto& m = messages[i];
        const auto role = m.at("role").get_string();
        if (role == "assistant")
        {
            for (const auto& b : m.at("content").get_array())
                if (const auto& o = b.get_object(); o.at("type").get_string() == "toolCall")
                    names[std::string(o.at("id").get_string())] = std::string(o.at("name").get_string());
            m = complete_assistant(f, std::move(m), opt, i == last);
        }
        else if (role == "toolResult")
        {
            const std::string_view id = m.at("toolCallId").get_string();
            if (const auto it = names.find(id); it != names.end())
                m["toolName"] = it->second;
            else if (opt.tool_name)
                m["toolName"] = opt.tool_name(id);
        }
        if (opt.timestamp)
            m["timestamp"] = *opt.timestamp;
    }
}

bool has_assistant(const std::vector<json::object>& messages)
{
    for (const auto& m : messages)
        if (m.at("role").get_string() == "assistant")
            return true;
    return false;
}

}  // namespace

std::optional<input_format> input_format_from_string(std::string_view name) noexcept
{
    if (name == "openai")
        return input_format::openai;
    if (name == "responses")
        return input_format::responses;
    if (name == "anthropic")
        return input_format::anthropic;
    return std::nullopt;
}

std::string_view to_string(input_format f) noexcept
{
    switch (f)
    {
    case input_format::openai:
        return "openai";
    case input_format::responses:
        return "responses";
    case input_format::anthropic:
        return "anthropic";
    }
    return "openai";
}

compaction::usage usage_from_wire(input_format f, const json::object& usage)
{
    return provider_usage(f, usage);
}

namespace {

// The path of the first number under `v` outside 0..max_usage_tokens; "" when there is none.
std::string usage_out_of_range(const json::value& v, const std::string& path)
{
    if (v.is_number())
    {
        constexpr auto max = compaction::max_usage_tokens;
        const bool ok = v.is_int64() ? v.get_int64() >= 0 && v.get_int64() <= max
                        : v.is_uint64()
                            ? v.get_uint64() <= static_cast<std::uint64_t>(max)
                            : v.get_double() >= 0 && v.get_double() < static_cast<double>(max) + 1;
        return ok ? std::string() : path;
    }
    if (const auto* o = v.if_object())
        for (const auto& kv : *o)
            if (auto at = usage_out_of_range(kv.value(), path + "." + std::string(kv.key())); !at.empty())
                return at;
    if (const auto* a = v.if_array())
        for (std::size_t i = 0; i < a->size(); ++i)
            if (auto at = usage_out_of_range((*a)[i], index_path(path, i)); !at.empty())
                return at;
    return {};
}

}  // namespace

bool check_wire_usage(const json::object& usage, diagnostics& diag)
{
    const auto at = usage_out_of_range(usage, "usage");
    if (at.empty())
        return true;
    diag.message = at + ": a token count must be a whole number from 0 to " +
                   std::to_string(compaction::max_usage_tokens);
    return false;
}

compaction::result<std::vector<json::object>> from_wire_messages(
    input_format f, const json::value& items, const wire_input_options& options, diagnostics& diag
)
{
    wire_id_paths paths;
    return from_wire_messages(f, items, options, diag, paths);
}

namespace {

compaction::result<std::vector<json::object>> convert(
    input_format f,
    const json::value& items,
    const wire_input_options& options,
    diagnostics& diag,
    wire_id_paths& paths,
    std::optional<wire_compaction_item>& compaction,
    bool accept_compaction
)
{
    wire_reader rd(diag);
    const std::string root = f == input_format::responses ? "input" : "messages";
    const auto invalid = make_error_code(errc::invalid_wire_message);
    if (!items.is_array())
        return rd.fail(root, "expected an array"), invalid;
    if (options.usage && !options.usage->is_object())
        return rd.fail("usage", "expected an object"), invalid;
    if (options.usage && !check_wire_usage(options.usage->get_object(), diag))
        return invalid;
    if (options.input_transformations)
        if (auto t = read_input_transformations(f, *options.input_transformations, diag); !t)
            return invalid;
    pi_batch batch;
    batch.accept_compaction = accept_compaction && f == input_format::responses;
    bool ok = false;
    switch (f)
    {
    case input_format::openai:
        ok = read_chat_messages(items.get_array(), root, rd, batch);
        break;
    case input_format::responses:
        ok = read_responses_items(items.get_array(), root, rd, batch);
        break;
    case input_format::anthropic:
        ok = read_anthropic_messages(items.get_array(), root, rd, batch);
        break;
    }
    if (!ok)
        return invalid;
    if ((options.usage || options.stop_reason || options.input_transformations) &&
        !has_assistant(batch.messages))
        return rd.fail(
                   options.usage         ? "usage"
                   : options.stop_reason ? "stop_reason"
                                         : "input_transformations",
                   "the batch has no assistant message to attach it to"
               ),
               invalid;
    if (batch.compaction && batch.compaction->messages_before == batch.messages.size())
        return rd.fail(batch.compaction->path, "a compaction item must be followed by the reply's messages"),
               invalid;
    complete(f, options, batch.messages);
    paths = std::move(batch.id_paths);
    compaction = std::move(batch.compaction);
    return std::move(batch.messages);
}

}  // namespace

compaction::result<std::vector<json::object>> from_wire_messages(
    input_format f,
    const json::value& items,
    const wire_input_options& options,
    diagnostics& diag,
    wire_id_paths& paths
)
{
    std::optional<wire_compaction_item> refused;  // never set: this form refuses the item type
    return convert(f, items, options, diag, paths, refused, false);
}

compaction::result<std::vector<json::object>> from_wire_messages(
    input_format f,
    const json::value& items,
    const wire_input_options& options,
    diagnostics& diag,
    wire_id_paths& paths,
    std::optional<wire_compaction_item>& compaction
)
{
    return convert(f, items, options, diag, paths, compaction, true);
}

}  // namespace agentctx::providers
