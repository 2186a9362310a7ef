// Model downshift: the pure decision whether a model change must compact first.
#include "model_downshift.hpp"

#include <agentctx/compaction/working_budget.hpp>

namespace agentctx::runtime::detail {

downshift_action decide_downshift(const downshift_input& in) noexcept
{
    if (in.compat == compaction::compat_mode::pi || !in.settings)
        return downshift_action::none;
    const auto before = in.previous.context_window;
    const auto after = in.next.context_window;
    if (after <= 0 || before <= 0 || after >= before)
        return downshift_action::none;  // unknown, or no smaller: the ordinary threshold applies
    const auto threshold = compaction::automatic_threshold(after, *in.settings, in.compat);
    return in.context_tokens > threshold ? downshift_action::compact_with_previous : downshift_action::none;
}

compaction::compaction_settings settings_for(
    const model_identity& model, compaction::compaction_settings base
)
{
    base.reserve_tokens = model.reserve_tokens.value_or(base.reserve_tokens);
    base.keep_recent_tokens = model.keep_recent_tokens.value_or(base.keep_recent_tokens);
    return base;
}

bool fits_window(
    const model_identity& model, std::int64_t tokens, const compaction::compaction_settings& s
) noexcept
{
    return model.context_window <= 0 || tokens <= model.context_window - s.reserve_tokens;
}

}  // namespace agentctx::runtime::detail
