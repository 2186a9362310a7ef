// The session's core: appends, triggers, writes and the compaction lifecycle on the strand.
#include "session_core.hpp"

#include <agentctx/compaction/cancelled.hpp>
#include <agentctx/compaction/json_text.hpp>
#include <agentctx/compaction/prepare.hpp>
#include <agentctx/compaction/reserved.hpp>
#include <agentctx/compaction/summary.hpp>
#include <agentctx/compaction/working_budget.hpp>
#include <agentctx/runtime/checkpoint.hpp>
#include <agentctx/runtime/error.hpp>
#include <agentctx/runtime/triggers.hpp>

#include "append_check.hpp"
#include "background_policy.hpp"
#include "compaction_coordinator.hpp"
#include "context_edit_check.hpp"
#include "transaction.hpp"

#include <boost/asio/append.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>

namespace agentctx::runtime {

using detail::session_core;
namespace asio = boost::asio;
using boost::system::error_code;
using namespace compaction;

const char* to_string(compaction_reason r) noexcept
{
    switch (r)
    {
    case compaction_reason::threshold:
        return "threshold";
    case compaction_reason::overflow:
        return "overflow";
    case compaction_reason::manual:
        return "manual";
    case compaction_reason::background:
        return "background";
    case compaction_reason::model_change:
        return "model_change";
    }
    return "manual";
}

namespace {

constexpr std::string_view truncated_exhausted_message =
    "Truncated response recovery failed after one compact-and-retry attempt.";
constexpr std::string_view overflow_exhausted_message =
    "Context overflow recovery failed after one compact-and-retry attempt. Try reducing context or "
    "switching to a larger-context model.";

// Completes a handler, never inline: post() runs it through its associated executor.
template <class Signature, class... Args>
void complete(
    asio::any_completion_handler<Signature> h, const asio::strand<asio::any_io_executor>& strand, Args... args
)
{
    asio::get_associated_cancellation_slot(h).clear();
    asio::post(strand, asio::append(std::move(h), std::move(args)...));
}

// Completes a handler from a later handler already on the strand (a store's completion): at once,
// without a second trip through the queue; still never inside the initiating call.
template <class Signature, class... Args>
void complete_from_strand(
    asio::any_completion_handler<Signature> h, const asio::strand<asio::any_io_executor>& strand, Args... args
)
{
    asio::get_associated_cancellation_slot(h).clear();
    asio::dispatch(strand, asio::append(std::move(h), std::move(args)...));
}

bool is_user_or_ok_assistant(const entry& e)
{
    if (e.type != entry_type::message || !e.message)
        return false;
    // Pi 1.6: neither an error nor a length stop resets the once-per-attempt flag.
    return e.message->role == role::user ||
           (e.message->role == role::assistant && e.message->stop_reason != stop_reason::error &&
            e.message->stop_reason != stop_reason::length);
}

}  // namespace

// One caller of a compacting operation. `cancelled` is set by its slot from any thread: a
// cancellation that arrives before the strand has seen the request ("cancel before link").
struct session_core::caller
{
    std::uint64_t id = 0;
    std::atomic<bool> cancelled{false};
};

// ---------------------------------------------------------------------------------------------

session_core::session_core(
    executor_type ex, std::unique_ptr<store> st, session_config config, session_log log
)
    : strand_(asio::make_strand(ex)), store_(std::move(st)), config_(std::move(config)), log_(std::move(log)),
      logger_(config_.logger ? config_.logger : spdlog::default_logger()),
      coordinator_(std::make_unique<detail::compaction_coordinator>()), given_config_(config_)
{}

session_core::~session_core()
{
    if (store_)
        store_->on_remote_change({});
}

const token_counter& session_core::counter() const
{
    return config_.counter ? *config_.counter : default_token_counter();
}

result<void> session_core::start_up(diagnostics& diag)
{
    auto r = redactor::create(config_.redaction, diag);
    if (!r)
        return r.error();
    redactor_ = std::move(*r);
    auto snap = make_snapshot(log_, counter(), diag);
    if (!snap)
        return snap.error();
    publish(std::move(*snap));
    follow_path_model();
    // Stores with a single writer never call it.
    store_->on_remote_change([weak = weak_from_this()](std::size_t stored) {
        // From the store's listener thread: catch up on the strand, in the write turn.
        auto self = weak.lock();
        if (!self)
            return;
        asio::post(self->strand_, [self, stored] {
            auto behind = [self, stored] {
                return stored == std::string::npos || stored > self->log_.size();
            };
            if (self->closed_ || !behind())
                return;
            self->enter_writes([self, behind] {
                if (self->closed_ || !behind())
                    return self->leave_writes();
                self->reload([self](error_code) { self->leave_writes(); });
            });
        });
    });
    return {};
}

void session_core::publish(std::shared_ptr<const snapshot> next, const entry* appended)
{
    // Reminder snapshots replace each other in every view at once, not only at a compaction.
    // An appended entry that is not one cannot replace anything: no walk over the context.
    if (const auto& pins = config_.pins; config_.compat != compat_mode::pi && !pins.snapshot_types.empty())
    {
        const auto added = appended ? message_of_entry(*appended) : nullptr;
        if (!appended || (added && is_reminder_snapshot(pins, *added)))
            if (auto fewer = without_replaced_snapshots(*next, pins, counter()))
                next = std::move(fewer);
    }
    const auto prev = snapshot_.exchange(next, std::memory_order_acq_rel);
    for (const auto& note : next->dropped_derived)
    {
        if (prev && std::find(prev->dropped_derived.begin(), prev->dropped_derived.end(), note) !=
                        prev->dropped_derived.end())
            continue;
        logger_->warn(
            "compaction {}: its {} state is not used: {}", note.compaction_id, note.part, note.reason
        );
        emit(derived_state_dropped_event{note});
    }
}

namespace {

// Calls each of the host's callbacks in order; one that throws is logged and the next still runs.
template <class Callbacks, class Event>
void call_each(const Callbacks& callbacks, const Event& e, spdlog::logger& log, const char* what)
{
    for (const auto& c : callbacks)
    {
        try
        {
            c(e);
        }
        catch (const std::exception& ex)
        {
            log.error("{} threw: {}", what, ex.what());
        }
    }
}

}  // namespace

void session_core::emit(const session_event& e)
{
    // The session measures its own summaries: a background one until it is prepared (its commit
    // comes later), a foreground one that made model calls until it ended.
    if (const auto* p = std::get_if<compaction_prepared_event>(&e))
        growth_.summary_took(static_cast<double>(p->elapsed_ms) / 1000.0);
    else if (const auto* f = std::get_if<compaction_finished_event>(&e);
             f && f->reason != compaction_reason::background && !f->evidence.failure && f->evidence.calls > 0)
        growth_.summary_took(static_cast<double>(f->evidence.elapsed_ms) / 1000.0);
    call_each(listeners_, e, *logger_, "event listener");
}

namespace {

// Awaits each of the host's hooks in order; one that throws is logged and the next still runs.
template <class Hooks, class Event>
asio::awaitable<void> await_each(const Hooks& hooks, const Event& e, spdlog::logger& log, const char* what)
{
    for (const auto& h : hooks)
    {
        try
        {
            co_await h(e);
        }
        catch (const std::exception& ex)
        {
            log.error("{} threw: {}", what, ex.what());
        }
    }
}

}  // namespace

asio::awaitable<void> session_core::run_failed_hooks(const compact_failed_event& e)
{
    co_await await_each(failed_hooks_, e, *logger_, "compact_failed hook");
}

asio::awaitable<void> session_core::run_compacted_hooks(const compacted_event& e)
{
    co_await await_each(compacted_hooks_, e, *logger_, "compacted hook");
}

void session_core::append_impl(
    boost::json::object fields, asio::any_completion_handler<append_signature> h, diagnostics* out
)
{
    asio::post(
        strand_,
        [self = shared_from_this(), fields = std::move(fields), h = std::move(h), out]() mutable {
            if (self->closed_)
                return complete(
                    std::move(h), self->strand_, make_error_code(errc::session_closed), std::string()
                );
            // Entries the runtime writes for itself (progress records) never come from a client.
            diagnostics diag;
            if (auto ok = check_client_entry(fields, diag); !ok)
            {
                self->logger_->debug("append refused: {}", diag.message);
                if (out)
                    *out = diag;
                return complete(std::move(h), self->strand_, ok.error(), std::move(diag.message));
            }
            self->append_in_turn(std::move(fields), std::move(h), out);
        }
    );
}

void session_core::append_in_turn(
    boost::json::object fields, asio::any_completion_handler<append_signature> h, diagnostics* out
)
{
    enter_writes([self = shared_from_this(), fields = std::move(fields), h = std::move(h), out]() mutable {
        self->append_async(std::move(fields), std::move(h), out);
    });
}

result<entry_ptr> session_core::prepare_entry(boost::json::object fields, diagnostics& diag)
{
    // Pi's field order: type, id, parentId, timestamp, then the type's fields.
    boost::json::object raw;
    const auto* type = fields.if_contains("type");
    raw["type"] = type ? *type : boost::json::value(nullptr);
    raw["id"] = log_.new_id();
    if (const auto leaf = log_.leaf_id())
        raw["parentId"] = *leaf;
    else
        raw["parentId"] = nullptr;
    raw["timestamp"] = iso_timestamp_now();
    for (auto& kv : fields)
        if (kv.key() != "type" && kv.key() != "id" && kv.key() != "parentId" && kv.key() != "timestamp")
            raw[kv.key()] = std::move(kv.value());
    if (auto r = detail::check_context_edit(log_, raw, diag); !r)
        return r.error();
    auto decoded = decode_entry(std::move(raw), diag);
    if (!decoded)
        return decoded.error();
    auto e = std::make_shared<const entry>(std::move(*decoded));
    // Validate completely, then write: a rejected entry never reaches the store.
    if (auto r = detail::check_appendable(log_, *e, diag); !r)
        return r.error();
    return entry_ptr(std::move(e));
}

result<void> session_core::adopt_entry(const entry_ptr& e, diagnostics& diag)
{
    const auto previous_leaf = log_.leaf_id();
    if (auto r = log_.append(e, diag); !r)
        return r.error();
    if (e->type == entry_type::context_edit || e->parent_id != previous_leaf)
    {
        // An edit changes an earlier entry's contribution, and an entry off the leaf (a history
        // replacement's new branch) leaves the old path: project again.
        auto snap = make_snapshot(log_, counter(), diag);
        if (!snap)
            return snap.error();
        publish(std::move(*snap));
    }
    else
        publish(extend_snapshot(*current(), *e, counter()), e.get());
    // Pi's format: a user message or a non-error assistant response resets the overflow attempt.
    if (is_user_or_ok_assistant(*e))
        overflow_attempted_ = false;
    if (e->type == entry_type::model_change)
        model_changed(*e);
    return {};
}

void session_core::leave_writes()
{
    if (write_queue_.empty())
    {
        writing_ = false;
        return;
    }
    // The turn passes to the next writer (writing_ stays set), on a fresh strand handler.
    auto next = std::move(write_queue_.front());
    write_queue_.pop_front();
    asio::post(strand_, std::move(next));
}

void session_core::append_async(
    boost::json::object fields, asio::any_completion_handler<append_signature> h, diagnostics* out
)
{
    diagnostics diag;
    auto e = closed_ ? result<entry_ptr>(make_error_code(errc::session_closed))
                     : prepare_entry(std::move(fields), diag);
    if (!e)
    {
        leave_writes();
        if (out)
            *out = diag;
        // The refusal's reason (field path and why) is the string a failed append completes with.
        return complete(std::move(h), strand_, e.error(), std::move(diag.message));
    }
    store_->async_write(
        strand_,
        *e,
        log_.size(),
        [self = shared_from_this(), e = *e, h = std::move(h), out](
            error_code ec, std::string message
        ) mutable {
            session_core& s = *self;
            diagnostics diag;
            if (!ec)
            {
                auto r = s.adopt_entry(e, diag);
                ec = r ? error_code{} : r.error();
                message = diag.message;
            }
            if (ec && out)
                out->message = message;
            if (ec != make_error_code(errc::stale_leaf))
            {
                if (ec)
                    s.logger_->warn("append failed: {}", message);
                s.leave_writes();
                return complete_from_strand(std::move(h), s.strand_, ec, ec ? std::string() : e->id);
            }
            // Another node appended first: catch up, then let the caller retry.
            s.reload([self, h = std::move(h)](error_code) mutable {
                self->leave_writes();
                complete(std::move(h), self->strand_, make_error_code(errc::stale_leaf), std::string());
            });
        }
    );
}

void session_core::reload(asio::any_completion_handler<void_signature> h)
{
    store_->async_reload(
        strand_,
        [self = shared_from_this(), h = std::move(h)](error_code ec, std::string text) mutable {
            session_core& s = *self;
            if (ec)
            {
                s.logger_->warn("reloading the session failed: {}", text);
                return std::move(h)(ec);
            }
            if (text.empty())
                return std::move(h)(error_code{});  // a single writer: nothing can be new
            diagnostics diag;
            load_report report;
            auto log = session_log::load(std::move(text), s.config_.load, report, diag);
            auto snap = log ? make_snapshot(*log, s.counter(), diag)
                            : result<std::shared_ptr<const snapshot>>(log.error());
            if (!snap)
            {
                s.logger_->warn("the stored session does not load: {}", diag.message);
                return std::move(h)(snap.error());
            }
            const std::size_t before = s.log_.size();
            if (log->size() <= before)
                return std::move(h)(error_code{});
            remote_change_event changed{log->size(), {}};
            for (std::size_t i = before; i < log->size(); ++i)
                if (log->meta(i).type == entry_type::compaction)
                    changed.compactions.push_back(log->meta(i).id);
            s.log_ = std::move(*log);
            s.publish(std::move(*snap));
            s.follow_path_model();
            s.suppression_.reset();  // another node's history: what failed here may not fail there
            s.emit(changed);
            std::move(h)(error_code{});
        }
    );
}

void session_core::refresh_impl(asio::any_completion_handler<void_signature> h)
{
    asio::post(strand_, [self = shared_from_this(), h = std::move(h)]() mutable {
        session_core& s = *self;
        if (s.closed_)
            return complete(std::move(h), s.strand_, make_error_code(errc::session_closed));
        s.enter_writes([self, h = std::move(h)]() mutable {
            self->reload([self, h = std::move(h)](error_code ec) mutable {
                self->leave_writes();
                complete(std::move(h), self->strand_, ec);
            });
        });
    });
}

void session_core::append_all(
    std::vector<boost::json::object> fields, asio::any_completion_handler<void_signature> h
)
{
    if (fields.empty())
        return complete(std::move(h), strand_, error_code{});
    auto first = std::move(fields.front());
    fields.erase(fields.begin());
    enter_writes([self = shared_from_this(),
                  first = std::move(first),
                  rest = std::move(fields),
                  h = std::move(h)]() mutable {
        self->append_async(
            std::move(first),
            [self, rest = std::move(rest), h = std::move(h)](error_code ec, std::string) mutable {
                if (ec)
                    return complete(std::move(h), self->strand_, ec);
                self->append_all(std::move(rest), std::move(h));
            }
        );
    });
}

void session_core::branch_impl(std::string id, asio::any_completion_handler<void_signature> h)
{
    asio::post(strand_, [self = shared_from_this(), id = std::move(id), h = std::move(h)]() mutable {
        session_core& s = *self;
        diagnostics diag;
        if (s.closed_)
            return complete(std::move(h), s.strand_, make_error_code(errc::session_closed));
        const auto before = s.log_.leaf();
        if (auto r = s.log_.branch(id, diag); !r)
            return complete(std::move(h), s.strand_, r.error());
        auto snap = make_snapshot(s.log_, s.counter(), diag);
        if (!snap)
        {
            if (before)
                (void)s.log_.branch(s.log_.meta(*before).id, diag);
            return complete(std::move(h), s.strand_, snap.error());
        }
        s.publish(std::move(*snap));
        complete(std::move(h), s.strand_, error_code{});
    });
}

void session_core::request_view_impl(
    request_budget budget, asio::any_completion_handler<request_view_signature> h
)
{
    asio::post(strand_, [self = shared_from_this(), budget = std::move(budget), h = std::move(h)]() mutable {
        session_core& s = *self;
        if (s.closed_)
            return complete(std::move(h), s.strand_, make_error_code(errc::session_closed), fit_result{});
        // The session's required entries hold the view as they hold a compaction's cut.
        auto host = std::move(budget.required);
        budget.required = [&s, &host](const context_message& m) {
            if (host && host(m))
                return true;
            if (s.config_.required.empty() || m.entry_id.empty())
                return false;
            diagnostics ignored;
            const auto i = s.log_.find(m.entry_id);
            auto e = i ? s.log_.get(*i, ignored) : result<entry_ptr>(compaction::errc::entry_not_found);
            return e && s.config_.required.requires_entry(**e);
        };
        session_context ctx;
        ctx.messages = s.current()->messages.to_vector();
        auto view = fit_request(ctx, budget, s.counter());
        budget.required = nullptr;  // it refers to `host`, which ends here
        if (view.shortfall)
            s.emit(budget_exceeded_event{
                .reason = compaction_reason::threshold,
                .input_tokens = view.shortfall->input_tokens,
                .allowance = view.tokens.available_for_messages,
                .required_tokens = view.shortfall->required_tokens,
                .boundary_entry_id = view.shortfall->boundary_entry_id,
                .required_entry_id = view.shortfall->required_entry_id,
                .boundary_position = view.shortfall->boundary_position,
                .required_position = view.shortfall->required_position,
                .request_view = true,
            });
        complete(std::move(h), s.strand_, error_code{}, std::move(view));
    });
}

std::shared_ptr<session_core::caller> session_core::hook_cancellation(
    asio::any_completion_handler<outcome_signature>& h
)
{
    auto c = std::make_shared<caller>();
    c->id = next_caller_++;
    auto slot = asio::get_associated_cancellation_slot(h);
    if (slot.is_connected())
        slot.assign([c, weak = weak_from_this(), strand = strand_](asio::cancellation_type t) {
            if (!detail::honours(t))
                return;
            c->cancelled = true;
            asio::post(strand, [id = c->id, weak, t] {
                if (auto self = weak.lock())
                    self->apply(self->coordinator_->cancel(id, t));
            });
        });
    return c;
}

void session_core::check_impl(message m, bool skip_aborted, asio::any_completion_handler<outcome_signature> h)
{
    auto c = hook_cancellation(h);
    asio::post(
        strand_,
        [self = shared_from_this(), m = std::move(m), skip_aborted, h = std::move(h), c]() mutable {
            self->evaluate(m, skip_aborted, std::move(h), c);
        }
    );
}

void session_core::before_prompt_impl(asio::any_completion_handler<outcome_signature> h)
{
    last_assistant_check_impl(false, std::move(h));
}

void session_core::last_assistant_check_impl(
    bool skip_aborted, asio::any_completion_handler<outcome_signature> h
)
{
    auto c = hook_cancellation(h);
    asio::post(strand_, [self = shared_from_this(), skip_aborted, h = std::move(h), c]() mutable {
        if (!self->closed_ && self->downshift_first(h, c))
            return;
        const auto last = self->current()->last_assistant();
        if (!last)
            return complete(
                std::move(h),
                self->strand_,
                error_code{},
                compaction_outcome{.message = "no assistant message yet"}
            );
        self->evaluate(*last, skip_aborted, std::move(h), c);
    });
}

void session_core::recover_overflow_impl(std::string error, asio::any_completion_handler<outcome_signature> h)
{
    auto c = hook_cancellation(h);
    asio::post(strand_, [self = shared_from_this(), error = std::move(error), h = std::move(h), c]() mutable {
        if (!is_overflow_error_message(error))
            return complete(
                std::move(h),
                self->strand_,
                make_error_code(errc::not_overflow),
                compaction_outcome{.message = "the error is not a context overflow"}
            );
        message m;
        m.role = role::assistant;
        m.role_name = "assistant";
        m.stop_reason = stop_reason::error;
        m.error_message = error;
        m.provider = self->config_.model.provider;
        m.model = self->config_.model.model_id;
        m.timestamp = static_cast<double>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                              std::chrono::system_clock::now().time_since_epoch()
        )
                                              .count());
        // The failed call is reported now, so it follows the latest compaction even when both
        // fall in the same millisecond (a message not newer than it is not checked).
        if (const auto at = self->current()->compacted_at; at && m.timestamp <= *at)
            m.timestamp = *at + 1;
        self->evaluate(m, true, std::move(h), c);
    });
}

