// Entry builders for a host loop: the `fields` of async_append for a prompt, a reply, a tool result.
#pragma once

#include <boost/json/object.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace agentctx::runtime::entries {

/// One tool call of an assistant reply.
struct tool_call
{
    std::string id;    ///< the provider's call id; the result names it
    std::string name;  ///< the tool
    boost::json::object arguments;
};

/// What a model answered, as the provider reported it. `input_tokens` is the prompt size the
/// provider billed (without cache reads): the threshold check uses the reported usage.
struct assistant_reply
{
    std::string text;
    std::vector<tool_call> tool_calls;
    std::string provider;  ///< e.g. `openai`, `anthropic`
    std::string model;     ///< the model that answered (an overflow from another model is ignored)
    std::string api;       ///< e.g. `openai-completions`, `anthropic-messages`; empty = from `provider`
    std::int64_t input_tokens = 0, output_tokens = 0, cache_read_tokens = 0, cache_write_tokens = 0;
    /// `stop`, `length`, `toolUse`, `error` or `aborted`; empty = `toolUse` with calls, else `stop`.
    std::string stop_reason;
    std::string error_message;  ///< with `error`: the provider's error text (an overflow is recognized)
};

/// `{"type":"message","message":{"role":"user","content":text,...}}`.
boost::json::object user(std::string_view text);

/// The reply as a Pi assistant message: text, then tool calls, usage and stop reason.
boost::json::object assistant(const assistant_reply& reply);

/// The result of tool call `call_id` (tool `tool_name`); `is_error` when the tool failed.
boost::json::object tool_result(
    std::string_view call_id, std::string_view tool_name, std::string_view text, bool is_error = false
);

}  // namespace agentctx::runtime::entries
