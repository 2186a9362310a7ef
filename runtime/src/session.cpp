// The session actor: appends, triggers, and the compaction transaction on the strand.
#include <agentctx/runtime/session.hpp>

#include <agentctx/compaction/cancelled.hpp>
#include <agentctx/compaction/json_text.hpp>
#include <agentctx/compaction/prepare.hpp>
#include <agentctx/compaction/summary.hpp>
#include <agentctx/runtime/error.hpp>
#include <agentctx/runtime/triggers.hpp>

#include "append_check.hpp"
#include "context_edit_check.hpp"

#include <boost/asio/append.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <map>
#include <list>

namespace agentctx::runtime {

namespace asio = boost::asio;
using boost::system::error_code;
using namespace compaction;

const char* to_string(compaction_reason r) noexcept
{
    switch (r)
    {
    case compaction_reason::threshold: return "threshold";
    case compaction_reason::overflow: return "overflow";
    case compaction_reason::manual: return "manual";
    }
    return "manual";
}

namespace {

constexpr std::string_view truncated_exhausted_message =
    "Truncated response recovery failed after one compact-and-retry attempt.";
constexpr std::string_view overflow_exhausted_message =
    "Context overflow recovery failed after one compact-and-retry attempt. Try reducing context or "
    "switching to a larger-context model.";

// Thrown inside the transaction to unwind to its single failure path.
struct compaction_failure
{
    error_code ec;
    std::string message;
    bool from_hook = false;
    /// An automatic compaction with nothing to prepare: no events, no hooks (Pi 1.6 §10.5 step 2).
    bool silent = false;
};

// Completes a handler, never inline: post() runs it through its associated executor.
template <class Signature, class... Args>
void complete(asio::any_completion_handler<Signature> h, const asio::strand<asio::any_io_executor>& strand, Args... args)
{
    asio::get_associated_cancellation_slot(h).clear();
    asio::post(strand, asio::append(std::move(h), std::move(args)...));
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

// One in-flight compaction: its cancellation signal and everyone waiting for its result.
struct session::operation
{
    compaction_reason reason = compaction_reason::manual;
    asio::cancellation_signal signal;  // emitted on the strand only
    bool aborted = false;
    struct waiter
    {
        std::uint64_t id;
        asio::any_completion_handler<outcome_signature> handler;
    };
    std::list<waiter> waiters;  // a list: handlers are never move-assigned (Asio 1.26 bug)
    std::uint64_t next_id = 0;
    std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
    int model_calls = 0;
    std::optional<std::string> instructions;
    bool will_retry = false;
    bool start_emitted = false;
};

// One caller's request: created in the initiating function, tied to the caller's cancellation
// slot at once, and linked to the operation once the strand creates or joins it.
struct session::initiation
{
    std::atomic<bool> cancelled{false};
    std::shared_ptr<operation> op;  // on the strand
    bool initiator = false;
    std::uint64_t waiter_id = 0;
};

// The compaction transaction as a coroutine; a friend so it can reach the session's state.
struct transaction
{
    using result_type = std::pair<error_code, compaction_outcome>;

    static asio::awaitable<summary_output> summarize(
        std::shared_ptr<providers::summarizer> s,
        summary_prompt prompt,
        std::shared_ptr<session::operation> op,
        summary_kind kind = summary_kind::history
    )
    {
        const auto cap = prompt.max_output_tokens;
        ++op->model_calls;
        auto [ec, out] = co_await s->async_summarize(std::move(prompt), asio::as_tuple(asio::use_awaitable));
        if (ec)
            throw compaction_failure{
                agentctx::is_cancelled(ec) ? make_error_code(errc::cancelled) : ec,
                agentctx::is_cancelled(ec) ? "cancelled" : "summary request failed: " + ec.message()};
        diagnostics d;
        if (auto r = check_summary_output(out, cap, d, kind); !r)
            throw compaction_failure{r.error(), d.message};
        co_return out;
    }

    static asio::awaitable<result_type> run(
        std::shared_ptr<session> self,
        std::shared_ptr<session::operation> op,
        compaction_reason reason,
        std::optional<std::string> instructions,
        bool will_retry
    )
    {
        session& s = *self;
        // Pi 1.6: an automatic compaction announces itself only once it has a preparation.
        if (reason == compaction_reason::manual)
            emit_start(s, *op, reason);
        compaction_outcome out;
        out.attempted = true;
        out.reason = reason;
        bool from_hook = false;
        try
        {
            co_return co_await body(self, op, reason, instructions, will_retry, out, from_hook);
        }
        catch (const compaction_failure& f)
        {
            if (f.silent)
                co_return result_type{error_code{}, compaction_outcome{.message = f.message}};
            from_hook = from_hook || f.from_hook;
            emit_start(s, *op, reason);
            co_return fail(s, *op, reason, f.ec, f.message, from_hook, out);
        }
        catch (const std::exception& e)
        {
            emit_start(s, *op, reason);
            co_return fail(s, *op, reason, make_error_code(errc::io_error), e.what(), from_hook, out);
        }
    }

    static void emit_start(session& s, session::operation& op, compaction_reason reason)
    {
        if (op.start_emitted)
            return;
        op.start_emitted = true;
        s.emit(compaction_start_event{reason});
    }

    static result_type fail(
        session& s,
        session::operation& op,
        compaction_reason reason,
        error_code ec,
        const std::string& message,
        bool from_hook,
        compaction_outcome out
    )
    {
        const bool aborted = agentctx::is_cancelled(ec) || ec == make_error_code(errc::hook_cancelled);
        out.message = message;
        if (reason != compaction_reason::manual && !aborted)
            s.auto_failed_at_ = s.log_.size();
        if (ec == make_error_code(compaction::errc::insufficient_reduction) && reason != compaction_reason::manual)
            out.message += "; automatic compaction paused until new entries arrive";
        for (const auto& h : s.failed_hooks_)
        {
            try
            {
                h(compact_failed_event{reason, aborted ? std::nullopt : std::optional(out.message), aborted, false, from_hook});
            }
            catch (const std::exception& e)
            {
                s.logger_->error("compact_failed hook threw: {}", e.what());
            }
        }
        s.emit(compaction_end_event{reason, std::nullopt, aborted, false, aborted ? std::nullopt : std::optional(out.message)});
        const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - op.started).count();
        s.logger_->info("compaction reason={} outcome={} duration_ms={} model_calls={} detail=\"{}\"", to_string(reason),
                        ec.message(), ms, op.model_calls, out.message);
        return {ec, std::move(out)};
    }

    static asio::awaitable<result_type> body(
        std::shared_ptr<session> self,
        std::shared_ptr<session::operation> op,
        compaction_reason reason,
        const std::optional<std::string>& instructions,
        bool will_retry,
        compaction_outcome& out,
        bool& from_hook
    )
    {
        session& s = *self;
        if (op->aborted)
            throw compaction_failure{make_error_code(errc::cancelled), "cancelled before it started"};
        if (!s.config_.summarizer)
            throw compaction_failure{make_error_code(errc::no_summarizer), "no summarizer is configured"};

        // 1. Plan against the current leaf.
        diagnostics diag;
        const auto planned_leaf = s.log_.leaf_id();
        auto pp = load_planning_path(s.log_, diag);
        if (!pp)
            throw compaction_failure{pp.error(), diag.message};
        auto prep = prepare_compaction(pp->entries, s.config_.settings, {.counter = &s.counter()}, diag);
        const bool nothing = !prep && (prep.error() == make_error_code(compaction::errc::nothing_to_compact) ||
                                       prep.error() == make_error_code(compaction::errc::already_compacted));
        if (!prep)
            throw compaction_failure{prep.error(), diag.message, false, nothing && reason != compaction_reason::manual};
        emit_start(s, *op, reason);
        s.logger_->debug("compaction plan: first kept {}, {} to summarize, {} in turn prefix", prep->first_kept_entry_id,
                         prep->messages_to_summarize.size(), prep->turn_prefix_messages.size());

        // 2. before_compact hooks, in registration order.
        std::optional<compaction_result> custom;
        for (const auto& h : s.before_hooks_)
        {
            try
            {
                auto d = h(before_compact_event{reason, *prep, instructions});
                if (d.cancel)
                    throw compaction_failure{make_error_code(errc::hook_cancelled), "cancelled by a before_compact hook", true};
                if (d.result)
                    custom = std::move(d.result);
            }
            catch (const compaction_failure&)
            {
                throw;
            }
            catch (const std::exception& e)
            {
                s.logger_->error("before_compact hook threw, skipped: {}", e.what());
            }
        }

        // 3. Summarize (both requests at once for a split turn; one failing cancels the other).
        std::optional<std::string> history, prefix;
        const auto& model = s.config_.model;
        // Pi 1.6: the model's output limit, clamped so input and output fit the window.
        const auto hook_cap = summary_output_budget(model.context_window, model.max_output_tokens, 0, 0);
        std::optional<usage> history_usage, prefix_usage;
        std::map<std::string, std::size_t> redactions;
        auto scrub = [&](std::string& text) {
            auto r = s.redactor_->redact(text);
            for (const auto& [rule, n] : r.counts)
                redactions[rule] += n;
            text = std::move(r.text);
        };
        if (custom)
        {
            from_hook = true;
            diagnostics d;
            if (auto r = check_summary_output({custom->summary, stop_reason::stop, std::nullopt}, hook_cap, d); !r)
                throw compaction_failure{r.error(), "hook result rejected: " + d.message, true};
        }
        else
        {
            auto msgs = [](const std::vector<context_message>& v) {
                std::vector<std::shared_ptr<const message>> out;
                for (const auto& m : v)
                    out.push_back(m.msg);
                return out;
            };
            const bool need_prefix = prep->is_split_turn && !prep->turn_prefix_messages.empty();
            const bool need_history = !prep->messages_to_summarize.empty() || !need_prefix;
            std::optional<std::string> effort;
            const auto snap = s.current();
            if (snap->thinking_level != "off")
                effort = snap->thinking_level;
            auto hp = history_summary_prompt(msgs(prep->messages_to_summarize), prep->previous_summary, instructions,
                                             model.context_window, model.max_output_tokens);
            hp.reasoning_effort = effort;
            auto pp2 = turn_prefix_summary_prompt(msgs(prep->turn_prefix_messages), instructions, model.context_window,
                                                  model.max_output_tokens);
            // Secrets never reach the summarizer (seed 001): the history is reference data.
            scrub(hp.prompt);
            scrub(pp2.prompt);
            pp2.reasoning_effort = effort;
            if (need_history && need_prefix && s.config_.concurrent_summaries)
            {
                // Both at once (opt-in); the first failure cancels the other and is the one reported.
                const auto ex = co_await asio::this_coro::executor;
                auto [order, e0, r0, e1, r1] =
                    co_await asio::experimental::make_parallel_group(
                        asio::co_spawn(ex, summarize(s.config_.summarizer, std::move(hp), op), asio::deferred),
                        asio::co_spawn(ex, summarize(s.config_.summarizer, std::move(pp2), op, summary_kind::turn_prefix), asio::deferred)
                    )
                        .async_wait(asio::experimental::wait_for_one_error(), asio::use_awaitable);
                const std::exception_ptr first = order[0] == 0 ? e0 : e1;
                if (first)
                    std::rethrow_exception(first);
                if (e0 || e1)
                    std::rethrow_exception(e0 ? e0 : e1);
                history = std::move(r0.text);
                prefix = std::move(r1.text);
                history_usage = r0.usage;
                prefix_usage = r1.usage;
            }
            else if (need_history && need_prefix)
            {
                // Pi 1.6 (#5536): the history request first, the turn prefix after its response;
                // single-slot local servers answer 429 to parallel requests.
                auto h = co_await summarize(s.config_.summarizer, std::move(hp), op);
                history = std::move(h.text);
                history_usage = h.usage;
                auto p = co_await summarize(s.config_.summarizer, std::move(pp2), op, summary_kind::turn_prefix);
                prefix = std::move(p.text);
                prefix_usage = p.usage;
            }
            else if (need_prefix)
            {
                auto p = co_await summarize(s.config_.summarizer, std::move(pp2), op, summary_kind::turn_prefix);
                prefix = std::move(p.text);
                prefix_usage = p.usage;
            }
            else
            {
                auto h = co_await summarize(s.config_.summarizer, std::move(hp), op);
                history = std::move(h.text);
                history_usage = h.usage;
            }
        }

        // A model may still echo a secret: the summary is scrubbed before it is validated.
        if (history)
            scrub(*history);
        if (prefix)
            scrub(*prefix);
        if (custom)
            scrub(custom->summary);

        // Pi 1.6 (#11058): a split turn with nothing else to summarize builds on the previous summary.
        if (!custom && !history && prefix && prep->previous_summary)
            history = prep->previous_summary;

        // 4. Cancelled while we waited? Closed? Nothing is written after a cancellation.
        const auto cs = co_await asio::this_coro::cancellation_state;
        if (cs.cancelled() != asio::cancellation_type::none || op->aborted)
            throw compaction_failure{make_error_code(errc::cancelled), "cancelled"};
        if (s.closed_)
            throw compaction_failure{make_error_code(errc::session_closed), "the session was closed"};

        // 5. Still valid against the current leaf? Appends are fine; a branch switch or another
        //    compaction is not. From here to the swap there is no suspension point.
        auto now = load_planning_path(s.log_, diag);
        if (!now)
            throw compaction_failure{now.error(), diag.message};
        const auto& path = now->entries;
        const std::string first_kept = custom && !custom->first_kept_entry_id.empty() ? custom->first_kept_entry_id
                                                                                       : prep->first_kept_entry_id;
        auto latest_compaction_id = [](const std::vector<entry_ptr>& p) {
            for (std::size_t i = p.size(); i-- > 0;)
                if (p[i]->type == entry_type::compaction)
                    return p[i]->id;
            return std::string();
        };
        std::optional<std::size_t> kept_index;
        for (std::size_t i = 0; i < path.size(); ++i)
            if (path[i]->id == first_kept)
                kept_index = i;
        if (!kept_index || latest_compaction_id(path) != latest_compaction_id(pp->entries))
            throw compaction_failure{make_error_code(errc::stale_plan),
                                     "the path changed during the compaction (planned at leaf " + planned_leaf.value_or("-") +
                                         ", now " + s.log_.leaf_id().value_or("-") + ")"};

        // 6. Validate the result against the current path.
        compaction_preparation current = *prep;
        current.first_kept_index = *kept_index;
        current.first_kept_entry_id = first_kept;
        compaction_result result;
        if (custom)
        {
            result = *custom;
            result.first_kept_entry_id = first_kept;
            if (result.tokens_before == 0)
                result.tokens_before = prep->tokens_before;
            result.tokens_after = tokens_after_compaction(path, *kept_index, result.summary, s.counter());
            const auto threshold = model.context_window - s.config_.settings.reserve_tokens;
            if (model.context_window > 0 && result.tokens_after > threshold)
                throw compaction_failure{make_error_code(compaction::errc::insufficient_reduction),
                                         "hook result would leave ~" + std::to_string(result.tokens_after) +
                                             " tokens, over the threshold of " + std::to_string(threshold),
                                         true};
        }
        else
        {
            auto r = assemble_compaction(path, current, history, prefix, model.context_window, s.config_.settings, diag, s.counter());
            if (!r)
                throw compaction_failure{r.error(), diag.message};
            result = std::move(*r);
        }

        // 7. Commit: build everything first, then store append, log append, snapshot swap.
        boost::json::value details = result.details;
        if (details.is_null())
            details = boost::json::object{};
        if (details.is_object())
        {
            const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - op->started).count();
            details.get_object()["agentctx"] = boost::json::object{
                {"reason", to_string(reason)},
                {"tokensAfter", result.tokens_after},
                {"durationMs", ms},
                {"modelCalls", op->model_calls},
                {"summarizer", from_hook ? std::string("hook") : s.config_.summarizer->name()},
            };
            if (!redactions.empty())
                details.get_object()["agentctx"].get_object()["redactions"] = redactions_json(redactions);
        }
        // Pi 1.6: the summary calls' usage summed, and the replayed prompt and tool state at the
        // boundary, so Pi projects our compaction with its checkpoint first.
        const auto total_usage = compaction_usage(history_usage, prefix_usage);
        const std::string ts = iso_timestamp_now();
        // The snapshot holds the replay for this leaf (revalidated above): no second projection.
        auto checkpoint = system_checkpoint(s.current()->system, ts);
        auto e = std::make_shared<const entry>(make_compaction_entry(
            s.log_.new_id(), s.log_.leaf_id(), ts, result.summary, first_kept,
            static_cast<double>(result.tokens_before), details, from_hook,
            total_usage ? std::optional(usage_to_json(*total_usage)) : std::nullopt, std::move(checkpoint)
        ));
        std::vector<entry_ptr> next_path(path.begin(), path.end());
        next_path.push_back(e);
        auto next = snapshot_from_context(build_session_context(next_path), s.log_.size() + 1, s.counter());
        if (auto r = s.store_->append(*e, diag); !r)
            throw compaction_failure{r.error(), diag.message};
        if (auto r = s.log_.append(e, diag); !r)
            throw compaction_failure{r.error(), diag.message};  // unreachable: id and parent were checked
        s.publish(std::move(next));

        out.compacted = true;
        out.will_retry = will_retry;
        out.result = result;
        out.entry_id = e->id;
        s.auto_failed_at_.reset();
        for (const auto& h : s.compacted_hooks_)
        {
            try
            {
                h(compacted_event{*e, from_hook});
            }
            catch (const std::exception& ex)
            {
                s.logger_->error("compacted hook threw: {}", ex.what());
            }
        }
        s.emit(compaction_end_event{reason, result, false, will_retry, std::nullopt});
        const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - op->started).count();
        s.logger_->info("compaction reason={} outcome=committed tokens_before={} tokens_after={} duration_ms={} model_calls={} entry={}",
                        to_string(reason), result.tokens_before, result.tokens_after, ms, op->model_calls, e->id);
        co_return result_type{error_code{}, std::move(out)};
    }
};

