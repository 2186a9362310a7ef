// A strict, sans-io parser for the HTTP `Retry-After` field: delay-seconds or an HTTP-date.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

namespace agentctx::providers {

/**
 * @brief `Retry-After` as a delay: `delay-seconds` (1*DIGIT) or an `HTTP-date` (IMF-fixdate, or
 * the obsolete RFC 850 and asctime forms) relative to `now`; a date in the past is 0.
 *
 * Anything else (empty, a sign, a fraction, trailing junk, an invalid date) is nullopt: the
 * caller then uses its own backoff. Huge values saturate at 10^9 s (~31.7 years) instead of overflowing:
 * still a valid timer duration, and the caller compares it with its maximum wait first.
 */
std::optional<std::chrono::milliseconds> parse_retry_after(
    std::string_view value, std::chrono::system_clock::time_point now = std::chrono::system_clock::now()
);

}  // namespace agentctx::providers
