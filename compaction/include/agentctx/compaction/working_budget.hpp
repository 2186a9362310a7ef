// The automatic compaction threshold: the window's allowance, or a lower working budget in agentctx mode.
#pragma once

#include <agentctx/compaction/cut_point.hpp>
#include <agentctx/compaction/settings.hpp>

#include <cstdint>

namespace agentctx::compaction {

/// agentctx mode's working budget when the settings name none: chosen from `agentctx simulate
/// --sweep workingBudget=...` over long generated sessions (docs/cost.md).
inline constexpr std::int64_t default_working_budget = 60000;

/// `contextWindow − reserveTokens`; in agentctx mode `compaction.workingBudget` (tokens, or a
/// fraction of the window; default 60,000 tokens; 0 = off) when it is positive and lower.
/// `--compat pi` ignores the budget.
inline std::int64_t automatic_threshold(
    std::int64_t context_window, const compaction_settings& s, compat_mode mode
) noexcept
{
    const std::int64_t allowance = context_window - s.reserve_tokens;
    if (mode == compat_mode::pi)
        return allowance;
    const std::int64_t budget =
        s.working_budget ? s.working_budget->of(context_window) : default_working_budget;
    return budget > 0 && budget < allowance ? budget : allowance;
}

}  // namespace agentctx::compaction