void session_core::evaluate(
    const message& m,
    bool skip_aborted,
    asio::any_completion_handler<outcome_signature> h,
    const std::shared_ptr<caller>& c
)
{
    auto none = [&](std::string why) {
        complete(std::move(h), strand_, error_code{}, compaction_outcome{.message = std::move(why)});
    };
    if (closed_)
        return complete(std::move(h), strand_, make_error_code(errc::session_closed), compaction_outcome{});
    if (downshift_first(h, c))
        return;
    if (!config_.settings.enabled)
        return none("automatic compaction is disabled");
    if (skip_aborted && m.stop_reason == stop_reason::aborted)
        return none("the response was aborted");
    const auto window = config_.model.context_window;
    const bool same_model = m.provider == config_.model.provider && m.model == config_.model.model_id;
    const auto snap = current();
    if (snap->compacted_at && m.timestamp <= *snap->compacted_at)
        return none("the message predates the latest compaction");
    // A running background compaction is awaited below (no second model call), not skipped.
    if (coordinator_->running() && !coordinator_->background_running())
        return none("a compaction is already running");

    // Pi 1.6: where the message is and what happened to it since.
    const auto where = locate_assistant(m);
    const bool explicit_error =
        m.stop_reason == stop_reason::error && is_context_overflow(m, window);  // patterns
    const bool overflow = same_model && ((explicit_error && where.retained) ||
                                         (where.usage_matches && is_context_overflow(m, window)));
    const bool length = same_model && where.projected && m.stop_reason == stop_reason::length &&
                        config_.model.max_output_tokens > 0 && m.usage &&
                        m.usage->output < config_.model.max_output_tokens;
    if (overflow || length)
        return recover(m, where, overflow, std::move(h), c);

    std::int64_t tokens = 0;
    const std::int64_t direct = m.usage ? calculate_context_tokens(*m.usage) : 0;
    if (snap->has_edits || m.stop_reason == stop_reason::error || direct == 0)
        tokens = snap->context_tokens();  // the projected estimate (pure without fresh usage, #8328)
    else
        tokens = direct;
    clear_then(tokens, [self = shared_from_this(), h = std::move(h), c](std::int64_t now) mutable {
        self->decide(now, false, std::move(h), c);
    });
}

