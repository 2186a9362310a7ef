// Provider-native compaction and exact input counting: requests and strict response checks.
#pragma once

#include <agentctx/compaction/message.hpp>
#include <agentctx/compaction/projection.hpp>
#include <agentctx/compaction/summary_prompt.hpp>
#include <agentctx/providers/error.hpp>
#include <agentctx/providers/http_client.hpp>
#include <agentctx/providers/provider_types.hpp>

#include "wire_format.hpp"

#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace agentctx::providers {

/// `POST {base}/v1/messages` with `anthropic-beta: compact-2026-01-12` and the
/// `compact_20260112` edit (`pause_after_compaction: true`), or, when the configuration says the
/// model takes it (`provider_config::compaction_parameter`), the on-demand
/// `compaction: {"type": "summarize", "instructions"?}` parameter instead of the edit;
/// or `POST {base}/responses/compact`.
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
compaction::result<native_reply> parse_native_response(
    wire_format f, std::string_view body, const std::string& model, diagnostics& diag
);

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
/// Exact input counting for a native compaction request: what build_native_request sends, as
/// Anthropic `count_tokens` (system, tools, tool_choice, thinking, messages) or OpenAI
/// `responses/input_tokens` (input, instructions).
http_request build_native_count_request(const provider_config& cfg, const native_request& req);
/// `malformed_response` unless the body is the documented shape with a non-negative integer.
compaction::result<std::int64_t> parse_count_response(
    wire_format f, std::string_view body, diagnostics& diag
);

/// Anthropic `GET {base}/v1/models/{model}`.
http_request build_model_request(const provider_config& cfg, const std::string& model);
/// Whether `capabilities.context_management.compact_20260112.supported` is true (absent = false).
compaction::result<bool> parse_model_compaction_support(std::string_view body, diagnostics& diag);

}  // namespace agentctx::providers
