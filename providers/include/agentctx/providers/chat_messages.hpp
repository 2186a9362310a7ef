// A context rendered as the `messages` of a Chat Completions or Messages request (what a host sends).
#pragma once

#include <agentctx/compaction/cut_point.hpp>
#include <agentctx/compaction/llm_convert.hpp>
#include <agentctx/compaction/projection.hpp>
#include <agentctx/providers/provider_types.hpp>

#include <optional>

#include <boost/json/array.hpp>

#include <span>

namespace agentctx::providers {

/**
 * @brief The `messages` array for `context` in wire format `f`.
 *
 * Messages go through convert_to_llm first. System messages are left out (they belong in the
 * request's system prompt and tool list) and so are `error`/`aborted` assistant messages (no tool
 * ran for them; Pi 1.6 drops them too), with the tool results of their calls. A tool result no
 * call of the view owns (pair_tool_calls: no call, or a second answer) is left out too, so a
 * provider is never sent a result without its call. Thinking blocks are not sent.
 *
 * - `openai`: `user` (string or text/image_url parts), `assistant` (`content` text or null,
 *   `tool_calls` with JSON-string `arguments`), one `tool` message per result.
 * - `anthropic`: strictly alternating `user`/`assistant` turns; tool results become
 *   `tool_result` blocks at the head of the next user turn; empty text blocks are dropped.
 *
 * Summaries are framed as reference history (the overload below takes summary_framing::pi for
 * Pi's text).
 *
 * Pass session::context() or fit_request()'s messages: there every call has a result.
 */
boost::json::array to_wire_messages(wire_format f, std::span<const compaction::context_message> context);

struct native_replay;

/**
 * @brief As above, with a native compaction sent back in place of its summary.
 *
 * When `native` is an Anthropic state and `context` holds the summary message of its compaction
 * entry, that message becomes the provider's own block, unchanged: `[assistant: [compaction
 * block]]` followed by the kept messages. Otherwise (no state, an OpenAI state, which only the
 * Responses API takes) the portable summary is sent, as without it. `framing`: how a portable
 * summary is introduced: reference history by default; Pi's text only when asked for
 * (summary_framing::pi, or summary_framing_for(compat_mode::pi)), as Pi-facing callers do.
 */
boost::json::array to_wire_messages(
    wire_format f,
    std::span<const compaction::context_message> context,
    const native_replay* native,
    compaction::summary_framing framing = compaction::summary_framing::reference_history
);

/**
 * @brief The `input` items of an OpenAI Responses request for `context`.
 *
 * `user` messages (`input_text` / `input_image` parts), assistant text as `message` items with
 * `output_text`, tool calls as `function_call`, results as `function_call_output`. With an
 * OpenAI `native` state whose compaction summary is in `context`, the stored compact `output`
 * items replace that summary message, unchanged.
 */
boost::json::array to_responses_input(
    std::span<const compaction::context_message> context,
    const native_replay* native = nullptr,
    compaction::summary_framing framing = compaction::summary_framing::reference_history
);

/// The `context_management` of a Responses request that compacts inline once its input passes
/// `threshold` tokens: `[{"type": "compaction", "compact_threshold": N}]` (N > 0; else without
/// the threshold, the provider's default). For a session whose summarizer uses OpenAI inline
/// compaction (summarizer_capabilities::inline_compaction); the loop sends it with the input of
/// to_responses_input.
boost::json::array inline_context_management(std::int64_t threshold);

/// The last input item of a Responses request that must compact now: `{"type": "compaction_trigger"}`
/// (a manual `/compact`, a background preparation).
boost::json::object compaction_trigger_item();

/// The framing of a session in `mode`: Pi's plain preamble in Pi mode, reference history otherwise.
constexpr compaction::summary_framing summary_framing_for(compaction::compat_mode mode)
{
    return mode == compaction::compat_mode::pi ? compaction::summary_framing::pi
                                               : compaction::summary_framing::reference_history;
}

}  // namespace agentctx::providers
