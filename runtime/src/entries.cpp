// Entry builders: Pi 1.6 message shapes a host appends without writing JSON by hand.
#include <agentctx/runtime/entries.hpp>

#include <boost/json/array.hpp>

#include <chrono>

namespace agentctx::runtime::entries {

namespace json = boost::json;

namespace {

std::int64_t now_ms()
{
    using namespace std::chrono;
    return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

json::object message_entry(json::object message)
{
    message["timestamp"] = now_ms();
    return json::object{{"type", "message"}, {"message", std::move(message)}};
}

json::object usage_of(const assistant_reply& r)
{
    const std::int64_t total = r.input_tokens + r.output_tokens + r.cache_read_tokens + r.cache_write_tokens;
    return json::object{
        {"input", r.input_tokens},
        {"output", r.output_tokens},
        {"cacheRead", r.cache_read_tokens},
        {"cacheWrite", r.cache_write_tokens},
        {"totalTokens", total},
        {"cost",
         json::object{{"input", 0}, {"output", 0}, {"cacheRead", 0}, {"cacheWrite", 0}, {"total", 0}}}};
}

std::string api_of(const assistant_reply& r)
{
    if (!r.api.empty())
        return r.api;
    return r.provider == "anthropic" ? "anthropic-messages" : "openai-completions";
}

}  // namespace

json::object user(std::string_view text)
{
    return message_entry(json::object{{"role", "user"}, {"content", text}});
}

json::object assistant(const assistant_reply& r)
{
    json::array content;
    if (!r.text.empty())
        content.push_back(json::object{{"type", "text"}, {"text", r.text}});
    for (const auto& c : r.tool_calls)
        content.push_back(json::object{
            {"type", "toolCall"}, {"id", c.id}, {"name", c.name}, {"arguments", c.arguments}});
    json::object m{
        {"role", "assistant"},
        {"content", std::move(content)},
        {"api", api_of(r)},
        {"provider", r.provider},
        {"model", r.model},
        {"usage", usage_of(r)},
        {"stopReason", r.stop_reason.empty() ? (r.tool_calls.empty() ? "stop" : "toolUse") : r.stop_reason}};
    if (!r.error_message.empty())
        m["errorMessage"] = r.error_message;
    return message_entry(std::move(m));
}

json::object tool_result(
    std::string_view call_id, std::string_view tool_name, std::string_view text, bool is_error
)
{
    return message_entry(json::object{
        {"role", "toolResult"},
        {"toolCallId", call_id},
        {"toolName", tool_name},
        {"content", json::array{json::object{{"type", "text"}, {"text", text}}}},
        {"isError", is_error}});
}

}  // namespace agentctx::runtime::entries