void session_core::decide(
    std::int64_t tokens,
    bool mid_run,
    asio::any_completion_handler<outcome_signature> h,
    const std::shared_ptr<caller>& c
)
{
    if (closed_)
        return complete(std::move(h), strand_, make_error_code(errc::session_closed), compaction_outcome{});
    if (!config_.settings.enabled || tokens <= threshold())
    {
        if (!mid_run && maybe_start_background(tokens))
            return complete(
                std::move(h),
                strand_,
                error_code{},
                compaction_outcome{
                    .reason = compaction_reason::background, .message = "a background compaction started"}
            );
        return complete(
            std::move(h), strand_, error_code{}, compaction_outcome{.message = "under the threshold"}
        );
    }
    if (!mid_run && suppression_.paused(log_.size()))
    {
        return complete(
            std::move(h),
            strand_,
            make_error_code(errc::auto_compaction_paused),
            compaction_outcome{
                .reason = compaction_reason::threshold,
                .message = "the last automatic compaction failed on this path; waiting for new entries"}
        );
    }
    if (coordinator_->running() && !coordinator_->background_running())
        return complete(
            std::move(h),
            strand_,
            error_code{},
            compaction_outcome{.message = "a compaction is already running"}
        );
    start(compaction_reason::threshold, std::nullopt, false, std::move(h), c);
}

