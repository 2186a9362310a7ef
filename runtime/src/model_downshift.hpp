// Model downshift: whether a model change to a smaller window must compact first, with the previous model's
// budgets.
#pragma once

#include <agentctx/compaction/cut_point.hpp>
#include <agentctx/compaction/settings.hpp>
#include <agentctx/runtime/session.hpp>

#include <cstdint>

namespace agentctx::runtime::detail {

enum class downshift_action
{
    none,                   ///< the context fits the new model's threshold (or it is no downshift)
    compact_with_previous,  ///< compact now, sized for the previous model, before the request
};

/// The previous model's window, the new one's, and the context as it stands.
struct downshift_input
{
    model_identity previous;  ///< the model whose budgets the session used until the change
    model_identity next;      ///< the model the host switched to (context_window 0 = unknown)
    std::int64_t context_tokens = 0;
    const compaction::compaction_settings* settings = nullptr;  ///< required: the new model's (settings_for)
    compaction::compat_mode compat = compaction::compat_mode::agentctx;
};

/**
 * @brief The pre-request decision after a model change, with no I/O. A downshift is a change to a
 * smaller window whose automatic threshold (compaction::automatic_threshold: `contextWindow −
 * reserveTokens`, or agentctx's lower working budget) the context exceeds: the next request
 * would not fit, and a summary request sized for the new window may not fit it either, so the
 * session compacts with the previous model's budgets first. `--compat pi` never downshifts
 * (Pi 1.6 does not); neither does a change to an unknown window, an equal or larger one, or a
 * context at or under the new threshold.
 */
downshift_action decide_downshift(const downshift_input& in) noexcept;

/// `base` with `model`'s own reserveTokens and keepRecentTokens (its `modelOverrides`), if any.
compaction::compaction_settings settings_for(
    const model_identity& model, compaction::compaction_settings base
);

/// Whether `tokens` fit `model`'s window with the settings' reserve: `tokens ≤ contextWindow −
/// reserveTokens` (true for an unknown window).
bool fits_window(
    const model_identity& model, std::int64_t tokens, const compaction::compaction_settings& s
) noexcept;

}  // namespace agentctx::runtime::detail