// ---------------------------------------------------------------------------------------------

session::session(executor_type ex, std::unique_ptr<store> st, session_config config, session_log log)
    : strand_(asio::make_strand(ex)), store_(std::move(st)), config_(std::move(config)), log_(std::move(log)),
      logger_(config_.logger ? config_.logger : spdlog::default_logger())
{
}

session::~session() = default;

const token_counter& session::counter() const
{
    return config_.counter ? *config_.counter : default_token_counter();
}

result<std::shared_ptr<session>> session::open(
    executor_type ex,
    std::unique_ptr<store> st,
    session_config config,
    diagnostics& diag,
    load_report* report
)
{
    load_report local;
    auto log = st->load(config.load, report ? *report : local, diag);
    if (!log)
        return log.error();
    auto redactor = redactor::create(config.redaction, diag);
    if (!redactor)
        return redactor.error();
    std::shared_ptr<session> s(new session(std::move(ex), std::move(st), std::move(config), std::move(*log)));
    s->redactor_ = std::move(*redactor);
    auto snap = make_snapshot(s->log_, s->counter(), diag);
    if (!snap)
        return snap.error();
    s->publish(std::move(*snap));
    return s;
}

result<std::shared_ptr<session>> session::create(
    executor_type ex,
    std::unique_ptr<store> st,
    const session_header& header,
    session_config config,
    diagnostics& diag
)
{
    if (auto r = st->write_header(header, diag); !r)
        return r.error();
    return open(std::move(ex), std::move(st), std::move(config), diag);
}

