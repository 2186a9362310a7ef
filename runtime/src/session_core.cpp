// The session's core: appends, triggers, writes and the compaction lifecycle on the strand.
#include "session_core.hpp"

#include <agentctx/compaction/cancelled.hpp>
#include <agentctx/compaction/json_text.hpp>
#include <agentctx/compaction/prepare.hpp>
#include <agentctx/compaction/client_values.hpp>
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
#include "compaction_run.hpp"
#include "reasoning_binding.hpp"

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

using detail::compaction_job;
using detail::compaction_run;
using detail::run_context;
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
    : strand_(asio::make_strand(ex)), budgets_(std::move(config)),
      hooks_(
          budgets_.given().logger ? budgets_.given().logger : spdlog::default_logger(),
          [this](const session_event& e) { observe(e); }
      ),
      writes_(
          strand_,
          std::move(st),
          std::move(log),
          {&budgets_.given().pins, budgets_.given().compat, &budgets_.counter(), budgets_.given().load},
          {[this](const session_event& e) { emit(e); },
           [this](const entry& e) { adopted(e); },
           [this] { reloaded(); }},
          budgets_.given().logger ? budgets_.given().logger : spdlog::default_logger()
      )
{}

session_core::~session_core() = default;

result<void> session_core::start_up(diagnostics& diag)
{
    auto r = redactor::create(config().redaction, diag);
    if (!r)
        return r.error();
    redactor_ = std::move(*r);
    if (auto p = writes_.project(diag); !p)
        return p.error();
    budgets_.follow_path(log());
    // Stores with a single writer never call it.
    writes_.on_remote_change([weak = weak_from_this()](std::size_t stored) {
        // From the store's listener thread: catch up on the strand, in the write turn.
        auto self = weak.lock();
        if (!self)
            return;
        asio::post(self->strand(), [self, stored] {
            auto behind = [self, stored] {
                return !self->closed() && (stored == std::string::npos || stored > self->log().size());
            };
            if (behind())
                self->writes_.async_reload(behind, [self](error_code) {});
        });
    });
    return {};
}

void session_core::observe(const session_event& e)
{
    // The session measures its own summaries: a background one until it is prepared (its commit
    // comes later), a foreground one that made model calls until it ended.
    auto& growth = ledger_.growth();
    if (const auto* p = std::get_if<compaction_prepared_event>(&e))
        growth.summary_took(static_cast<double>(p->elapsed_ms) / 1000.0);
    else if (const auto* f = std::get_if<compaction_finished_event>(&e);
             f && f->reason != compaction_reason::background && !f->evidence.failure && f->evidence.calls > 0)
        growth.summary_took(static_cast<double>(f->evidence.elapsed_ms) / 1000.0);
}

void session_core::append_impl(
    boost::json::object fields, asio::any_completion_handler<append_signature> h, diagnostics* out
)
{
    asio::post(
        strand_,
        [self = shared_from_this(), fields = std::move(fields), h = std::move(h), out]() mutable {
            if (self->closed())
                return complete(
                    std::move(h), self->strand(), make_error_code(errc::session_closed), std::string()
                );
            // Entries the runtime writes for itself (progress records) never come from a client.
            diagnostics diag;
            if (auto ok = check_client_entry(fields, diag); !ok)
            {
                self->logger().debug("append refused: {}", diag.message);
                if (out)
                    *out = diag;
                return complete(std::move(h), self->strand(), ok.error(), std::move(diag.message));
            }
            self->append_in_turn(std::move(fields), std::move(h), out);
        }
    );
}

