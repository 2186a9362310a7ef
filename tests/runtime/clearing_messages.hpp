// The message entries the clearing tests append: reads of a given size, and the replies that call them.
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace agentctx::test::clearing {

/// A `message` entry holding `m`, stamped at a fixed time.
inline boost::json::object message(boost::json::object m)
{
    m["timestamp"] = 1768467600000;
    return {{"type", "message"}, {"message", std::move(m)}};
}

/// An assistant entry of `content`: a tool-use turn, or with `input` > 0 a final reply reporting that usage.
inline boost::json::object assistant(boost::json::array content, std::int64_t input = 0)
{
    boost::json::object m{
        {"role", "assistant"},
        {"content", std::move(content)},
        {"api", "anthropic-messages"},
        {"provider", "anthropic"},
        {"model", "claude-sonnet-4-5"},
        {"stopReason", input ? "stop" : "toolUse"}};
    if (input)
        m["usage"] = boost::json::object{
            {"input", input},
            {"output", 100},
            {"cacheRead", 0},
            {"cacheWrite", 0},
            {"totalTokens", input + 100}};
    return message(std::move(m));
}

/// The `read` result answering `call_id`: `tokens` tokens of text (chars/4).
inline boost::json::object result(const std::string& call_id, std::size_t tokens)
{
    return message(
        {{"role", "toolResult"},
         {"toolCallId", call_id},
         {"toolName", "read"},
         {"content",
          boost::json::array{boost::json::object{{"type", "text"}, {"text", std::string(tokens * 4, 'x')}}}},
         {"isError", false}}
    );
}

}  // namespace agentctx::test::clearing
