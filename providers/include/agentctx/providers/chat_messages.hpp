// A context rendered as the `messages` of a Chat Completions or Messages request (what a host sends).
#pragma once

#include <agentctx/compaction/projection.hpp>
#include <agentctx/providers/wire_format.hpp>

#include <boost/json/array.hpp>

#include <span>

namespace agentctx::providers {

/**
 * @brief The `messages` array for `context` in wire format `f`.
 *
 * Messages go through convert_to_llm first. System messages are left out (they belong in the
 * request's system prompt and tool list) and so are `error`/`aborted` assistant messages (no tool
 * ran for them; Pi 1.6 drops them too). Thinking blocks are not sent.
 *
 * - `openai`: `user` (string or text/image_url parts), `assistant` (`content` text or null,
 *   `tool_calls` with JSON-string `arguments`), one `tool` message per result.
 * - `anthropic`: strictly alternating `user`/`assistant` turns; tool results become
 *   `tool_result` blocks at the head of the next user turn; empty text blocks are dropped.
 *
 * Pass session::context() or fit_request()'s messages: there every call has a result.
 */
boost::json::array to_wire_messages(wire_format f, std::span<const compaction::context_message> context);

}  // namespace agentctx::providers
