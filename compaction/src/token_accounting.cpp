// Usage-anchored context token counts, the strict threshold, and the footer's usage report.
#include <agentctx/compaction/settings.hpp>
#include <agentctx/compaction/token_accounting.hpp>
#include <agentctx/compaction/token_estimate.hpp>

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
    return u.total_tokens ? u.total_tokens : u.input + u.output + u.cache_read + u.cache_write;
}

bool has_usage(const message& m) noexcept
{
    return m.role == role::assistant && m.usage && m.stop_reason != stop_reason::aborted &&
           m.stop_reason != stop_reason::error;
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
    est.tokens = est.usage_tokens + est.trailing_tokens;
    return est;
}

std::optional<double> latest_compaction_time(const session_context& ctx) noexcept
{
    if (!ctx.messages.empty() && ctx.messages.front().msg->role == role::compaction_summary)
        return ctx.messages.front().msg->timestamp;
    return std::nullopt;
}

bool should_compact(std::int64_t context_tokens, std::int64_t context_window, const compaction_settings& s) noexcept
{
    return s.enabled && context_tokens > context_window - s.reserve_tokens;
}

std::optional<context_usage_report> context_usage(
    const session_context& ctx,
    std::int64_t context_window,
    const token_counter& counter
)
{
    if (context_window <= 0)
        return std::nullopt;
    context_usage_report r;
    r.context_window = context_window;
    const auto compacted_at = latest_compaction_time(ctx);
    if (compacted_at)
    {
        bool fresh = false;
        for (auto it = ctx.messages.rbegin(); it != ctx.messages.rend() && !fresh; ++it)
        {
            const message& m = *it->msg;
            fresh = has_usage(m) && m.timestamp > *compacted_at && calculate_context_tokens(*m.usage) > 0;
        }
        if (!fresh)
            return r;  // unknown until the model reports usage for the compacted context
    }
    r.tokens = estimate_context_tokens(ctx.messages, counter).tokens;
    r.percent = static_cast<double>(*r.tokens) / static_cast<double>(context_window) * 100.0;
    return r;
}

}  // namespace agentctx::compaction