namespace {

// The entry `fields` become as the leaf's child, validated completely (nothing written).
result<entry_ptr> prepare_entry(const session_log& log, boost::json::object fields, diagnostics& diag)
{
    // Pi's field order: type, id, parentId, timestamp, then the type's fields.
    boost::json::object raw;
    const auto* type = fields.if_contains("type");
    raw["type"] = type ? *type : boost::json::value(nullptr);
    raw["id"] = log.new_id();
    if (const auto leaf = log.leaf_id())
        raw["parentId"] = *leaf;
    else
        raw["parentId"] = nullptr;
    raw["timestamp"] = iso_timestamp_now();
    for (auto& kv : fields)
        if (kv.key() != "type" && kv.key() != "id" && kv.key() != "parentId" && kv.key() != "timestamp")
            raw[kv.key()] = std::move(kv.value());
    if (auto r = detail::check_context_edit(log, raw, diag); !r)
        return r.error();
    if (auto r = check_client_values(raw, diag); !r)
        return r.error();
    auto decoded = decode_entry(std::move(raw), diag);
    if (!decoded)
        return decoded.error();
    auto e = std::make_shared<const entry>(std::move(*decoded));
    // Validate completely, then write: a rejected entry never reaches the store.
    if (auto r = detail::check_appendable(log, *e, diag); !r)
        return r.error();
    return entry_ptr(std::move(e));
}

}  // namespace

void session_core::append_in_turn(
    boost::json::object fields, asio::any_completion_handler<append_signature> h, diagnostics* out
)
{
    // The id is known once the entry is prepared, inside the write turn.
    auto id = std::make_shared<std::string>();
    auto event = std::make_shared<std::optional<reasoning_transformed_event>>();
    auto prepare = [self = shared_from_this(), fields = std::move(fields), id, event, out](diagnostics& diag
                   ) mutable -> result<commit_plan> {
        auto e = self->closed() ? result<entry_ptr>(make_error_code(errc::session_closed))
                                : prepare_entry(self->log(), std::move(fields), diag);
        if (!e)
        {
            // The refusal's reason (field path and why) is the string a failed append completes with.
            if (out)
                *out = diag;
            return e.error();
        }
        *id = (*e)->id;
        *event = transformed_event(**e);
        return commit_plan{{std::move(*e)}, std::nullopt, nullptr};
    };
    writes_.async_commit(
        std::move(prepare),
        [self = shared_from_this(), id, event, h = std::move(h), out](
            error_code ec, std::string message
        ) mutable {
            if (!ec && *event)
                self->emit(**event);  // written: what the provider withheld is reported
            if (!ec)
                return complete_from_strand(std::move(h), self->strand(), ec, std::move(*id));
            if (id->empty())  // refused before the write: `message` says where and why
                return complete(std::move(h), self->strand(), ec, std::move(message));
            // The store refused a valid entry, or another node appended first (then the log has
            // caught up and the caller may retry): nothing was appended.
            if (out)
                out->message = message;
            if (ec == make_error_code(errc::stale_leaf))
                return complete(std::move(h), self->strand(), ec, std::string());
            complete_from_strand(std::move(h), self->strand(), ec, std::string());
        }
    );
}

void session_core::adopted(const entry& e)
{
    // Pi's format: a user message or a non-error assistant response resets the overflow attempt.
    if (is_user_or_ok_assistant(e))
        ledger_.set_overflow_attempted(false);
    if (e.type == entry_type::model_change && !budgets_.changed(e))
        logger().debug(
            "model_change to {}/{}: not a known model, the serving model stays", e.provider, e.model_id
        );
}

void session_core::reloaded()
{
    budgets_.follow_path(log());
    ledger_.suppression().reset();  // another node's history: what failed here may not fail there
}

