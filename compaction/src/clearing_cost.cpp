// price_clearing: the rewrite a clearing's cache break costs against the reads it has saved.
#include <agentctx/compaction/clearing_cost.hpp>

#include <algorithm>
#include <map>
#include <string>

namespace agentctx::compaction {

namespace {

// Requests that read the tool result at `at` while it was clearable: the assistant messages after
// the `keep`-th newer tool result (each one is the answer to a request that carried it).
std::int64_t clearable_reads(std::span<const context_message> ctx, std::size_t at, std::int64_t keep)
{
    std::size_t from = at;
    for (std::int64_t newer = 0; newer < keep && from < ctx.size();)
        if (++from < ctx.size() && ctx[from].msg->role == role::tool_result)
            ++newer;
    std::int64_t reads = 0;
    for (std::size_t i = from + 1; i < ctx.size(); ++i)
        reads += ctx[i].msg->role == role::assistant ? 1 : 0;
    return reads;
}

}  // namespace

clearing_cost price_clearing(
    std::span<const context_message> ctx,
    const clearing_plan& plan,
    std::int64_t keep,
    const price_table& prices,
    const token_counter* counter
)
{
    clearing_cost cost;
    if (plan.edits.empty())
        return cost;
    const token_counter& count = counter ? *counter : default_token_counter();
    std::map<std::string, const clearing_edit*> edits;
    for (const auto& e : plan.edits)
        edits.emplace(e.target_id, &e);
    std::size_t first = ctx.size();
    for (std::size_t i = 0; i < ctx.size(); ++i)
    {
        const auto e = edits.find(ctx[i].entry_id);
        if (e == edits.end())
            continue;
        first = std::min(first, i);
        if (!e->second->input)
            cost.reads_paid += static_cast<double>(e->second->tokens) *
                               static_cast<double>(clearable_reads(ctx, i, std::max<std::int64_t>(keep, 0)));
    }
    // Messages after the last assistant message were never sent: the next request writes them
    // whether or not anything is cleared, so only the sent part of the tail is rewritten.
    std::size_t sent = ctx.size();
    while (sent > first && ctx[sent - 1].msg->role != role::assistant)
        --sent;
    std::int64_t tail = 0;
    for (std::size_t i = first; i < sent; ++i)
        tail += static_cast<std::int64_t>(count.count(*ctx[i].msg));
    cost.tail_tokens = std::max<std::int64_t>(tail - plan.tokens, 0);
    cost.reads_paid *= prices.read_multiplier;
    cost.rewrite = static_cast<double>(cost.tail_tokens) *
                   std::max(prices.write_multiplier - prices.read_multiplier, 0.0);
    return cost;
}

}  // namespace agentctx::compaction