void session_core::recover(
    const message& m,
    const assistant_location& where,
    bool overflow,
    asio::any_completion_handler<outcome_signature> h,
    const std::shared_ptr<caller>& c
)
{
    if (m.stop_reason == stop_reason::stop)
        // A successful response that overflowed silently: compact, keep it, no retry (#5720).
        return start(compaction_reason::overflow, std::nullopt, false, std::move(h), c);
    if (overflow_attempted_)
    {
        const std::string why(overflow ? overflow_exhausted_message : truncated_exhausted_message);
        emit(compaction_end_event{compaction_reason::overflow, std::nullopt, false, false, why});
        // The failed hooks may suspend: the check completes once they have finished.
        auto hooks = [](std::shared_ptr<session_core> self, std::string why) -> asio::awaitable<std::string> {
            const compact_failed_event failed{compaction_reason::overflow, why, false, false, false};
            co_await self->run_failed_hooks(failed);
            co_return why;
        };
        asio::co_spawn(
            strand_,
            hooks(shared_from_this(), why),
            [self = shared_from_this(), h = std::move(h)](std::exception_ptr, std::string why) mutable {
                complete(
                    std::move(h),
                    self->strand_,
                    make_error_code(errc::overflow_recovery_failed),
                    compaction_outcome{.reason = compaction_reason::overflow, .message = std::move(why)}
                );
            }
        );
        return;
    }
    overflow_attempted_ = true;
    // Omit the failed attempt (persisted, #11227), then compact; the omissions stay if the
    // compaction fails.
    if (!where.entry)
        return start(compaction_reason::overflow, std::nullopt, true, std::move(h), c);
    diagnostics diag;
    auto edits = omissions(*where.entry, diag);
    if (!edits)
        return complete(std::move(h), strand_, edits.error(), compaction_outcome{.message = diag.message});
    return append_all(
        std::move(*edits),
        [self = shared_from_this(), h = std::move(h), c](error_code ec) mutable {
            if (ec)
                return complete(
                    std::move(h),
                    self->strand_,
                    ec,
                    compaction_outcome{.message = "omitting the failed attempt failed"}
                );
            self->start(compaction_reason::overflow, std::nullopt, true, std::move(h), c);
        }
    );
}

