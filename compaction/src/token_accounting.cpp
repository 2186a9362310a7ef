// Usage-anchored context token counts, the strict threshold, and the footer's usage report.
#include <agentctx/compaction/settings.hpp>
#include <agentctx/compaction/token_accounting.hpp>
#include <agentctx/compaction/token_estimate.hpp>

#include <algorithm>

namespace agentctx::compaction {

std::size_t chars4_counter::count(const message& m) const
{
    return estimate_tokens(m);
}

const token_counter& default_token_counter() noexcept
{
    static const chars4_counter instance;
    return instance;
}

std::int64_t calculate_context_tokens(const usage& u) noexcept
{
    const auto count = [](std::int64_t n) { return std::max<std::int64_t>(n, 0); };
    if (u.total_tokens)
        return count(u.total_tokens);
    return saturating_add(
        saturating_add(count(u.input), count(u.output)),
        saturating_add(count(u.cache_read), count(u.cache_write))
    );
}

bool has_usage(const message& m) noexcept
{
    return m.role == role::assistant && m.usage && m.stop_reason != stop_reason::aborted &&
           m.stop_reason != stop_reason::error && calculate_context_tokens(*m.usage) > 0;
}

context_estimate estimate_context_tokens(
    std::span<const context_message> messages,
    const token_counter& counter,
    std::optional<double> stale_at_or_before_ms
)
{
    context_estimate est;
    for (std::size_t i = messages.size(); i-- > 0;)
    {
        if (has_usage(*messages[i].msg))
        {
            // A stale anchor (older than the latest compaction) counts a context that no longer
            // exists; nothing earlier can be fresher, so fall back to estimating everything.
            if (!stale_at_or_before_ms || messages[i].msg->timestamp > *stale_at_or_before_ms)
                est.last_usage_index = i;
            break;
        }
    }
    const std::size_t from = est.last_usage_index ? *est.last_usage_index + 1 : 0;
    if (est.last_usage_index)
        est.usage_tokens = calculate_context_tokens(*messages[*est.last_usage_index].msg->usage);
    for (std::size_t i = from; i < messages.size(); ++i)
        est.trailing_tokens += static_cast<std::int64_t>(counter.count(*messages[i].msg));
    est.tokens = saturating_add(est.usage_tokens, est.trailing_tokens);
    return est;
}

context_estimate estimate_projected_context_tokens(const session_context& ctx, const token_counter& counter)
{
    context_estimate est = estimate_context_tokens(ctx.messages, counter);
    if (est.last_usage_index)
    {
        // The path index of the entry that holds the anchoring message.
        std::size_t seen = 0;
        std::optional<std::size_t> u;
        for (const auto& p : ctx.entries)
        {
            seen += p.messages.size();
            if (seen > *est.last_usage_index)
            {
                u = p.path_index;
                break;
            }
        }
        if (u && (!ctx.last_edit_or_compaction || *u > *ctx.last_edit_or_compaction))
            return est;
    }
    context_estimate pure;
    if (ctx.system)
        pure.tokens += static_cast<std::int64_t>(counter.count(*ctx.system));
    for (const auto& m : ctx.messages)
        if (m.msg->role != role::system)
            pure.tokens += static_cast<std::int64_t>(counter.count(*m.msg));
    pure.trailing_tokens = pure.tokens;
    return pure;
}

std::optional<double> latest_compaction_time(const session_context& ctx) noexcept
{
    if (!ctx.messages.empty() && ctx.messages.front().msg->role == role::compaction_summary)
        return ctx.messages.front().msg->timestamp;
    return std::nullopt;
}

bool should_compact(
    std::int64_t context_tokens, std::int64_t context_window, const compaction_settings& s
) noexcept
{
    return s.enabled && context_tokens > context_window - s.reserve_tokens;
}

std::optional<context_usage_report> context_usage(
    const session_context& ctx, std::int64_t context_window, const token_counter& counter
)
{
    if (context_window <= 0)
        return std::nullopt;
    context_usage_report r;
    r.context_window = context_window;
    // Pi 1.6: after a compaction the count is unknown until a projected assistant after it
    // reports valid usage.
    if (!ctx.entries.empty() && ctx.entries.front().source->type == entry_type::compaction)
    {
        const std::size_t at = ctx.entries.front().path_index;
        bool fresh = false;
        for (auto it = ctx.entries.rbegin(); it != ctx.entries.rend() && !fresh; ++it)
            if (it->path_index > at)
                for (const auto& m : it->messages)
                    fresh = fresh || has_usage(*m);
        if (!fresh)
            return r;
    }
    r.tokens = estimate_projected_context_tokens(ctx, counter).tokens;
    r.percent = static_cast<double>(*r.tokens) / static_cast<double>(context_window) * 100.0;
    return r;
}

}  // namespace agentctx::compaction