void session_core::refresh_impl(asio::any_completion_handler<void_signature> h)
{
    asio::post(strand_, [self = shared_from_this(), h = std::move(h)]() mutable {
        if (self->closed())
            return complete(std::move(h), self->strand(), make_error_code(errc::session_closed));
        self->writes_.async_reload({}, [self, h = std::move(h)](error_code ec) mutable {
            complete(std::move(h), self->strand(), ec);
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
    append_in_turn(
        std::move(first),
        [self = shared_from_this(),
         rest = std::move(fields),
         h = std::move(h)](error_code ec, std::string) mutable {
            if (ec)
                return complete(std::move(h), self->strand(), ec);
            self->append_all(std::move(rest), std::move(h));
        }
    );
}

void session_core::branch_impl(std::string id, asio::any_completion_handler<void_signature> h)
{
    asio::post(strand_, [self = shared_from_this(), id = std::move(id), h = std::move(h)]() mutable {
        session_core& s = *self;
        diagnostics diag;
        if (s.closed())
            return complete(std::move(h), s.strand(), make_error_code(errc::session_closed));
        const auto before = s.log().leaf_id();
        if (auto r = s.writes_.move_leaf(id, diag); !r)
            return complete(std::move(h), s.strand(), r.error());
        if (auto p = s.writes_.project(diag); !p)
        {
            if (before)
                (void)s.writes_.move_leaf(before, diag);
            return complete(std::move(h), s.strand(), p.error());
        }
        complete(std::move(h), s.strand(), error_code{});
    });
}

void session_core::request_view_impl(
    request_budget budget, asio::any_completion_handler<request_view_signature> h
)
{
    asio::post(strand_, [self = shared_from_this(), budget = std::move(budget), h = std::move(h)]() mutable {
        session_core& s = *self;
        if (s.closed())
            return complete(std::move(h), s.strand(), make_error_code(errc::session_closed), fit_result{});
        // The session's required entries hold the view as they hold a compaction's cut.
        auto host = std::move(budget.required);
        budget.required = [&s, &host](const context_message& m) {
            if (host && host(m))
                return true;
            if (s.config().required.empty() || m.entry_id.empty())
                return false;
            diagnostics ignored;
            const auto i = s.log().find(m.entry_id);
            auto e = i ? s.log().get(*i, ignored) : result<entry_ptr>(compaction::errc::entry_not_found);
            return e && s.config().required.requires_entry(**e);
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
        complete(std::move(h), s.strand(), error_code{}, std::move(view));
    });
}

std::shared_ptr<session_core::caller> session_core::hook_cancellation(
    asio::any_completion_handler<outcome_signature>& h
)
{
    auto c = std::make_shared<caller>();
    c->id = callers_.next_caller();
    auto slot = asio::get_associated_cancellation_slot(h);
    if (slot.is_connected())
        slot.assign([c, weak = weak_from_this(), strand = strand_](asio::cancellation_type t) {
            if (!detail::honours(t))
                return;
            c->cancelled = true;
            asio::post(strand, [id = c->id, weak, t] {
                if (auto self = weak.lock())
                    self->apply(self->coordinator().cancel(id, t));
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
            // The host's usage is checked as an appended message's is: counts out of range refused.
            if (diagnostics diag; m.usage && !check_usage(*m.usage, "usage", diag))
                return complete(
                    std::move(h),
                    self->strand(),
                    compaction::make_error_code(compaction::errc::invalid_value),
                    compaction_outcome{.message = std::move(diag.message)}
                );
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
        if (!self->closed() && self->downshift_first(h, c))
            return;
        const auto last = self->current()->last_assistant();
        if (!last)
            return complete(
                std::move(h),
                self->strand(),
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
                self->strand(),
                make_error_code(errc::not_overflow),
                compaction_outcome{.message = "the error is not a context overflow"}
            );
        message m;
        m.role = role::assistant;
        m.role_name = "assistant";
        m.stop_reason = stop_reason::error;
        m.error_message = error;
        m.provider = self->config().model.provider;
        m.model = self->config().model.model_id;
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
    if (interrupts_.closed())
        return complete(std::move(h), strand_, make_error_code(errc::session_closed), compaction_outcome{});
    if (downshift_first(h, c))
        return;
    if (!config().settings.enabled)
        return none("automatic compaction is disabled");
    if (skip_aborted && m.stop_reason == stop_reason::aborted)
        return none("the response was aborted");
    const auto window = config().model.context_window;
    const bool same_model = m.provider == config().model.provider && m.model == config().model.model_id;
    const auto snap = current();
    if (snap->compacted_at && m.timestamp <= *snap->compacted_at)
        return none("the message predates the latest compaction");
    // A running background compaction is awaited below (no second model call), not skipped.
    if (callers_.coordinator().running() && !callers_.coordinator().background_running())
        return none("a compaction is already running");

    // Pi 1.6: where the message is and what happened to it since.
    const auto where = locate_assistant(m);
    const bool explicit_error =
        m.stop_reason == stop_reason::error && is_context_overflow(m, window);  // patterns
    const bool overflow = same_model && ((explicit_error && where.retained) ||
                                         (where.usage_matches && is_context_overflow(m, window)));
    const bool length = same_model && where.projected && m.stop_reason == stop_reason::length &&
                        config().model.max_output_tokens > 0 && m.usage &&
                        m.usage->output < config().model.max_output_tokens;
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
    if (interrupts_.closed())
        return complete(std::move(h), strand_, make_error_code(errc::session_closed), compaction_outcome{});
    if (!config().settings.enabled || tokens <= threshold())
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
    if (!mid_run && ledger_.suppression().paused(log().size()))
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
    if (callers_.coordinator().running() && !callers_.coordinator().background_running())
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
    if (ledger_.overflow_attempted())
    {
        const std::string why(overflow ? overflow_exhausted_message : truncated_exhausted_message);
        emit(compaction_end_event{compaction_reason::overflow, std::nullopt, false, false, why});
        // The failed hooks may suspend: the check completes once they have finished.
        auto hooks = [](std::shared_ptr<session_core> self, std::string why) -> asio::awaitable<std::string> {
            const compact_failed_event failed{compaction_reason::overflow, why, false, false, false};
            co_await self->hooks_.run_failed(failed);
            co_return why;
        };
        asio::co_spawn(
            strand_,
            hooks(shared_from_this(), why),
            [self = shared_from_this(), h = std::move(h)](std::exception_ptr, std::string why) mutable {
                complete(
                    std::move(h),
                    self->strand(),
                    make_error_code(errc::overflow_recovery_failed),
                    compaction_outcome{.reason = compaction_reason::overflow, .message = std::move(why)}
                );
            }
        );
        return;
    }
    ledger_.set_overflow_attempted(true);
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
                    self->strand(),
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
    const auto path = log().active_path();
    diagnostics diag;
    std::size_t looked = 0;
    std::size_t k = path.size();
    while (k-- > 0 && looked < 256)
    {
        const auto& meta = log().meta(path[k]);
        if (meta.type != entry_type::message || meta.message_role != role::assistant)
            continue;
        ++looked;
        auto e = log().get(path[k], diag);
        if (e && (*e)->message && (*e)->message->timestamp == m.timestamp &&
            (*e)->message->stop_reason == m.stop_reason)
        {
            where.entry = path[k];
            break;
        }
    }
    if (!where.entry)
        return where;  // unknown: projected and retained, usage matches
    const std::string& id = log().meta(*where.entry).id;
    bool edit_after = false, compaction_after = false;
    std::optional<bool> last_edit_keeps;  // the last edit of this entry after it: non-null?
    for (std::size_t j = k + 1; j < path.size(); ++j)
    {
        const auto& meta = log().meta(path[j]);
        if (meta.type == entry_type::compaction)
            compaction_after = true;
        if (meta.type != entry_type::context_edit)
            continue;
        edit_after = true;
        if (meta.target_id == id)
            if (auto e = log().get(path[j], diag); e)
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
    auto e = log().get(index, diag);
    if (!e)
        return e.error();
    std::vector<std::string> calls;
    for (const auto& b : (*e)->message->content.blocks)
        if (const auto* c = std::get_if<tool_call_block>(&b))
            calls.push_back(c->id);
    out.push_back({{"type", "context_edit"}, {"targetId", (*e)->id}, {"replacement", nullptr}});
    const auto path = log().active_path();
    const auto at = std::find(path.begin(), path.end(), static_cast<std::uint32_t>(index));
    for (auto it = at == path.end() ? at : at + 1; it != path.end(); ++it)
    {
        const auto& meta = log().meta(*it);
        if (meta.type == entry_type::message && meta.message_role == role::assistant)
            break;
        if (meta.type != entry_type::message || meta.message_role != role::tool_result)
            continue;
        auto r = log().get(*it, diag);
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
            complete(std::move(h), s.strand(), error_code{}, compaction_outcome{.message = std::move(why)});
        };
        if (s.closed())
            return complete(
                std::move(h), s.strand(), make_error_code(errc::session_closed), compaction_outcome{}
            );
        if (s.downshift_first(h, c))
            return;
        if (!s.config().settings.enabled)
            return none("automatic compaction is disabled");
        if (s.config().model.context_window <= 0)
            return none("no context window is configured");
        if (s.coordinator().running() && !s.coordinator().background_running())
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
        if (s.closed())
            return complete(
                std::move(h), s.strand(), make_error_code(errc::session_closed), compaction_outcome{}
            );
        s.interrupts_.abort_turn();  // interrupt the running turn
        // Joins a running or pending manual compaction, or aborts a running automatic one and
        // runs after it (lifecycles never overlap), or starts one.
        s.callers_.wait(c->id, std::move(h));
        s.apply(s.coordinator().compact(c->id, std::move(instr), c->cancelled));
    });
}

void session_core::adopt_compaction_impl(
    boost::json::object item,
    std::string first_kept,
    std::optional<std::string> covered_leaf,
    asio::any_completion_handler<outcome_signature> h
)
{
    auto c = hook_cancellation(h);
    asio::post(
        strand_,
        [self = shared_from_this(),
         item = std::move(item),
         first_kept = std::move(first_kept),
         covered_leaf = std::move(covered_leaf),
         h = std::move(h),
         c]() mutable {
            session_core& s = *self;
            if (s.closed())
                return complete(
                    std::move(h), s.strand(), make_error_code(errc::session_closed), compaction_outcome{}
                );
            // Only a session whose views advertise inline compaction adopts (its summarizer is the
            // provider's, so the state is replayed); nothing is planned or reported otherwise.
            const auto& summarizer = s.config().summarizer;
            if (!summarizer || !summarizer->capabilities().inline_compaction)
                return complete(
                    std::move(h),
                    s.strand(),
                    make_error_code(providers::errc::not_configured),
                    compaction_outcome{
                        .reason = compaction_reason::manual,
                        .message =
                            "the provider's compaction item was not adopted: the session's summarizer "
                            "does not use OpenAI inline compaction (provider.native.openai inline or auto)"}
                );
            // The provider compacted one prefix; another compaction would race it for the cut.
            if (s.coordinator().running())
                return complete(
                    std::move(h),
                    s.strand(),
                    make_error_code(errc::compaction_running),
                    compaction_outcome{
                        .reason = compaction_reason::manual,
                        .message = "a compaction is running; the provider's compaction item was not adopted"}
                );
            s.callers_.wait(c->id, std::move(h));
            detail::operation_request req{.reason = compaction_reason::manual};
            req.adopted = detail::operation_request::adopted_native{
                std::move(item), std::move(first_kept), std::move(covered_leaf)};
            s.apply(s.coordinator().adopt(c->id, std::move(req), c->cancelled));
        }
    );
}

void session_core::start(
    compaction_reason reason,
    std::optional<std::string> instr,
    bool will_retry,
    asio::any_completion_handler<outcome_signature> h,
    const std::shared_ptr<caller>& c
)
{
    callers_.wait(c->id, std::move(h));
    detail::operation_request req{reason, std::move(instr), will_retry};
    // A running background compaction is awaited: the queued operation then uses its result.
    apply(
        callers_.coordinator().background_running()
            ? callers_.coordinator().await_background(c->id, std::move(req), c->cancelled)
            : callers_.coordinator().start(c->id, std::move(req), c->cancelled)
    );
}

void session_core::apply(const detail::coordinator_effects& fx)
{
    if (fx.discard_prepared)
        drop_prepared(*fx.discard_prepared);
    for (const auto id : fx.cancelled)
        complete_caller(id, make_error_code(errc::cancelled), compaction_outcome{});
    if (fx.interrupt)
        if (auto* running = callers_.running(*fx.interrupt))
            running->signal.emit(asio::cancellation_type::terminal);
    if (fx.launch)
        launch(*fx.launch);
}

void session_core::launch(std::uint64_t operation)
{
    auto j = std::make_shared<compaction_job>();
    j->id = operation;
    j->request = *callers_.coordinator().request(operation);
    callers_.set_running(j);
    // An operation aborted before it started (cancel before link, or a pending manual one that
    // was aborted) still runs: its run unwinds at once and reports `cancelled`.
    asio::co_spawn(
        strand_,
        compaction_run::run(shared_from_this(), run_view(), j),
        asio::bind_cancellation_slot(
            j->signal.slot(),
            [self = shared_from_this(), j](std::exception_ptr ep, compaction_run::result_type r) {
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
    callers_.ended(operation);
    // A background operation that succeeded left its result in the ledger (run_background).
    const auto& prepared = ledger_.prepared();
    const bool held = prepared && prepared->job->id == operation;
    const bool when_ready = config().settings.background.commit == background_commit::when_ready;
    const auto done = callers_.coordinator().finish(operation, held, when_ready);
    if (held && !callers_.coordinator().prepared())
        ledger_.take_prepared();  // aborted after it was prepared: never committed
    for (const auto id : done.waiters)
        complete_caller(id, ec, out);
    if (done.launch)
        launch(*done.launch);
}

void session_core::complete_caller(std::uint64_t id, error_code ec, compaction_outcome out)
{
    if (auto h = callers_.take(id))
        complete(std::move(*h), strand_, ec, std::move(out));
}

bool session_core::background_on() const noexcept
{
    return detail::background_enabled(config().settings, config().compat) && config().summarizer != nullptr;
}

void session_core::drop_prepared(detail::discard_reason why)
{
    callers_.coordinator().consume_prepared();
    const auto p = ledger_.take_prepared();
    if (!p)
        return;  // already taken by the operation committing it
    compaction_run::report_discard(run_view(), *p->job, why);
}

bool session_core::maybe_start_background(std::int64_t tokens)
{
    if (const auto& held = ledger_.prepared(); held && !callers_.coordinator().running())
        if (const auto why =
                detail::check_binding(held->binding, detail::path_steps(log()), config_digest_of(config())))
            drop_prepared(*why);  // reported now, not at the threshold; a new one may start below
    const auto threshold = this->threshold();
    ledger_.growth().observe(
        std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(), tokens
    );
    const detail::check_state st{
        background_on(),
        callers_.coordinator().running(),
        callers_.coordinator().prepared(),
        ledger_.growth().estimate()};
    if (detail::decide_check(tokens, threshold, config().settings.background.start_at, st) !=
        detail::check_action::start_background)
        return false;
    if (ledger_.suppression().paused(log().size()))
        return false;  // the last attempt failed on this very path
    apply(callers_.coordinator().start_background());
    return true;
}

run_context session_core::run_view()
{
    return run_context(
        writes_,
        budgets_,
        hooks_,
        *redactor_,
        ledger_,
        callers_.coordinator(),
        interrupts_.closed_flag(),
        // The run keeps this session alive until it completes.
        [this](boost::json::object fields, asio::any_completion_handler<append_signature> h) {
            append_in_turn(std::move(fields), std::move(h));
        }
    );
}

void session_core::abort_compaction()
{
    asio::post(strand_, [self = shared_from_this()] { self->apply(self->coordinator().abort_all()); });
}

void session_core::close()
{
    asio::post(strand_, [self = shared_from_this()] {
        self->interrupts_.close();
        self->apply(self->coordinator().abort_all(true));
        self->interrupts_.abort_turn();
        self->interrupts_.abort_clearing();
    });
}

}  // namespace agentctx::runtime