session_core::assistant_location session_core::locate_assistant(const message& m) const
{
    // The entry of `m`: the newest assistant entry on the active path with its timestamp and
    // stop reason (hosts pass a copy of what they appended). Unknown for an unpersisted error.
    assistant_location where;
    const auto path = log_.active_path();
    diagnostics diag;
    std::size_t looked = 0;
    std::size_t k = path.size();
    while (k-- > 0 && looked < 256)
    {
        const auto& meta = log_.meta(path[k]);
        if (meta.type != entry_type::message || meta.message_role != role::assistant)
            continue;
        ++looked;
        auto e = log_.get(path[k], diag);
        if (e && (*e)->message && (*e)->message->timestamp == m.timestamp &&
            (*e)->message->stop_reason == m.stop_reason)
        {
            where.entry = path[k];
            break;
        }
    }
    if (!where.entry)
        return where;  // unknown: projected and retained, usage matches
    const std::string& id = log_.meta(*where.entry).id;
    bool edit_after = false, compaction_after = false;
    std::optional<bool> last_edit_keeps;  // the last edit of this entry after it: non-null?
    for (std::size_t j = k + 1; j < path.size(); ++j)
    {
        const auto& meta = log_.meta(path[j]);
        if (meta.type == entry_type::compaction)
            compaction_after = true;
        if (meta.type != entry_type::context_edit)
            continue;
        edit_after = true;
        if (meta.target_id == id)
            if (auto e = log_.get(path[j], diag); e)
                last_edit_keeps = (*e)->replacement.has_value();
    }
    const auto snap = current();
    where.projected = false;
    for (std::size_t i = 0; i < snap->messages.size() && !where.projected; ++i)
        where.projected = snap->messages[i].entry_id == id;
    where.usage_matches = where.projected && !edit_after;
    where.retained = !compaction_after && last_edit_keeps.value_or(true);
    return where;
}

