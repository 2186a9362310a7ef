// Model changes on the session: the serving model, and the downshift compaction before the next request.
#include "compaction_coordinator.hpp"
#include "model_downshift.hpp"
#include "session_core.hpp"

#include <agentctx/compaction/working_budget.hpp>
#include <agentctx/runtime/error.hpp>

#include <boost/asio/append.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/post.hpp>

#include <spdlog/spdlog.h>

namespace agentctx::runtime::detail {

namespace asio = boost::asio;
using boost::system::error_code;
using namespace compaction;

namespace {

// Completes a handler on the strand, never inline.
template <class Signature, class... Args>
void complete(
    asio::any_completion_handler<Signature> h, const asio::strand<asio::any_io_executor>& strand, Args... args
)
{
    asio::get_associated_cancellation_slot(h).clear();
    asio::post(strand, asio::append(std::move(h), std::move(args)...));
}

std::string name_of(const model_identity& m)
{
    return m.provider + "/" + m.model_id;
}

// From now on the session's thresholds and budgets are `m`'s: its window and output cap, and
// its own reserveTokens and keepRecentTokens over the settings as given.
void use_budgets_of(session_core& s, model_identity m)
{
    s.config_.settings = settings_for(m, s.given_config_.settings);
    s.config_.model = std::move(m);
}

// Pi 1.6 resolves compaction.modelOverrides for the serving model at every check; the window
// stays the configured model's in `--compat pi`.
void use_overrides_of(session_core& s, const model_identity& m)
{
    s.config_.settings = settings_for(m, s.given_config_.settings);
}

}  // namespace

void session_core::change_model_impl(model_identity m, asio::any_completion_handler<append_signature> h)
{
    asio::post(strand_, [self = shared_from_this(), m = std::move(m), h = std::move(h)]() mutable {
        session_core& s = *self;
        if (s.closed_)
            return complete(std::move(h), s.strand_, make_error_code(errc::session_closed), std::string());
        // Known from now on, so the entry's adoption (model_changed) resolves to this window.
        std::erase_if(s.changed_to_, [&m](const model_identity& k) {
            return k.provider == m.provider && k.model_id == m.model_id;
        });
        boost::json::object fields{
            {"type", "model_change"}, {"provider", m.provider}, {"modelId", m.model_id}};
        s.changed_to_.push_back(std::move(m));
        s.append_in_turn(std::move(fields), std::move(h));
    });
}

std::optional<model_identity> session_core::known_model(
    const std::string& provider, const std::string& model_id
) const
{
    auto same = [&](const model_identity& k) { return k.provider == provider && k.model_id == model_id; };
    // A window given to async_change_model is the newer word on that model.
    for (auto it = changed_to_.rbegin(); it != changed_to_.rend(); ++it)
        if (same(*it))
            return *it;
    for (const auto& k : config_.models)
        if (same(k))
            return k;
    if (same(given_config_.model))
        return given_config_.model;
    return std::nullopt;
}

void session_core::model_changed(const entry& e)
{
    auto m = known_model(e.provider, e.model_id);
    if (!m)
    {
        logger_->debug(
            "model_change to {}/{}: not a known model, the serving model stays", e.provider, e.model_id
        );
        return;
    }
    serving_.store(std::make_shared<const model_identity>(*m), std::memory_order_release);
    if (config_.compat == compat_mode::pi)
        return use_overrides_of(*this, *m);  // Pi 1.6 never downshifts
    // The budgets in use (config_.model) stay the previous model's until the next check decides;
    // a second change before it keeps the model the context was built for as the previous one.
    const bool back = m->provider == config_.model.provider && m->model_id == config_.model.model_id &&
                      m->context_window == config_.model.context_window;
    if (back)
        pending_model_.reset();
    else
        pending_model_ = std::move(*m);
}

void session_core::follow_path_model()
{
    std::optional<model_identity> found;
    const auto path = log_.active_path();
    for (std::size_t k = path.size(); k-- > 0 && !found;)
    {
        const auto& meta = log_.meta(path[k]);
        if (meta.type == entry_type::model_change)
            found = known_model(meta.provider, meta.model);
    }
    const model_identity serving = found ? *found : given_config_.model;
    serving_.store(std::make_shared<const model_identity>(serving), std::memory_order_release);
    const bool still_pending = pending_model_ && pending_model_->provider == serving.provider &&
                               pending_model_->model_id == serving.model_id;
    if (config_.compat == compat_mode::pi)
        return use_overrides_of(*this, serving);
    if (still_pending)
        return;  // a change of ours waiting for its check (a reload after a stale append) still waits
    pending_model_.reset();
    use_budgets_of(*this, serving);
}

bool session_core::downshift_first(
    asio::any_completion_handler<outcome_signature>& h, const std::shared_ptr<caller>& c
)
{
    if (!pending_model_ || closed_)
        return false;
    // A foreground compaction runs: this check reports it, the change waits for the next one.
    if (coordinator_->running() && !coordinator_->background_running())
        return false;
    const auto tokens = current()->context_tokens();
    const auto next_settings = settings_for(*pending_model_, given_config_.settings);
    const auto action =
        config_.settings.enabled
            ? decide_downshift({config_.model, *pending_model_, tokens, &next_settings, config_.compat})
            : downshift_action::none;
    if (action == downshift_action::none)
    {
        use_budgets_of(*this, std::move(*pending_model_));
        pending_model_.reset();
        return false;
    }
    logger_->info(
        "model change {} -> {}: the context ({} tokens) exceeds the new threshold; compacting for {} first",
        name_of(config_.model),
        name_of(*pending_model_),
        tokens,
        name_of(config_.model)
    );
    auto then = [self = shared_from_this(), h = std::move(h)](error_code ec, compaction_outcome out) mutable {
        self->after_downshift(ec, std::move(out), std::move(h));
    };
    // config_.model is still the previous model: the summary request is sized for its window.
    start(compaction_reason::model_change, std::nullopt, false, std::move(then), c);
    return true;
}

void session_core::after_downshift(
    error_code ec, compaction_outcome out, asio::any_completion_handler<outcome_signature> h
)
{
    // A failed or cancelled compaction leaves the change pending: the next check tries again.
    if (ec || closed_ || !pending_model_)
        return complete(std::move(h), strand_, ec, std::move(out));
    use_budgets_of(*this, std::move(*pending_model_));
    pending_model_.reset();
    const auto tokens = current()->context_tokens();
    if (fits_window(config_.model, tokens, config_.settings))
        return complete(std::move(h), strand_, ec, std::move(out));
    const auto allowance = config_.model.context_window - config_.settings.reserve_tokens;
    emit(budget_exceeded_event{
        .reason = compaction_reason::model_change,
        .input_tokens = tokens,
        .allowance = allowance,
    });
    out.message = "after compacting for the model change, the context (" + std::to_string(tokens) +
                  " tokens) still exceeds " + name_of(config_.model) + "'s window: contextWindow " +
                  std::to_string(config_.model.context_window) + " - reserveTokens " +
                  std::to_string(config_.settings.reserve_tokens) + " = " + std::to_string(allowance) +
                  " tokens";
    logger_->warn("{}", out.message);
    complete(std::move(h), strand_, make_error_code(errc::model_window_exceeded), std::move(out));
}

}  // namespace agentctx::runtime::detail
