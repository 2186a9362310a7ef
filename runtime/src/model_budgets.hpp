// The session's resolved settings and model budgets: the serving model, a pending change, the thresholds.
#pragma once

#include <agentctx/compaction/session_log.hpp>
#include <agentctx/runtime/session.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace agentctx::runtime::detail {

/**
 * @brief The only owner of the session's configuration as given and as in use.
 *
 * The budgets in use (window, output cap, reserveTokens, keepRecentTokens) are one model's: the
 * configured one, then the model of the latest known `model_change`. In agentctx mode a change
 * waits as `pending()` until the next automatic check decides whether to compact first with the
 * previous budgets (model_downshift.hpp); Pi 1.6 only re-reads the model's overrides. Everything
 * else asks this part for the threshold and the budgets. On the strand, except serving() (any
 * thread) and given() (immutable).
 */
class model_budgets
{
public:
    explicit model_budgets(session_config given);

    /// The configuration as the host gave it (session::config()).
    const session_config& given() const noexcept { return given_; }
    /// The configuration in use: the given one with the budgets of the model in use.
    const session_config& config() const noexcept { return in_use_; }
    const compaction::compaction_settings& settings() const noexcept { return in_use_.settings; }
    /// The model whose budgets are in use (the previous one while a change is pending).
    const model_identity& model() const noexcept { return in_use_.model; }
    compaction::compat_mode compat() const noexcept { return in_use_.compat; }
    const compaction::token_counter& counter() const;

    /// The automatic threshold: `contextWindow − reserveTokens`, or the lower working budget.
    std::int64_t threshold() const noexcept;
    /// What a compaction keeps unsummarized at the end of the context (keepRecentTokens).
    std::int64_t keep_recent() const noexcept { return in_use_.settings.keep_recent_tokens; }
    /// `contextWindow − reserveTokens`: what a request may carry (meaningless for an unknown window).
    std::int64_t window_allowance() const noexcept
    {
        return in_use_.model.context_window - in_use_.settings.reserve_tokens;
    }
    /// The limit that started a compaction of `reason`: the threshold for an automatic one, else
    /// `contextWindow − reserveTokens` (0 for an unknown window).
    std::int64_t allowance(compaction_reason reason) const noexcept;

    /// The model the session serves; from any thread.
    model_identity serving() const { return *serving_.load(std::memory_order_acquire); }
    /// async_change_model made `m` known (its window is the newer word on that model).
    void learn(model_identity m);
    /// The model `provider`/`model_id` names among the known ones.
    std::optional<model_identity> known(const std::string& provider, const std::string& model_id) const;
    /// A `model_change` entry joined the log: a known model is served; in agentctx mode its
    /// budgets wait for the next automatic check. False: not a known model (nothing changes).
    bool changed(const compaction::entry& e);
    /// At open and after a reload: the latest known `model_change` on `log`'s active path is
    /// served, with its budgets at once (unless our own change still waits for its check).
    void follow_path(const compaction::session_log& log);

    /// A served model whose budgets are not in use yet.
    const std::optional<model_identity>& pending() const noexcept { return pending_; }
    /// The pending model's settings (its overrides over the given settings).
    compaction::compaction_settings pending_settings() const;
    /// The pending model's budgets come into use.
    void adopt_pending();

private:
    void use_budgets_of(model_identity m);
    void use_overrides_of(const model_identity& m);

    const session_config given_;
    session_config in_use_;
    std::atomic<std::shared_ptr<const model_identity>> serving_;
    std::vector<model_identity> learned_;  ///< models async_change_model made known
    std::optional<model_identity> pending_;
};

}  // namespace agentctx::runtime::detail
