// The provider data types that summarizers and sessions share: the wire format and native compaction's state,
// request and reply.
#pragma once

#include <agentctx/compaction/message.hpp>
#include <agentctx/compaction/projection.hpp>
#include <agentctx/providers/error.hpp>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace agentctx::providers {

enum class wire_format
{
    openai,     ///< POST {base}/chat/completions (OpenAI, vLLM, llama.cpp server, Ollama /v1)
    anthropic,  ///< POST {base}/v1/messages
};

/// Anthropic's documented minimum for the compaction edit's `trigger.value` (input tokens).
inline constexpr std::int64_t anthropic_min_compaction_trigger = 50000;
/// The beta header value that enables Anthropic's compaction edit.
inline constexpr std::string_view anthropic_compaction_beta = "compact-2026-01-12";

/**
 * @brief A native compaction exactly as the provider returned it, kept verbatim and sent back.
 *
 * - `anthropic`: `item` is the one `{"type":"compaction","content":…,"encrypted_content":…}` block.
 * - `openai`: `item` is the whole `output` array of `POST /responses/compact` (user messages,
 *   then exactly one `{"type":"compaction","encrypted_content":…}` item).
 *
 * In a compaction entry it is `details.agentctx.native`:
 * `{"provider": "anthropic"|"openai", "model": …, "block": {…}}` or `{…, "output": […]}`.
 */
struct native_state
{
    wire_format format = wire_format::anthropic;
    std::string model;
    boost::json::value item;
    friend bool operator==(const native_state&, const native_state&) = default;
};

boost::json::object to_json(const native_state& s);

/// Strict revalidation of a stored state (on load, before it is replayed or sent again):
/// `native_invalid` with the reason in `diag.message` when it is not exactly one of the shapes above.
compaction::result<native_state> parse_native_state(const boost::json::value& v, diagnostics& diag);

/// A stored native state and the compaction entry whose summary it stands for in request views.
struct native_replay
{
    native_state state;
    std::string entry_id;
};

/// One native compaction request: the complete eligible window, never split.
struct native_request
{
    /// The window as projected (a previous compaction's summary message first, when there is one).
    std::vector<compaction::context_message> window;
    /// The previous compaction's native state: sent back in place of its summary message.
    std::optional<native_replay> previous;
    std::string system;  ///< the loop's current instructions
    /// The loop's own request configuration, sent as the loop sends it (Anthropic): its tool
    /// definitions (a window with `tool_use` blocks is refused without them), its `tool_choice`
    /// (null = none) and its other request parameters (`thinking`, `temperature`, ...; never
    /// `model`, `messages`, `system`, `max_tokens`, `stream`, which the request sets itself).
    /// OpenAI's `/responses/compact` takes none of them.
    boost::json::array tools;
    boost::json::value tool_choice;
    boost::json::object parameters;
    std::optional<std::string> instructions;  ///< Anthropic: replaces the default summary prompt
    std::string model;                        ///< the loop's model; empty = the configured model
    std::int64_t trigger_tokens = anthropic_min_compaction_trigger;
    /// OpenAI inline compaction: `context_management[0].compact_threshold`, the session's
    /// threshold; 0 = left out (the provider's default).
    std::int64_t compact_threshold = 0;
    std::uint32_t max_output_tokens = 0;  ///< 0 = 4096 (the edit pauses before any reply)
};

/// What a valid native compaction returned.
struct native_reply
{
    native_state state;
    std::optional<std::string> readable;  ///< Anthropic: the block's `content`; OpenAI: none (opaque)
    compaction::usage usage;              ///< the compaction pass included (Anthropic `iterations`);
                                          ///< also with `native_invalid`: a rejected reply is billed
    std::string failure_detail;           ///< with an error: the safe account of it
};

}  // namespace agentctx::providers
