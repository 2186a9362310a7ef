// Provider-native compaction and exact input counting: requests, strict response checks, kept state.
#pragma once

#include <agentctx/compaction/message.hpp>
#include <agentctx/compaction/projection.hpp>
#include <agentctx/compaction/summary_prompt.hpp>
#include <agentctx/providers/error.hpp>
#include <agentctx/providers/http_client.hpp>
#include <agentctx/providers/wire_format.hpp>

#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace agentctx::providers {

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
    std::string system;                        ///< the loop's current instructions
    std::optional<std::string> instructions;   ///< Anthropic: replaces the default summary prompt
    std::string model;                         ///< the loop's model; empty = the configured model
    std::int64_t trigger_tokens = anthropic_min_compaction_trigger;
    std::uint32_t max_output_tokens = 0;       ///< 0 = 4096 (the edit pauses before any reply)
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

/// `POST {base}/v1/messages` with `anthropic-beta: compact-2026-01-12` and the
/// `compact_20260112` edit (`pause_after_compaction: true`), or `POST {base}/responses/compact`.
http_request build_native_request(const provider_config& cfg, const native_request& req);

/**
 * @brief Validates a native compaction response body (Anthropic non-streamed, or OpenAI).
 *
 * Anthropic: exactly one `compaction` block, whose `content` is a non-empty string (null means the
 * compaction failed) and whose `encrypted_content` is a string or null. OpenAI: `output` is user
 * messages followed by exactly one `compaction` item with a non-empty `encrypted_content`.
 * Anything else is `native_invalid`, the reason in `diag.message` (no body text); a body that is
 * not JSON is `malformed_response`.
 */
compaction::result<native_reply> parse_native_response(wire_format f, std::string_view body, const std::string& model,
                                                       diagnostics& diag);

/// The usage a native compaction response reports, valid or not (billed either way); zero when
/// the body is not JSON or has none.
compaction::usage native_response_usage(wire_format f, std::string_view body);

/// Anthropic's streamed compaction: `content_block_start` (type `compaction`), one
/// `content_block_delta` of type `compaction_delta`, `content_block_stop`, `message_delta`.
class native_stream_accumulator
{
public:
    void feed(std::string_view chunk);
    /// The events as the equivalent complete body (then checked by parse_native_response).
    std::string body() const;
    bool complete() const noexcept { return complete_; }
    bool failed() const noexcept { return error_.has_value(); }
    boost::system::error_code error() const noexcept { return error_.value_or(boost::system::error_code{}); }
    const diagnostics& error_detail() const noexcept { return error_diag_; }

private:
    void on_event(const sse_parser::event& e);
    sse_parser parser_;
    boost::json::object message_;
    boost::json::array content_;
    bool complete_ = false;
    std::optional<boost::system::error_code> error_;
    diagnostics error_diag_;
};

/// Exact input counting for a summary request: Anthropic `POST {base}/v1/messages/count_tokens`
/// (`{"input_tokens": N}`) or OpenAI `POST {base}/responses/input_tokens`
/// (`{"object": "response.input_tokens", "input_tokens": N}`).
http_request build_count_request(const provider_config& cfg, const compaction::summary_prompt& prompt);
/// `malformed_response` unless the body is the documented shape with a non-negative integer.
compaction::result<std::int64_t> parse_count_response(wire_format f, std::string_view body, diagnostics& diag);

/// Anthropic `GET {base}/v1/models/{model}`.
http_request build_model_request(const provider_config& cfg, const std::string& model);
/// Whether `capabilities.context_management.compact_20260112.supported` is true (absent = false).
compaction::result<bool> parse_model_compaction_support(std::string_view body, diagnostics& diag);

}  // namespace agentctx::providers