result<std::vector<boost::json::object>> session_core::omissions(std::size_t index, diagnostics& diag) const
{
    // The attempt's assistant entry, then its results: the tool results after it, up to the
    // next assistant, that answer its calls.
    std::vector<boost::json::object> out;
    auto e = log_.get(index, diag);
    if (!e)
        return e.error();
    std::vector<std::string> calls;
    for (const auto& b : (*e)->message->content.blocks)
        if (const auto* c = std::get_if<tool_call_block>(&b))
            calls.push_back(c->id);
    out.push_back({{"type", "context_edit"}, {"targetId", (*e)->id}, {"replacement", nullptr}});
    const auto path = log_.active_path();
    const auto at = std::find(path.begin(), path.end(), static_cast<std::uint32_t>(index));
    for (auto it = at == path.end() ? at : at + 1; it != path.end(); ++it)
    {
        const auto& meta = log_.meta(*it);
        if (meta.type == entry_type::message && meta.message_role == role::assistant)
            break;
        if (meta.type != entry_type::message || meta.message_role != role::tool_result)
            continue;
        auto r = log_.get(*it, diag);
        if (r && std::find(calls.begin(), calls.end(), (*r)->message->tool_call_id) != calls.end())
            out.push_back({{"type", "context_edit"}, {"targetId", (*r)->id}, {"replacement", nullptr}});
    }
    return out;
}