void session::emit(const session_event& e)
{
    for (const auto& l : listeners_)
    {
        try
        {
            l(e);
        }
        catch (const std::exception& ex)
        {
            logger_->error("event listener threw: {}", ex.what());
        }
    }
}

void session::append_impl(boost::json::object fields, asio::any_completion_handler<append_signature> h)
{
    asio::post(strand_, [self = shared_from_this(), fields = std::move(fields), h = std::move(h)]() mutable {
        session& s = *self;
        diagnostics diag;
        if (s.closed_)
            return complete(std::move(h), s.strand_, make_error_code(errc::session_closed), std::string());
        auto id = s.append_entry(std::move(fields), diag);
        if (!id)
            return complete(std::move(h), s.strand_, id.error(), std::string());
        complete(std::move(h), s.strand_, error_code{}, std::move(*id));
    });
}

result<std::string> session::append_entry(boost::json::object fields, diagnostics& diag)
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
    // Validate completely, then write: a rejected entry never reaches the file.
    if (auto r = detail::check_appendable(log_, *e, diag); !r)
        return r.error();
    if (auto r = store_->append(*e, diag); !r)
        return r.error();
    if (auto r = log_.append(e, diag); !r)
        return r.error();
    if (e->type == entry_type::context_edit)
    {
        // An edit changes an earlier entry's contribution: project again.
        auto snap = make_snapshot(log_, counter(), diag);
        if (!snap)
            return snap.error();
        publish(std::move(*snap));
    }
    else
        publish(extend_snapshot(*current(), *e, counter()));
    // Spec §10.1: a user message or a non-error assistant response resets the overflow attempt.
    if (is_user_or_ok_assistant(*e))
        overflow_attempted_ = false;
    auto_failed_at_.reset();  // new entries: automatic compaction may try again
    return e->id;
}

