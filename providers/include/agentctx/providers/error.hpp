// Error codes of the providers module: a stable classification of every model-call failure.
#pragma once

#include <boost/system/error_code.hpp>

#include <string>
#include <type_traits>

namespace agentctx::providers {

enum class errc
{
    context_overflow = 1,  ///< the prompt does not fit the model's window (never retried)
    rate_limited,          ///< 429 / rate-limit errors (retried with backoff, Retry-After honoured)
    transient,             ///< 5xx, overloaded, connection reset, timeouts (retried)
    auth,                  ///< 401 / 403: bad or missing API key
    invalid_request,       ///< other 4xx
    truncated,             ///< the model stopped at its output cap (stop reason `length`)
    malformed_response,    ///< the body is not the expected JSON / event stream
    cancelled,             ///< unused since cancellation completes with `operation_aborted`; kept
                           ///< for stable values; equals `agentctx::errc_condition::cancelled`
    not_configured,        ///< provider, model or key missing
    response_too_large,    ///< the response (headers + decoded body) exceeded its size cap
    native_invalid,        ///< a native compaction response without exactly one valid compaction item
    not_supported,         ///< the provider or model does not offer this capability
    invalid_wire_message,  ///< provider-format input (messages, items, usage) that cannot become Pi messages
};

const boost::system::error_category& error_category() noexcept;
const char* to_string(errc e) noexcept;

inline boost::system::error_code make_error_code(errc e) noexcept
{
    return {static_cast<int>(e), error_category()};
}

/// Provider detail for a failure: safe to log and to show (HTTP status, the API's error type
/// and code, attempts). Never a raw body, a header value or a key.
struct diagnostics
{
    long http_status = 0;
    std::string error_type;  ///< e.g. `rate_limit_error`, `context_length_exceeded`
    std::string message;     ///< our sentence, with the API's own message only when classified safe
    int attempts = 0;
};

}  // namespace agentctx::providers

template <>
struct boost::system::is_error_code_enum<agentctx::providers::errc> : std::true_type
{};
