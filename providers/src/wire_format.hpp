// OpenAI Chat Completions and Anthropic Messages: requests, responses, event streams, errors.
#pragma once

#include <agentctx/compaction/summary.hpp>
#include <agentctx/compaction/summary_prompt.hpp>
#include <agentctx/providers/error.hpp>
#include <agentctx/providers/http_client.hpp>
#include <agentctx/providers/provider_config.hpp>
#include <agentctx/providers/retry_after.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace agentctx::providers {

/// A normalized model answer.
struct model_reply
{
    compaction::summary_output output;  ///< text (reasoning excluded), stop reason, tool calls, usage
    compaction::usage usage;            ///< input excludes cache reads; totalTokens as reported or summed
    std::string model;
};

/// The HTTP request for a summary prompt in the configured wire format. A standalone request
/// writes no prompt-cache entries (Pi 1.6 `cacheRetention: "none"`): no `cache_control`
/// (Anthropic), no `prompt_cache_key` (OpenAI). A cache-friendly one (`prompt.head`) starts with
/// the conversation's system prompt, tools and messages, then `prompt.prompt` as one user message:
/// Anthropic `cache_control` breakpoints on the system prompt, the tool list and the last
/// conversation block (at most 4 in all); OpenAI the conversation's `prompt_cache_key`. Anthropic requests
/// carry `metadata.user_id` = the prompt's routing_id, else a fresh new_routing_id() per request; Chat
/// Completions has no such field.
http_request build_request(const provider_config& cfg, const compaction::summary_prompt& prompt);

/// A fresh UUID v7 (RFC 9562: 48-bit Unix ms, version 7, random bits), lowercase.
std::string new_routing_id();

/// What every auxiliary call (summary, count, native compaction) adds to its body: with
/// `cfg.auto_continue` (the provider advertises `completion:auto_continue:v1`),
/// `auto_continue: false`, so the provider never continues a summary by itself.
void add_auxiliary_call_fields(const provider_config& cfg, boost::json::object& body);

/// A request without a read deadline (non-streamed: the answer arrives whole when it is done;
/// TCP keep-alive finds a dead peer) or, for a stream, with the configured idle timeout.
void set_read_deadline(const provider_config& cfg, bool streamed, http_request& r);

/// Parses a complete (non-streaming) response body; `malformed_response` when it is not one.
/// Tool calls (`tool_calls` / `tool_use` blocks) are counted in `output.tool_calls`.
compaction::result<model_reply> parse_response(wire_format f, std::string_view body, diagnostics& diag);

/// Server-sent events, fed in chunks of any size; linear in the bytes fed (the newline search
/// resumes where the previous chunk's search stopped).
class sse_parser
{
public:
    struct event
    {
        std::string name;
        std::string data;
    };
    /// Appends `chunk`; returns the events it completed.
    std::vector<event> feed(std::string_view chunk);

private:
    std::string buffer_, name_, data_;
    std::size_t scanned_ = 0;  ///< buffer_[0, scanned_) holds no newline
};

/// Accumulates a streamed reply. `failed()` after an error event (classified like an HTTP error).
class stream_accumulator
{
public:
    explicit stream_accumulator(wire_format f) : format_(f) {}
    void feed(std::string_view chunk);
    bool failed() const noexcept { return error_.has_value(); }
    boost::system::error_code error() const noexcept { return error_.value_or(boost::system::error_code{}); }
    const diagnostics& error_detail() const noexcept { return error_diag_; }
    /// True once the stream said it finished ([DONE] / message_stop / a finish reason).
    bool complete() const noexcept { return complete_; }
    std::size_t received_chars() const noexcept { return reply_.output.text.size(); }
    model_reply reply() const
    {
        model_reply r = reply_;
        r.output.usage = r.usage;
        return r;
    }

private:
    void on_event(const sse_parser::event& e);
    wire_format format_;
    sse_parser parser_;
    model_reply reply_;
    bool complete_ = false;
    std::optional<boost::system::error_code> error_;
    diagnostics error_diag_;
};

/// Classifies a failed HTTP response (status >= 400 or an error body): context_overflow (spec
/// overflow patterns and API codes such as `context_length_exceeded`), rate_limited, transient,
/// auth, invalid_request. Fills `diag` with the status and the API's error type; the message
/// holds no body text beyond the API's error type/code.
boost::system::error_code classify_error(long status, std::string_view body, diagnostics& diag);

/// Backoff before retry `attempt` (1-based): base·2^(attempt-1) with ±25% jitter, capped.
std::chrono::milliseconds backoff_delay(const provider_config& cfg, int attempt, std::uint64_t jitter_seed);

}  // namespace agentctx::providers
