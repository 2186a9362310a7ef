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

}  // namespace

void session_core::change_model_impl(model_identity m, asio::any_completion_handler<append_signature> h)
{
    asio::post(strand_, [self = shared_from_this(), m = std::move(m), h = std::move(h)]() mutable {
        session_core& s = *self;
        if (s.closed())
            return complete(std::move(h), s.strand(), make_error_code(errc::session_closed), std::string());
        // Known from now on, so the entry's adoption resolves to this window.
        boost::json::object fields{
            {"type", "model_change"}, {"provider", m.provider}, {"modelId", m.model_id}};
        s.budgets().learn(std::move(m));
        s.append_in_turn(std::move(fields), std::move(h));
    });
}

bool session_core::downshift_first(
    asio::any_completion_handler<outcome_signature>& h, const std::shared_ptr<caller>& c
)
{
    const auto& pending = budgets_.pending();
    if (!pending || closed())
        return false;
    // A foreground compaction runs: this check reports it, the change waits for the next one.
    if (callers_.coordinator().running() && !callers_.coordinator().background_running())
        return false;
    const auto tokens = current()->context_tokens();
    const auto next_settings = budgets_.pending_settings();
    const auto action =
        config().settings.enabled
            ? decide_downshift({config().model, *pending, tokens, &next_settings, config().compat})
            : downshift_action::none;
    if (action == downshift_action::none)
    {
        budgets_.adopt_pending();
        return false;
    }
    logger().info(
        "model change {} -> {}: the context ({} tokens) exceeds the new threshold; compacting for {} first",
        name_of(config().model),
        name_of(*pending),
        tokens,
        name_of(config().model)
    );
    auto then = [self = shared_from_this(), h = std::move(h)](error_code ec, compaction_outcome out) mutable {
        self->after_downshift(ec, std::move(out), std::move(h));
    };
    // config().model is still the previous model: the summary request is sized for its window.
    start(compaction_reason::model_change, std::nullopt, false, std::move(then), c);
    return true;
}

void session_core::after_downshift(
    error_code ec, compaction_outcome out, asio::any_completion_handler<outcome_signature> h
)
{
    // A failed or cancelled compaction leaves the change pending: the next check tries again.
    if (ec || closed() || !budgets_.pending())
        return complete(std::move(h), strand_, ec, std::move(out));
    budgets_.adopt_pending();
    const auto tokens = current()->context_tokens();
    if (fits_window(config().model, tokens, config().settings))
        return complete(std::move(h), strand_, ec, std::move(out));
    const auto allowance = budgets_.window_allowance();
    emit(budget_exceeded_event{
        .reason = compaction_reason::model_change,
        .input_tokens = tokens,
        .allowance = allowance,
    });
    out.message = "after compacting for the model change, the context (" + std::to_string(tokens) +
                  " tokens) still exceeds " + name_of(config().model) + "'s window: contextWindow " +
                  std::to_string(config().model.context_window) + " - reserveTokens " +
                  std::to_string(config().settings.reserve_tokens) + " = " + std::to_string(allowance) +
                  " tokens";
    logger().warn("{}", out.message);
    complete(std::move(h), strand_, make_error_code(errc::model_window_exceeded), std::move(out));
}

}  // namespace agentctx::runtime::detail