void session::branch_impl(std::string id, asio::any_completion_handler<void_signature> h)
{
    asio::post(strand_, [self = shared_from_this(), id = std::move(id), h = std::move(h)]() mutable {
        session& s = *self;
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

std::shared_ptr<session::initiation> session::hook_cancellation(asio::any_completion_handler<outcome_signature>& h)
{
    auto init = std::make_shared<initiation>();
    auto slot = asio::get_associated_cancellation_slot(h);
    if (slot.is_connected())
        slot.assign([init, weak = weak_from_this(), strand = strand_](asio::cancellation_type t) {
            if ((t & (asio::cancellation_type::terminal | asio::cancellation_type::partial | asio::cancellation_type::total)) ==
                asio::cancellation_type::none)
                return;
            init->cancelled = true;
            asio::post(strand, [init, weak] {
                if (auto self = weak.lock())
                    self->on_cancel(init);
            });
        });
    return init;
}

void session::on_cancel(const std::shared_ptr<initiation>& init)
{
    auto op = init->op;
    if (!op)
        return;  // not linked yet: the strand sees `cancelled` when it creates or joins the operation
    if (init->initiator)
    {
        op->aborted = true;
        op->signal.emit(asio::cancellation_type::terminal);
        return;
    }
    for (auto it = op->waiters.begin(); it != op->waiters.end(); ++it)
        if (it->id == init->waiter_id)
        {
            // A joined caller: only its wait ends.
            complete(std::move(it->handler), strand_, make_error_code(errc::cancelled), compaction_outcome{});
            op->waiters.erase(it);
            return;
        }
}

void session::check_impl(message m, bool skip_aborted, asio::any_completion_handler<outcome_signature> h)
{
    auto init = hook_cancellation(h);
    asio::post(strand_, [self = shared_from_this(), m = std::move(m), skip_aborted, h = std::move(h), init]() mutable {
        self->evaluate(m, skip_aborted, std::move(h), init);
    });
}

void session::before_prompt_impl(asio::any_completion_handler<outcome_signature> h)
{
    auto init = hook_cancellation(h);
    asio::post(strand_, [self = shared_from_this(), h = std::move(h), init]() mutable {
        const auto last = self->current()->last_assistant();
        if (!last)
            return complete(std::move(h), self->strand_, error_code{}, compaction_outcome{.message = "no assistant message yet"});
        self->evaluate(*last, false, std::move(h), init);
    });
}

void session::recover_overflow_impl(std::string error, asio::any_completion_handler<outcome_signature> h)
{
    auto init = hook_cancellation(h);
    asio::post(strand_, [self = shared_from_this(), error = std::move(error), h = std::move(h), init]() mutable {
        if (!is_overflow_error_message(error))
            return complete(std::move(h), self->strand_, make_error_code(errc::not_overflow),
                            compaction_outcome{.message = "the error is not a context overflow"});
        message m;
        m.role = role::assistant;
        m.role_name = "assistant";
        m.stop_reason = stop_reason::error;
        m.error_message = error;
        m.provider = self->config_.model.provider;
        m.model = self->config_.model.model_id;
        m.timestamp = static_cast<double>(
            std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count()
        );
        self->evaluate(m, true, std::move(h), init);
    });
}

void session::evaluate(
    const message& m,
    bool skip_aborted,
    asio::any_completion_handler<outcome_signature> h,
    std::shared_ptr<initiation> init
)
{
    auto none = [&](std::string why) {
        complete(std::move(h), strand_, error_code{}, compaction_outcome{.message = std::move(why)});
    };
    if (closed_)
        return complete(std::move(h), strand_, make_error_code(errc::session_closed), compaction_outcome{});
    if (!config_.settings.enabled)
        return none("automatic compaction is disabled");
    if (skip_aborted && m.stop_reason == stop_reason::aborted)
        return none("the response was aborted");
    const auto window = config_.model.context_window;
    const bool same_model = m.provider == config_.model.provider && m.model == config_.model.model_id;
    const auto snap = current();
    if (snap->compacted_at && m.timestamp <= *snap->compacted_at)
        return none("the message predates the latest compaction");
    if (current_)
        return none("a compaction is already running");

    // Delta §10.3 step 5: where the message is and what happened to it since.
    const auto where = locate_assistant(m);
    const bool explicit_error = m.stop_reason == stop_reason::error && is_context_overflow(m, window);  // patterns
    const bool overflow = same_model && ((explicit_error && where.retained) ||
                                         (where.usage_matches && is_context_overflow(m, window)));
    const bool length = same_model && where.projected && m.stop_reason == stop_reason::length &&
                        config_.model.max_output_tokens > 0 && m.usage &&
                        m.usage->output < config_.model.max_output_tokens;
    if (overflow || length)
    {
        if (m.stop_reason == stop_reason::stop)
            // A successful response that overflowed silently: compact, keep it, no retry (#5720).
            return start(compaction_reason::overflow, std::nullopt, false, std::move(h), std::move(init));
        if (overflow_attempted_)
        {
            const std::string why(overflow ? overflow_exhausted_message : truncated_exhausted_message);
            emit(compaction_end_event{compaction_reason::overflow, std::nullopt, false, false, why});
            return complete(std::move(h), strand_, make_error_code(errc::overflow_recovery_failed),
                            compaction_outcome{.reason = compaction_reason::overflow, .message = why});
        }
        overflow_attempted_ = true;
        // Omit the failed attempt (persisted, #11227), then compact; the omissions stay if the
        // compaction fails.
        diagnostics diag;
        if (where.entry)
            if (auto r = omit_attempt(*where.entry, diag); !r)
                return complete(std::move(h), strand_, r.error(), compaction_outcome{.message = diag.message});
        return start(compaction_reason::overflow, std::nullopt, true, std::move(h), std::move(init));
    }

    std::int64_t tokens = 0;
    const std::int64_t direct = m.usage ? calculate_context_tokens(*m.usage) : 0;
    if (snap->has_edits || m.stop_reason == stop_reason::error || direct == 0)
        tokens = snap->context_tokens();  // the projected estimate (pure without fresh usage, #8328)
    else
        tokens = direct;
    if (!should_compact(tokens, window, config_.settings))
        return none("under the threshold");
    if (auto_failed_at_ && *auto_failed_at_ == log_.size())
    {
        return complete(std::move(h), strand_, make_error_code(errc::auto_compaction_paused),
                        compaction_outcome{.reason = compaction_reason::threshold,
                                           .message = "the last automatic compaction failed on this path; waiting for new entries"});
    }
    start(compaction_reason::threshold, std::nullopt, false, std::move(h), std::move(init));
}

session::assistant_location session::locate_assistant(const message& m) const
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
        if (e && (*e)->message && (*e)->message->timestamp == m.timestamp && (*e)->message->stop_reason == m.stop_reason)
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

result<void> session::omit_attempt(std::size_t index, diagnostics& diag)
{
    auto e = log_.get(index, diag);
    if (!e)
        return e.error();
    std::vector<std::string> calls;
    for (const auto& b : (*e)->message->content.blocks)
        if (const auto* c = std::get_if<tool_call_block>(&b))
            calls.push_back(c->id);
    std::vector<std::string> targets{(*e)->id};
    // Its results: the tool results after it, up to the next assistant, that answer its calls.
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
            targets.push_back((*r)->id);
    }
    for (const auto& id : targets)
        if (auto r = append_entry({{"type", "context_edit"}, {"targetId", id}, {"replacement", nullptr}}, diag); !r)
            return r.error();
    return {};
}

void session::between_turns_impl(asio::any_completion_handler<outcome_signature> h)
{
    auto init = hook_cancellation(h);
    asio::post(strand_, [self = shared_from_this(), h = std::move(h), init]() mutable {
        session& s = *self;
        auto none = [&](std::string why) {
            complete(std::move(h), s.strand_, error_code{}, compaction_outcome{.message = std::move(why)});
        };
        if (s.closed_)
            return complete(std::move(h), s.strand_, make_error_code(errc::session_closed), compaction_outcome{});
        if (!s.config_.settings.enabled)
            return none("automatic compaction is disabled");
        if (s.config_.model.context_window <= 0)
            return none("no context window is configured");
        if (s.current_)
            return none("a compaction is already running");
        // Delta §10.1: the projected estimate, so a large new tool result is measured before it is sent.
        if (!should_compact(s.current()->context_tokens(), s.config_.model.context_window, s.config_.settings))
            return none("under the threshold");
        s.start(compaction_reason::threshold, std::nullopt, false, std::move(h), init);
    });
}

void session::compact_impl(std::optional<std::string> instr, asio::any_completion_handler<outcome_signature> h)
{
    auto init = hook_cancellation(h);
    asio::post(strand_, [self = shared_from_this(), instr = std::move(instr), h = std::move(h), init]() mutable {
        session& s = *self;
        if (s.closed_)
            return complete(std::move(h), s.strand_, make_error_code(errc::session_closed), compaction_outcome{});
        s.turn_abort_.emit(asio::cancellation_type::terminal);  // interrupt the running turn
        if ((s.current_ && s.current_->reason == compaction_reason::manual) || s.next_)
        {
            // Join the running (or pending) manual compaction: one compaction, one result for all.
            auto op = s.next_ ? s.next_ : s.current_;
            if (init->cancelled)
                return complete(std::move(h), s.strand_, make_error_code(errc::cancelled), compaction_outcome{});
            init->op = op;
            init->waiter_id = op->next_id++;
            op->waiters.push_back({init->waiter_id, std::move(h)});
            return;
        }
        if (s.current_)
        {
            // A manual compaction aborts a running automatic one and starts its own once the
            // automatic one has unwound, so lifecycles never overlap.
            if (!s.next_)
            {
                s.next_ = std::make_shared<operation>();
                s.next_->reason = compaction_reason::manual;
                s.next_->instructions = std::move(instr);
            }
            s.add_initiator(s.next_, std::move(h), init);
            s.current_->aborted = true;
            s.current_->signal.emit(asio::cancellation_type::terminal);
            return;
        }
        s.start(compaction_reason::manual, std::move(instr), false, std::move(h), init);
    });
}

void session::add_initiator(
    const std::shared_ptr<operation>& op,
    asio::any_completion_handler<outcome_signature> h,
    const std::shared_ptr<initiation>& init
)
{
    init->op = op;
    init->initiator = true;
    init->waiter_id = op->next_id++;
    if (init->cancelled)
        op->aborted = true;  // cancelled before the strand got here: the transaction unwinds at once
    op->waiters.push_back({init->waiter_id, std::move(h)});
}

void session::start(
    compaction_reason reason,
    std::optional<std::string> instr,
    bool will_retry,
    asio::any_completion_handler<outcome_signature> h,
    std::shared_ptr<initiation> init
)
{
    auto op = std::make_shared<operation>();
    op->reason = reason;
    op->instructions = std::move(instr);
    op->will_retry = will_retry;
    add_initiator(op, std::move(h), init);
    launch(op);
}

void session::launch(std::shared_ptr<operation> op)
{
    current_ = op;
    op->started = std::chrono::steady_clock::now();
    asio::co_spawn(
        strand_,
        transaction::run(shared_from_this(), op, op->reason, op->instructions, op->will_retry),
        asio::bind_cancellation_slot(
            op->signal.slot(),
            [self = shared_from_this(), op](std::exception_ptr ep, transaction::result_type r) {
                if (ep)
                    r = {make_error_code(errc::io_error), compaction_outcome{.attempted = true, .message = "internal error"}};
                if (self->current_ == op)
                    self->current_.reset();
                for (auto& w : op->waiters)
                    complete(std::move(w.handler), self->strand_, r.first, r.second);
                op->waiters.clear();
                if (!self->current_ && self->next_)
                {
                    auto next = std::move(self->next_);
                    self->next_.reset();
                    self->launch(std::move(next));  // an aborted pending op unwinds at once
                }
            }
        )
    );
}

void session::abort_compaction()
{
    asio::post(strand_, [self = shared_from_this()] {
        if (self->next_)
            self->next_->aborted = true;
        if (self->current_)
        {
            self->current_->aborted = true;
            self->current_->signal.emit(asio::cancellation_type::terminal);
        }
    });
}

void session::close()
{
    asio::post(strand_, [self = shared_from_this()] {
        self->closed_ = true;
        if (self->next_)
            self->next_->aborted = true;
        if (self->current_)
        {
            self->current_->aborted = true;
            self->current_->signal.emit(asio::cancellation_type::terminal);
        }
        self->turn_abort_.emit(asio::cancellation_type::terminal);
    });
}

}  // namespace agentctx::runtime
