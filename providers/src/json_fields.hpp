// JSON field readers shared by the wire formats: counts that never throw, strings, Anthropic usage.
#pragma once

#include <agentctx/compaction/message.hpp>
#include "wire_format.hpp"

#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

namespace agentctx::providers::detail {

namespace json = boost::json;

// A token count as reported. `to_number` threw on a fraction or an out-of-range number (found by
// fuzz_response): a fraction is truncated and a huge value clamps, as a count never throws.
inline std::int64_t int_of(const json::object& o, std::string_view key)
{
    const auto* v = o.if_contains(key);
    if (!v || !v->is_number())
        return 0;
    constexpr auto max = std::numeric_limits<std::int64_t>::max();
    if (v->is_int64())
        return v->get_int64();
    if (v->is_uint64())
        return static_cast<std::int64_t>(std::min<std::uint64_t>(v->get_uint64(), max));
    const double d = v->get_double();
    if (std::isnan(d))
        return 0;
    if (d >= 9.2e18)
        return max;
    if (d <= -9.2e18)
        return std::numeric_limits<std::int64_t>::min();
    return static_cast<std::int64_t>(d);
}

// Sums and differences of reported counts saturate instead of overflowing (found by fuzz_response).
inline std::int64_t sat_add(std::int64_t a, std::int64_t b)
{
    std::int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return b > 0 ? std::numeric_limits<std::int64_t>::max() : std::numeric_limits<std::int64_t>::min();
    return r;
}

inline std::int64_t sat_sub(std::int64_t a, std::int64_t b)
{
    std::int64_t r;
    if (__builtin_sub_overflow(a, b, &r))
        return b < 0 ? std::numeric_limits<std::int64_t>::max() : std::numeric_limits<std::int64_t>::min();
    return r;
}

inline std::string str_of(const json::object& o, std::string_view key)
{
    const auto* v = o.if_contains(key);
    return v && v->is_string() ? std::string(v->get_string()) : std::string();
}

/// OpenAI's usage object, Chat Completions (`prompt_tokens`, `prompt_tokens_details`,
/// `completion_tokens`) or Responses (`input_tokens`, `input_tokens_details`, `output_tokens`)
/// spelling: input excludes the cached tokens, which are cache reads; a missing total is summed.
inline compaction::usage openai_style_usage(
    const json::object& u,
    std::string_view input_key,
    std::string_view details_key,
    std::string_view output_key
)
{
    compaction::usage out;
    const std::int64_t in = int_of(u, input_key);
    std::int64_t cached = 0;
    if (const auto* d = u.if_contains(details_key); d && d->is_object())
        cached = int_of(d->get_object(), "cached_tokens");
    out.input = sat_sub(in, cached);
    out.cache_read = cached;
    out.output = int_of(u, output_key);
    out.total_tokens = int_of(u, "total_tokens");
    if (!out.total_tokens)
        out.total_tokens = sat_add(in, out.output);
    return out;
}

/// Chat Completions usage (`prompt_tokens`, `prompt_tokens_details.cached_tokens`, `completion_tokens`).
inline compaction::usage chat_completions_usage(const json::object& u)
{
    return openai_style_usage(u, "prompt_tokens", "prompt_tokens_details", "completion_tokens");
}

/// Responses usage (`input_tokens`, `input_tokens_details.cached_tokens`, `output_tokens`).
inline compaction::usage responses_usage(const json::object& u)
{
    return openai_style_usage(u, "input_tokens", "input_tokens_details", "output_tokens");
}

/// Chat Completions `finish_reason` as Pi's stop reason (unknown values: `stop`).
inline compaction::stop_reason openai_stop(std::string_view finish)
{
    using compaction::stop_reason;
    if (finish == "stop")
        return stop_reason::stop;
    if (finish == "length")
        return stop_reason::length;
    if (finish == "tool_calls" || finish == "function_call")
        return stop_reason::tool_use;
    if (finish == "content_filter")
        return stop_reason::error;
    return stop_reason::stop;
}

/// Anthropic `stop_reason` as Pi's stop reason (end_turn, stop_sequence, pause_turn and unknown
/// values: `stop`).
inline compaction::stop_reason anthropic_stop(std::string_view reason)
{
    using compaction::stop_reason;
    if (reason == "max_tokens" || reason == "model_context_window_exceeded")
        return stop_reason::length;
    if (reason == "tool_use")
        return stop_reason::tool_use;
    if (reason == "refusal")
        return stop_reason::error;
    return stop_reason::stop;
}

inline void anthropic_usage(const json::object& u, compaction::usage& out)
{
    if (u.contains("input_tokens"))
        out.input = int_of(u, "input_tokens");
    if (u.contains("cache_read_input_tokens"))
        out.cache_read = int_of(u, "cache_read_input_tokens");
    if (u.contains("cache_creation_input_tokens"))
        out.cache_write = int_of(u, "cache_creation_input_tokens");
    if (u.contains("output_tokens"))
        out.output = int_of(u, "output_tokens");
    out.total_tokens = sat_add(sat_add(out.input, out.output), sat_add(out.cache_read, out.cache_write));
}

/// One event of a stream as a JSON object. An event that is not JSON (`malformed_response`) or
/// an error event (classified like an HTTP error) sets `error` and `diag` and gives nullopt.
inline std::optional<json::object> event_object(
    const sse_parser::event& e, std::optional<boost::system::error_code>& error, diagnostics& diag
)
{
    boost::system::error_code ec;
    auto v = json::parse(e.data, ec);
    if (ec || !v.is_object())
    {
        error = make_error_code(errc::malformed_response);
        diag.message = "an event of the stream is not JSON";
        return std::nullopt;
    }
    if (v.get_object().contains("error") || e.name == "error")
    {
        error = classify_error(0, e.data, diag);
        return std::nullopt;
    }
    return std::move(v.get_object());
}

}  // namespace agentctx::providers::detail
