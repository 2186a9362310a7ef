// Whether a tool-result clearing pays for the prompt-cache break it causes.
#pragma once

#include <agentctx/compaction/cost_model.hpp>
#include <agentctx/compaction/projection.hpp>
#include <agentctx/compaction/token_accounting.hpp>
#include <agentctx/compaction/tool_clearing.hpp>

#include <cstdint>
#include <span>

namespace agentctx::compaction {

/// The cache arithmetic of one clearing plan, in input-token units.
struct clearing_cost
{
    /// Tokens from the first edited message to the last assistant message, as they are after the
    /// edits: what the next request writes to the cache again instead of reading it. Messages
    /// after the last assistant message were never sent (the next request writes them anyway).
    std::int64_t tail_tokens = 0;
    /// What the cleared results already cost while they were clearable: for each, its freed
    /// tokens × the requests that read it since `keep` newer tool uses existed × the read price.
    double reads_paid = 0;
    /// What the break costs: `tail_tokens × (write − read)`.
    double rewrite = 0;
    bool pays() const noexcept { return reads_paid >= rewrite; }
};

/**
 * @brief Prices a clearing plan against the prompt cache (a rent-or-buy rule).
 *
 * An edit at a tool result breaks the cached prefix there, so the request after it writes the
 * whole tail again; not clearing costs the read of each clearable result on every request. A
 * clearing is worth doing once what the clearable results have already cost in reads reaches the
 * cost of the rewrite: a large result falling out of the kept window clears soon, a tail holding
 * large kept results waits. `context` is the projected context the plan was made on.
 */
clearing_cost price_clearing(
    std::span<const context_message> context,
    const clearing_plan& plan,
    std::int64_t keep,
    const price_table& prices,
    const token_counter* counter = nullptr
);

}  // namespace agentctx::compaction
