// Model budgets: which model's window and settings are in use, and how a model change reaches them.
#include "model_budgets.hpp"

#include "model_downshift.hpp"

#include <agentctx/compaction/working_budget.hpp>

#include <algorithm>

namespace agentctx::runtime::detail {

using namespace compaction;

model_budgets::model_budgets(session_config given)
    : given_(std::move(given)), in_use_(given_),
      serving_(std::make_shared<const model_identity>(given_.model))
{}

const token_counter& model_budgets::counter() const
{
    return in_use_.counter ? *in_use_.counter : default_token_counter();
}

std::int64_t model_budgets::threshold() const noexcept
{
    return automatic_threshold(in_use_.model.context_window, in_use_.settings, in_use_.compat);
}

std::int64_t model_budgets::allowance(compaction_reason reason) const noexcept
{
    const auto window = in_use_.model.context_window;
    const bool automatic = reason == compaction_reason::threshold || reason == compaction_reason::background;
    return window <= 0 ? 0 : automatic ? threshold() : window_allowance();
}

void model_budgets::learn(model_identity m)
{
    std::erase_if(learned_, [&m](const model_identity& k) {
        return k.provider == m.provider && k.model_id == m.model_id;
    });
    learned_.push_back(std::move(m));
}

std::optional<model_identity> model_budgets::known(const std::string& provider, const std::string& model_id)
    const
{
    auto same = [&](const model_identity& k) { return k.provider == provider && k.model_id == model_id; };
    // A window given to async_change_model is the newer word on that model.
    for (auto it = learned_.rbegin(); it != learned_.rend(); ++it)
        if (same(*it))
            return *it;
    for (const auto& k : in_use_.models)
        if (same(k))
            return k;
    if (same(given_.model))
        return given_.model;
    return std::nullopt;
}

bool model_budgets::changed(const entry& e)
{
    auto m = known(e.provider, e.model_id);
    if (!m)
        return false;
    serving_.store(std::make_shared<const model_identity>(*m), std::memory_order_release);
    if (in_use_.compat == compat_mode::pi)
    {
        use_overrides_of(*m);  // Pi 1.6 never downshifts
        return true;
    }
    // The budgets in use stay the previous model's until the next check decides; a second
    // change before it keeps the model the context was built for as the previous one.
    const auto& now = in_use_.model;
    const bool back =
        m->provider == now.provider && m->model_id == now.model_id && m->context_window == now.context_window;
    if (back)
        pending_.reset();
    else
        pending_ = std::move(*m);
    return true;
}

void model_budgets::follow_path(const session_log& log)
{
    std::optional<model_identity> found;
    const auto path = log.active_path();
    for (std::size_t k = path.size(); k-- > 0 && !found;)
    {
        const auto& meta = log.meta(path[k]);
        if (meta.type == entry_type::model_change)
            found = known(meta.provider, meta.model);
    }
    const model_identity serving = found ? *found : given_.model;
    serving_.store(std::make_shared<const model_identity>(serving), std::memory_order_release);
    const bool still_pending =
        pending_ && pending_->provider == serving.provider && pending_->model_id == serving.model_id;
    if (in_use_.compat == compat_mode::pi)
        return use_overrides_of(serving);
    if (still_pending)
        return;  // a change of ours waiting for its check (a reload after a stale append) still waits
    pending_.reset();
    use_budgets_of(serving);
}

compaction_settings model_budgets::pending_settings() const
{
    return settings_for(*pending_, given_.settings);
}

void model_budgets::adopt_pending()
{
    use_budgets_of(std::move(*pending_));
    pending_.reset();
}

// From now on the thresholds and budgets are `m`'s: its window and output cap, and its own
// reserveTokens and keepRecentTokens over the settings as given.
void model_budgets::use_budgets_of(model_identity m)
{
    in_use_.settings = settings_for(m, given_.settings);
    in_use_.model = std::move(m);
}

// Pi 1.6 resolves compaction.modelOverrides for the serving model at every check; the window
// stays the configured model's in `--compat pi`.
void model_budgets::use_overrides_of(const model_identity& m)
{
    in_use_.settings = settings_for(m, given_.settings);
}

}  // namespace agentctx::runtime::detail
