// The complete-response parsers of both wire formats (parse_response), the error classifier and
// the Retry-After reader on the same bytes. Invariants: no crash, no sanitizer report, no
// exception; a failure is malformed_response with a message.
#include "fuzz_check.hpp"

#include <agentctx/providers/retry_after.hpp>
#include "wire_format.hpp"

#include <cstdint>
#include <string_view>

namespace pv = agentctx::providers;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string_view body(reinterpret_cast<const char*>(data), size);
    for (const auto f : {pv::wire_format::openai, pv::wire_format::anthropic})
    {
        pv::diagnostics diag;
        const auto r = pv::parse_response(f, body, diag);
        if (!r)
        {
            FUZZ_CHECK(
                r.error() == pv::errc::malformed_response,
                "parse_response failed with %s",
                r.error().message().c_str()
            );
            FUZZ_CHECK(!diag.message.empty(), "a parse failure without a message");
        }
    }
    for (const long status : {0L, 400L, 429L, 500L})
    {
        pv::diagnostics diag;
        const auto ec = pv::classify_error(status, body, diag);
        FUZZ_CHECK(ec.failed() && !diag.message.empty(), "classify_error gave no error or no message");
    }
    // A header value is short; the same bytes serve (a fixed clock keeps the run reproducible).
    if (size <= 256)
    {
        const auto now = std::chrono::system_clock::time_point(std::chrono::seconds(1'780'000'000));
        if (const auto d = pv::parse_retry_after(body, now))
            FUZZ_CHECK(
                d->count() >= 0 && *d <= std::chrono::seconds(1'000'000'000), "Retry-After out of range"
            );
    }
    return 0;
}
