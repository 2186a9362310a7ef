// Prices, the prompt-cache model, summary timing and stall statistics (what simulate bills).
#include <agentctx/compaction/cost_model.hpp>

#include "json/field_reader.hpp"

#include <algorithm>
#include <cmath>

namespace agentctx::compaction {

std::optional<price_table> builtin_price_table(std::string_view name)
{
    if (name == "anthropic")
        return price_table{"anthropic", 3.00, 15.00, 1.25, 0.1, 300, 1024};
    if (name == "anthropic-1h")
        return price_table{"anthropic-1h", 3.00, 15.00, 2.0, 0.1, 3600, 1024};
    if (name == "openai")
        return price_table{"openai", 1.25, 10.00, 1.0, 0.1, 300, 1024};
    return std::nullopt;
}

result<price_table> parse_price_table(const boost::json::value& v, diagnostics& diag)
{
    if (!v.is_object())
    {
        diag.message = "a price table must be a JSON object";
        return errc::invalid_settings;
    }
    detail::field_reader r(v.get_object(), "", diag);
    price_table p;
    p.name = r.opt_string("name").value_or("custom");
    auto non_negative = [&](std::string_view key) {
        const double x = r.req_number(key);
        if (!r.failed() && (x < 0 || !std::isfinite(x)))
            r.fail(errc::invalid_settings, key, "must be a non-negative number");
        return x;
    };
    p.input_price = non_negative("inputPrice");
    p.output_price = non_negative("outputPrice");
    p.write_multiplier = non_negative("writeMultiplier");
    p.read_multiplier = non_negative("readMultiplier");
    p.ttl_seconds = non_negative("ttl");
    p.min_prefix = static_cast<std::int64_t>(non_negative("minPrefix"));
    if (r.failed())
        return r.code() == errc::invalid_settings ? r.code() : errc::invalid_settings;
    return p;
}

namespace {

// Tokens of the identical whole messages two requests begin with.
std::int64_t shared_prefix(std::span<const request_part> a, std::span<const request_part> b)
{
    std::int64_t tokens = 0;
    for (std::size_t i = 0; i < a.size() && i < b.size() && a[i] == b[i]; ++i)
        tokens += a[i].tokens;
    return tokens;
}

std::int64_t total_tokens(std::span<const request_part> parts)
{
    std::int64_t n = 0;
    for (const auto& p : parts)
        n += p.tokens;
    return n;
}

}  // namespace

cache_billing prompt_cache::request(double t, std::span<const request_part> parts, bool caching)
{
    const std::int64_t n = total_tokens(parts);
    std::int64_t best = 0;
    for (const auto& c : cached_)
        if (c.expires > t)
            best = std::max(best, shared_prefix(parts, c.parts));
    if (best < prices_.min_prefix)
        best = 0;
    cache_billing b;
    b.read = best;
    if (!caching)
    {
        b.uncached = n - best;
        return b;
    }
    b.written = n - best;
    const double expires = t + prices_.ttl_seconds;
    for (auto& c : cached_)
        if (best > 0 && c.expires > t && shared_prefix(parts, c.parts) == best)
            c.expires = expires;
    std::erase_if(cached_, [t](const cached_prefix& c) { return c.expires <= t; });
    cached_.push_back({{parts.begin(), parts.end()}, expires});
    return b;
}

double timing_model::duration(const cache_billing& input, std::int64_t output_tokens) const noexcept
{
    return overhead_seconds +
           static_cast<double>(input.uncached + input.written) / prefill_tokens_per_second +
           static_cast<double>(input.read) / prefill_cached_tokens_per_second +
           static_cast<double>(output_tokens) / decode_tokens_per_second;
}

stall_stats summarize_stalls(std::vector<double> stalls)
{
    stall_stats s;
    if (stalls.empty())
        return s;
    std::sort(stalls.begin(), stalls.end());
    for (const double x : stalls)
        s.total += x;
    auto rank = [&](double q) {
        const auto k = static_cast<std::size_t>(std::ceil(q * static_cast<double>(stalls.size())));
        return stalls[std::max<std::size_t>(k, 1) - 1];
    };
    s.p50 = rank(0.5);
    s.p95 = rank(0.95);
    s.max = stalls.back();
    return s;
}

void policy_cost::bill(const price_table& p, const cache_billing& in, std::int64_t output, bool summary)
{
    input.uncached += in.uncached;
    input.written += in.written;
    input.read += in.read;
    const double billed = in.billed(p);
    billed_input += billed;
    cost += (billed * p.input_price + static_cast<double>(output) * p.output_price) / 1e6;
    if (summary)
    {
        ++summary_requests;
        summary_output += output;
        summarizer_input_tokens += in.total();
        return;
    }
    ++requests;
    agent_output += output;
    peak_context = std::max(peak_context, in.total());
    context_sum += in.total();
}

void policy_cost::add(const policy_cost& o)
{
    requests += o.requests;
    input.uncached += o.input.uncached;
    input.written += o.input.written;
    input.read += o.input.read;
    billed_input += o.billed_input;
    agent_output += o.agent_output;
    summary_output += o.summary_output;
    cost += o.cost;
    compactions += o.compactions;
    summary_requests += o.summary_requests;
    clearing_batches += o.clearing_batches;
    clearing_tokens += o.clearing_tokens;
    peak_context = std::max(peak_context, o.peak_context);
    context_sum += o.context_sum;
    summarizer_input_tokens += o.summarizer_input_tokens;
    reasoning_lost += o.reasoning_lost;
    stalls.insert(stalls.end(), o.stalls.begin(), o.stalls.end());
}

boost::json::object policy_cost::to_json() const
{
    const auto st = summarize_stalls(stalls);
    const double mean = requests ? static_cast<double>(context_sum) / static_cast<double>(requests) : 0.0;
    return {
        {"requests", requests},
        {"input",
         {{"uncached", input.uncached},
          {"written", input.written},
          {"read", input.read},
          {"billed", billed_input}}},
        {"output", {{"agent", agent_output}, {"summaries", summary_output}}},
        {"cost", cost},
        {"compactions", compactions},
        {"summaryRequests", summary_requests},
        {"clearing", {{"batches", clearing_batches}, {"tokens", clearing_tokens}}},
        {"context", {{"peak", peak_context}, {"mean", mean}}},
        {"summarizerInputTokens", summarizer_input_tokens},
        {"reasoningLost", reasoning_lost},
        {"stall", {{"totalSeconds", st.total}, {"p50", st.p50}, {"p95", st.p95}, {"max", st.max}}}};
}

}  // namespace agentctx::compaction
