// The automatic compaction threshold: the window's allowance, or a lower working budget in agentctx mode.
#pragma once

#include <agentctx/compaction/cut_point.hpp>
#include <agentctx/compaction/settings.hpp>

#include <cstdint>

namespace agentctx::compaction {

/// `contextWindow − reserveTokens`; in agentctx mode `compaction.workingBudget` (tokens, or a
/// fraction of the window) when it is positive and lower. `--compat pi` ignores the budget.
inline std::int64_t automatic_threshold(std::int64_t context_window, const compaction_settings& s, compat_mode mode) noexcept
{
    const std::int64_t allowance = context_window - s.reserve_tokens;
    if (mode == compat_mode::pi || !s.working_budget)
        return allowance;
    const std::int64_t budget = s.working_budget->of(context_window);
    return budget > 0 && budget < allowance ? budget : allowance;
}

}  // namespace agentctx::compaction
