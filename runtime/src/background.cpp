// Background compaction: summarize ahead of the threshold, hold the validated result, commit it later.
#include "transaction.hpp"

#include <agentctx/compaction/cancelled.hpp>
#include <agentctx/compaction/prepare.hpp>
#include <agentctx/runtime/checkpoint.hpp>
#include <agentctx/runtime/error.hpp>

#include <boost/asio/async_result.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <spdlog/spdlog.h>

namespace agentctx::runtime {

namespace asio = boost::asio;
using boost::system::error_code;
using detail::discard_reason;
using namespace compaction;

asio::awaitable<transaction::result_type> transaction::run_background(
    session_core& s, const std::shared_ptr<session_core::job>& job
)
{
    session_core::job& j = *job;
    std::optional<step<std::shared_ptr<session_core::prepared>>> r;
    try
    {
        r.emplace(co_await prepare(s, job));
    }
    catch (const std::exception& e)
    {
        r.emplace(boost::system::in_place_error, failure{make_error_code(errc::io_error), e.what()});
    }
    if (!*r)
    {
        const auto& f = r->error();
        if (f.silent)
            co_return result_type{error_code{}, compaction_outcome{.message = f.message}};
        auto why = discard_reason::failed;
        if (agentctx::is_cancelled(f.ec))
            why = s.coordinator_->superseded(j.id) ? discard_reason::superseded
                  : s.closed_                      ? discard_reason::closed
                                                   : discard_reason::cancelled;
        j.evidence.discarded = detail::to_string(why);
        emit_start(s, j);
        co_return co_await fail(s, j, f);
    }
    // Held on the strand; session_core::finish tells the coordinator it is prepared.
    s.prepared_ = std::move(**r);
    const auto& p = *s.prepared_;
    const auto ev = finished_evidence(j, std::nullopt);
    s.emit(compaction_prepared_event{
        p.first_kept, p.binding.kept_index, p.plan.prep.tokens_before, ev.elapsed_ms, ev.calls});
    s.logger_->info(
        "compaction reason=background outcome=prepared first_kept={} covered={} duration_ms={} "
        "model_calls={}",
        p.first_kept,
        p.binding.kept_index,
        ev.elapsed_ms,
        ev.calls
    );
    co_return result_type{
        error_code{},
        compaction_outcome{
            .attempted = true, .reason = compaction_reason::background, .message = "prepared"}};
}

asio::awaitable<transaction::step<std::shared_ptr<session_core::prepared>>> transaction::prepare(
    session_core& s, const std::shared_ptr<session_core::job>& job
)
{
    session_core::job& j = *job;
    // 1-4. As a foreground compaction, planned as of now (the turn that started us has already
    // returned). The cut keeps keepRecentTokens as counted at the threshold: what arrives until
    // then joins the kept suffix.
    auto settings = s.config_.settings;
    const auto threshold = s.threshold();
    settings.keep_recent_tokens =
        detail::background_keep(settings.keep_recent_tokens, s.current()->context_tokens(), threshold);
    auto r = co_await plan_and_summarize(s, j, &settings);
    if (!r)
        co_return r.error();
    // 5. Validated as a commit would be, against the path as it is now (what was appended since
    // the plan is in its kept suffix); nothing is written.
    auto now = revalidate(s, r->p, r->first_kept);
    if (!now)
        co_return now.error();
    if (auto built = build(s, r->p, *now, r->sum); !built)
        co_return built.error();
    auto out = std::make_shared<session_core::prepared>();
    out->job = job;
    out->first_kept = std::move(r->first_kept);
    for (const auto& e : now->path)
        out->binding.planned_path.push_back(e->id);
    out->binding.kept_index = now->kept_index;
    out->binding.config_digest = config_digest_of(s.config_);
    out->plan = std::move(r->p);
    out->summaries = std::move(r->sum);
    co_return out;
}

asio::awaitable<std::optional<transaction::result_type>> transaction::use_prepared(
    session_core& s, session_core::job& j
)
{
    const result_type nothing{
        error_code{}, compaction_outcome{.reason = j.request.reason, .message = "nothing prepared"}};
    if (j.request.reason == compaction_reason::manual)
        co_return std::nullopt;
    if (!s.prepared_)
        co_return j.request.prepared_only ? std::optional(nothing) : std::nullopt;
    auto used = co_await commit_prepared(s, j);
    if (j.request.prepared_only)
        co_return used.result.value_or(nothing);  // a commit when ready never compacts in the foreground
    if (!used.go_on)
        co_return std::move(used.result);
    if (used.result)
        j.prepared_commit = used.result->second;  // the outcome if the remainder has nothing to compact
    co_return std::nullopt;
}

asio::awaitable<transaction::prepared_use> transaction::commit_prepared(session_core& s, session_core::job& j)
{
    // 1. A shared store's lease, then the write turn: no append lands between the checks and the
    // swap, and no co_await either except the store's write (as a foreground commit).
    auto lease = co_await take_lease(s, j);
    if (!lease && agentctx::is_cancelled(lease.error().ec))
        co_return prepared_use{result_type{
            lease.error().ec, compaction_outcome{.reason = j.request.reason, .message = "cancelled"}}};
    if (!lease)
        co_return prepared_use{std::nullopt, true};  // the foreground pass meets the same refusal
    co_await asio::async_initiate<decltype(asio::use_awaitable), void()>(
        [&s](auto h) { s.enter_writes(std::move(h)); }, asio::use_awaitable
    );
    const write_turn turn(s);
    // Cancelled while waiting: the prepared result stays for the next check.
    if (!still_wanted(s, j, (co_await asio::this_coro::cancellation_state).cancelled()) || s.closed_)
        co_return prepared_use{result_type{
            make_error_code(errc::cancelled),
            compaction_outcome{.reason = j.request.reason, .message = "cancelled"}}};
    if (!s.prepared_)
        co_return prepared_use{std::nullopt, true};  // dropped while we waited
    // 2. Taken: from here it is committed or discarded, never used again.
    const auto p = std::move(s.prepared_);
    s.prepared_.reset();
    s.coordinator_->consume_prepared();
    session_core::job& bg = *p->job;
    if (const auto why =
            detail::check_binding(p->binding, detail::path_steps(s.log_), config_digest_of(s.config_)))
    {
        report_discard(s, bg, *why);
        co_return prepared_use{std::nullopt, true};
    }
    auto v = revalidate(s, p->plan, p->first_kept);
    auto result = v ? build(s, p->plan, *v, p->summaries, false)
                    : step<compaction_result>(boost::system::in_place_error, v.error());
    const auto& model = s.config_.model;
    const auto threshold = model.context_window > 0 ? s.threshold() : 0;
    const auto verdict =
        result ? detail::judge_size(
                     s.current()->context_tokens(), result->tokens_after, threshold, !j.request.prepared_only
                 )
               : detail::size_verdict::discard;
    if (verdict == detail::size_verdict::discard)
    {
        report_discard(s, bg, result ? discard_reason::over_threshold : discard_reason::failed);
        co_return prepared_use{std::nullopt, true};
    }
    // 3. The same one-entry commit as a foreground compaction, recorded as the background one's.
    auto e = co_await commit(s, bg, *result, *v, p->summaries);
    if (!e)
    {
        auto failed = co_await fail(s, bg, e.error());
        co_return prepared_use{std::move(failed)};
    }
    committed c{std::move(*e), std::move(*result)};  // named, not a temporary across the hooks' suspensions
    auto done = co_await succeed(s, bg, std::move(c));
    done.second.reason = j.request.reason;
    done.second.will_retry = j.request.will_retry;
    co_return prepared_use{std::move(done), verdict == detail::size_verdict::commit_then_foreground};
}

void transaction::report_discard(session_core& s, session_core::job& background, discard_reason why)
{
    background.evidence.discarded = detail::to_string(why);
    s.emit(compaction_end_event{
        compaction_reason::background,
        std::nullopt,
        false,
        false,
        std::nullopt,
        background.evidence.discarded});
    const auto ev = finished_evidence(background, std::nullopt);
    s.emit(compaction_finished_event{compaction_reason::background, ev});
    s.logger_->info(
        "compaction reason=background outcome=discarded discarded={} duration_ms={} model_calls={}",
        detail::to_string(why),
        ev.elapsed_ms,
        ev.calls
    );
}

}  // namespace agentctx::runtime
