// What a request bills and how long a summary takes: prices, the prompt cache, timing and stall statistics.
#pragma once

#include <agentctx/compaction/error.hpp>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace agentctx::compaction {

/// A provider's prices ($ per million tokens) and prompt-cache parameters.
struct price_table
{
    std::string name;
    double input_price = 0;          ///< $ per million uncached input tokens
    double output_price = 0;         ///< $ per million output tokens
    double write_multiplier = 1;     ///< a token written to the cache, in input-token units
    double read_multiplier = 0.1;    ///< a token read from the cache, in input-token units
    double ttl_seconds = 300;        ///< a cached prefix expires this long after it was last written or read
    std::int64_t min_prefix = 1024;  ///< shorter shared prefixes are not read from the cache
};

/// `anthropic` (5-minute cache), `anthropic-1h` (1-hour cache), `openai`; nullopt for another name.
std::optional<price_table> builtin_price_table(std::string_view name);

/// A price table from JSON with the fields of price_table (`inputPrice`, `outputPrice`,
/// `writeMultiplier`, `readMultiplier`, `ttl`, `minPrefix`; `name` optional). Every number is
/// required and non-negative; a failure is `invalid_settings` naming the field.
result<price_table> parse_price_table(const boost::json::value& v, diagnostics& diag);

/// One message of a rendered request: its identity (equal digests = identical content) and size.
struct request_part
{
    std::uint64_t digest = 0;
    std::int64_t tokens = 0;
    bool operator==(const request_part&) const = default;
};

/// What one request's input was billed as.
struct cache_billing
{
    std::int64_t uncached = 0;
    std::int64_t written = 0;
    std::int64_t read = 0;
    std::int64_t total() const noexcept { return uncached + written + read; }
    /// The input bracket in input-token units: uncached + written x write + read x read multiplier.
    double billed(const price_table& p) const noexcept
    {
        return static_cast<double>(uncached) + static_cast<double>(written) * p.write_multiplier +
               static_cast<double>(read) * p.read_multiplier;
    }
};

/**
 * @brief A provider's prompt cache: a set of cached prefixes, each with an expiry time.
 *
 * A request of N tokens at time t reads the longest prefix P that an unexpired cached prefix
 * holds (whole identical messages from the start; below `min_prefix` nothing is read). With
 * caching on it writes N − P and becomes a cached prefix itself, and the prefixes that served P
 * are refreshed to t + ttl; with caching off it reads P, bills N − P uncached and writes nothing.
 */
class prompt_cache
{
public:
    explicit prompt_cache(price_table prices) : prices_(std::move(prices)) {}

    cache_billing request(double t, std::span<const request_part> parts, bool caching);
    const price_table& prices() const noexcept { return prices_; }

private:
    struct cached_prefix
    {
        std::vector<request_part> parts;
        double expires = 0;
    };
    price_table prices_;
    std::vector<cached_prefix> cached_;
};

/// How long a summary request takes: overhead + prefill of what is not read from the cache,
/// prefill of what is, and decoding of the output.
struct timing_model
{
    double overhead_seconds = 0.5;
    double prefill_tokens_per_second = 5000;
    double prefill_cached_tokens_per_second = 50000;
    double decode_tokens_per_second = 60;

    double duration(const cache_billing& input, std::int64_t output_tokens) const noexcept;
};

/// Total, median, 95th percentile (nearest rank) and maximum of the stalls of a run.
struct stall_stats
{
    double total = 0, p50 = 0, p95 = 0, max = 0;
};
stall_stats summarize_stalls(std::vector<double> stalls);

/// Everything a policy costs on one session or summed over several (the fields of the report).
struct policy_cost
{
    std::int64_t requests = 0;
    cache_billing input;
    double billed_input = 0;
    std::int64_t agent_output = 0;
    std::int64_t summary_output = 0;
    double cost = 0;
    std::int64_t compactions = 0;
    std::int64_t summary_requests = 0;
    std::int64_t clearing_batches = 0;
    std::int64_t clearing_tokens = 0;
    std::int64_t peak_context = 0;
    std::int64_t context_sum = 0;  ///< over the agent's requests (the mean's numerator)
    std::int64_t summarizer_input_tokens = 0;
    /// Recorded thinking blocks a prefix break (a clearing or a compaction) left behind an edit
    /// after they were made: what a provider that binds reasoning withholds from then on.
    std::int64_t reasoning_lost = 0;
    std::vector<double> stalls;  ///< one per foreground compaction, seconds

    /// Bills one request (agent or summary) of `output` tokens.
    void bill(const price_table& p, const cache_billing& in, std::int64_t output, bool summary);
    void add(const policy_cost& other);
    boost::json::object to_json() const;
};

}  // namespace agentctx::compaction
