// What the host's conversation requests begin with: cache-friendly summary requests start with exactly that.
#pragma once

#include <agentctx/compaction/projection.hpp>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <functional>
#include <optional>
#include <span>
#include <string>

namespace agentctx::runtime {

/// The start of the host's requests, in the summarizer's wire format. Every field is what the
/// host sends, unchanged: a cache-friendly summary request reads the conversation's prompt cache
/// only as far as it is byte-identical to the conversation's last request.
struct conversation_request
{
    /// The system prompt (Anthropic: a string or text blocks; Chat Completions: the system
    /// message's content); null = none.
    boost::json::value system;
    boost::json::array tools;  ///< tool definitions, as sent
    /// The loop's `tool_choice` (null = none) and its other request parameters (`thinking`,
    /// `temperature`, `top_p`, ...), as sent: native compaction sends them with the window, so
    /// that the provider sees the loop's own request (docs/providers.md).
    boost::json::value tool_choice;
    boost::json::object parameters;
    std::optional<std::string> prompt_cache_key;  ///< OpenAI: the conversation's key
    /// How the host renders a context as its request's messages; empty = agentctx's own view
    /// (providers::to_wire_messages with the session's native state and summary framing). Called
    /// on the strand with the whole context and with prefixes of it (to find where the summarized
    /// part ends among the rendered messages); it must not block.
    std::function<boost::json::array(std::span<const compaction::context_message>)> render;
};

}  // namespace agentctx::runtime