void session_core::between_turns_impl(asio::any_completion_handler<outcome_signature> h)
{
    auto c = hook_cancellation(h);
    asio::post(strand_, [self = shared_from_this(), h = std::move(h), c]() mutable {
        session_core& s = *self;
        auto none = [&](std::string why) {
            complete(std::move(h), s.strand_, error_code{}, compaction_outcome{.message = std::move(why)});
        };
        if (s.closed_)
            return complete(
                std::move(h), s.strand_, make_error_code(errc::session_closed), compaction_outcome{}
            );
        if (s.downshift_first(h, c))
            return;
        if (!s.config_.settings.enabled)
            return none("automatic compaction is disabled");
        if (s.config_.model.context_window <= 0)
            return none("no context window is configured");
        if (s.coordinator_->running() && !s.coordinator_->background_running())
            return none("a compaction is already running");
        // Pi 1.6: the projected estimate, so a large new tool result is measured before it is sent.
        s.clear_then(s.current()->context_tokens(), [self, h = std::move(h), c](std::int64_t now) mutable {
            self->decide(now, true, std::move(h), c);
        });
    });
}

void session_core::compact_impl(
    std::optional<std::string> instr, asio::any_completion_handler<outcome_signature> h
)
{
    auto c = hook_cancellation(h);
    asio::post(strand_, [self = shared_from_this(), instr = std::move(instr), h = std::move(h), c]() mutable {
        session_core& s = *self;
        if (s.closed_)
            return complete(
                std::move(h), s.strand_, make_error_code(errc::session_closed), compaction_outcome{}
            );
        s.turn_abort_.emit(asio::cancellation_type::terminal);  // interrupt the running turn
        // Joins a running or pending manual compaction, or aborts a running automatic one and
        // runs after it (lifecycles never overlap), or starts one.
        s.waiting_.emplace(c->id, std::move(h));
        s.apply(s.coordinator_->compact(c->id, std::move(instr), c->cancelled));
    });
}

void session_core::start(
    compaction_reason reason,
    std::optional<std::string> instr,
    bool will_retry,
    asio::any_completion_handler<outcome_signature> h,
    const std::shared_ptr<caller>& c
)
{
    waiting_.emplace(c->id, std::move(h));
    detail::operation_request req{reason, std::move(instr), will_retry};
    // A running background compaction is awaited: the queued operation then uses its result.
    apply(
        coordinator_->background_running()
            ? coordinator_->await_background(c->id, std::move(req), c->cancelled)
            : coordinator_->start(c->id, std::move(req), c->cancelled)
    );
}

void session_core::apply(const detail::coordinator_effects& fx)
{
    if (fx.discard_prepared)
        drop_prepared(*fx.discard_prepared);
    for (const auto id : fx.cancelled)
        complete_caller(id, make_error_code(errc::cancelled), compaction_outcome{});
    if (fx.interrupt && job_ && job_->id == *fx.interrupt)
        job_->signal.emit(asio::cancellation_type::terminal);
    if (fx.launch)
        launch(*fx.launch);
}

void session_core::launch(std::uint64_t operation)
{
    auto j = std::make_shared<job>();
    j->id = operation;
    j->request = *coordinator_->request(operation);
    job_ = j;
    // An operation aborted before it started (cancel before link, or a pending manual one that
    // was aborted) still runs: its transaction unwinds at once and reports `cancelled`.
    asio::co_spawn(
        strand_,
        transaction::run(shared_from_this(), j),
        asio::bind_cancellation_slot(
            j->signal.slot(),
            [self = shared_from_this(), j](std::exception_ptr ep, transaction::result_type r) {
                if (ep)
                    r = {
                        make_error_code(errc::io_error),
                        compaction_outcome{.attempted = true, .message = "internal error"}};
                self->finish(j->id, r.first, r.second);
            }
        )
    );
}

void session_core::finish(std::uint64_t operation, error_code ec, const compaction_outcome& out)
{
    if (job_ && job_->id == operation)
        job_.reset();
    // A background operation that succeeded left its result in prepared_ (transaction::run_background).
    const bool held = prepared_ && prepared_->job->id == operation;
    const bool when_ready = config_.settings.background.commit == background_commit::when_ready;
    const auto done = coordinator_->finish(operation, held, when_ready);
    if (held && !coordinator_->prepared())
        prepared_.reset();  // aborted after it was prepared: never committed
    for (const auto id : done.waiters)
        complete_caller(id, ec, out);
    if (done.launch)
        launch(*done.launch);
}

void session_core::complete_caller(std::uint64_t id, error_code ec, compaction_outcome out)
{
    auto node = waiting_.extract(id);
    if (node.empty())
        return;
    complete(std::move(node.mapped()), strand_, ec, std::move(out));
}

std::int64_t session_core::threshold() const noexcept
{
    return automatic_threshold(config_.model.context_window, config_.settings, config_.compat);
}

bool session_core::background_on() const noexcept
{
    return detail::background_enabled(config_.settings, config_.compat) && config_.summarizer != nullptr;
}

void session_core::drop_prepared(detail::discard_reason why)
{
    coordinator_->consume_prepared();
    if (!prepared_)
        return;  // already taken by the operation committing it
    const auto p = std::move(prepared_);
    prepared_.reset();
    transaction::report_discard(*this, *p->job, why);
}

bool session_core::maybe_start_background(std::int64_t tokens)
{
    if (prepared_ && !coordinator_->running())
        if (const auto why = detail::check_binding(
                prepared_->binding, detail::path_steps(log_), config_digest_of(config_)
            ))
            drop_prepared(*why);  // reported now, not at the threshold; a new one may start below
    const auto threshold = this->threshold();
    growth_.observe(
        std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(), tokens
    );
    const detail::check_state st{
        background_on(), coordinator_->running(), coordinator_->prepared(), growth_.estimate()};
    if (detail::decide_check(tokens, threshold, config_.settings.background.start_at, st) !=
        detail::check_action::start_background)
        return false;
    if (suppression_.paused(log_.size()))
        return false;  // the last attempt failed on this very path
    apply(coordinator_->start_background());
    return true;
}

void session_core::abort_compaction()
{
    asio::post(strand_, [self = shared_from_this()] { self->apply(self->coordinator_->abort_all()); });
}

void session_core::close()
{
    asio::post(strand_, [self = shared_from_this()] {
        self->closed_ = true;
        self->apply(self->coordinator_->abort_all(true));
        self->turn_abort_.emit(asio::cancellation_type::terminal);
        self->clearing_abort_.emit(asio::cancellation_type::terminal);
    });
}

}  // namespace agentctx::runtime
