// Background compaction: summarize ahead of the threshold, hold the validated result, commit it later.
#include "compaction_run.hpp"

#include <agentctx/compaction/cancelled.hpp>
#include <agentctx/compaction/prepare.hpp>
#include <agentctx/runtime/checkpoint.hpp>
#include <agentctx/runtime/error.hpp>

#include <boost/asio/async_result.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <spdlog/spdlog.h>

namespace agentctx::runtime::detail {

namespace asio = boost::asio;
using boost::system::error_code;
using namespace compaction;

asio::awaitable<compaction_run::result_type> compaction_run::run_background(
    const std::shared_ptr<compaction_job>& job
)
{
    compaction_job& j = *job;
    std::optional<step<std::shared_ptr<prepared_result>>> r;
    try
    {
        r.emplace(co_await prepare(job));
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
            why = cx_.superseded(j.id) ? discard_reason::superseded
                  : cx_.closed()       ? discard_reason::closed
                                       : discard_reason::cancelled;
        j.evidence.discarded = to_string(why);
        emit_start();
        co_return co_await fail(j, f);
    }
    // Held on the strand; session_core::finish tells the coordinator it is prepared.
    cx_.ledger().hold(std::move(**r));
    const auto& p = *cx_.ledger().prepared();
    const auto ev = finished_evidence(j, std::nullopt);
    cx_.emit(compaction_prepared_event{
        p.first_kept, p.binding.kept_index, p.plan.prep.tokens_before, ev.elapsed_ms, ev.calls});
    cx_.logger().info(
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

asio::awaitable<compaction_run::step<std::shared_ptr<prepared_result>>> compaction_run::prepare(
    const std::shared_ptr<compaction_job>& job
)
{
    // 1-4. As a foreground compaction, planned as of now (the turn that started us has already
    // returned). The cut keeps keepRecentTokens as counted at the threshold: what arrives until
    // then joins the kept suffix.
    auto settings = cx_.config().settings;
    const auto threshold = cx_.threshold();
    settings.keep_recent_tokens =
        background_keep(settings.keep_recent_tokens, cx_.current()->context_tokens(), threshold);
    auto r = co_await plan_and_summarize(&settings);
    if (!r)
        co_return r.error();
    // 5. Validated as a commit would be, against the path as it is now (what was appended since
    // the plan is in its kept suffix); nothing is written.
    auto now = revalidate(r->p, r->first_kept);
    if (!now)
        co_return now.error();
    if (auto built = build(r->p, *now, r->sum); !built)
        co_return built.error();
    auto out = std::make_shared<prepared_result>();
    out->job = job;
    out->first_kept = std::move(r->first_kept);
    for (const auto& e : now->path)
        out->binding.planned_path.push_back(e->id);
    out->binding.kept_index = now->kept_index;
    out->binding.config_digest = config_digest_of(cx_.config());
    out->plan = std::move(r->p);
    out->summaries = std::move(r->sum);
    co_return out;
}

asio::awaitable<std::optional<compaction_run::result_type>> compaction_run::use_prepared()
{
    const result_type nothing{
        error_code{}, compaction_outcome{.reason = j_.request.reason, .message = "nothing prepared"}};
    if (j_.request.reason == compaction_reason::manual)
        co_return std::nullopt;
    if (!cx_.ledger().prepared())
        co_return j_.request.prepared_only ? std::optional(nothing) : std::nullopt;
    auto used = co_await commit_prepared();
    if (j_.request.prepared_only)
        co_return used.result.value_or(nothing);  // a commit when ready never compacts in the foreground
    if (!used.go_on)
        co_return std::move(used.result);
    if (used.result)
        j_.prepared_commit = used.result->second;  // the outcome if the remainder has nothing to compact
    co_return std::nullopt;
}

asio::awaitable<compaction_run::prepared_use> compaction_run::commit_prepared()
{
    // 1. A shared store's lease, then the write turn: no append lands between the checks and the
    // swap, and no co_await either except the store's write (as a foreground commit).
    auto lease = co_await take_lease();
    if (!lease && agentctx::is_cancelled(lease.error().ec))
        co_return prepared_use{result_type{
            lease.error().ec, compaction_outcome{.reason = j_.request.reason, .message = "cancelled"}}};
    if (!lease)
        co_return prepared_use{std::nullopt, true};  // the foreground pass meets the same refusal
    // 2. In the write turn: taken, from here it is committed or discarded, never used again.
    const auto cs = co_await asio::this_coro::cancellation_state;
    std::optional<prepared_use> early;
    std::shared_ptr<prepared_result> p;
    auto verdict = size_verdict::discard;
    auto decide = [&]() -> step<std::optional<commit_input>> {
        // Cancelled while waiting: the prepared result stays for the next check.
        if (!still_wanted(cs.cancelled()) || cx_.closed())
        {
            early = prepared_use{result_type{
                make_error_code(errc::cancelled),
                compaction_outcome{.reason = j_.request.reason, .message = "cancelled"}}};
            return std::nullopt;
        }
        early = prepared_use{std::nullopt, true};  // unless it commits: the foreground pass follows
        if (!cx_.ledger().prepared())
            return std::nullopt;  // dropped while we waited
        p = cx_.ledger().take_prepared();
        cx_.consume_prepared();
        auto in = judge_prepared(*p, verdict);
        if (in)
            early.reset();
        return in;
    };
    // 3. The same one-entry commit as a foreground compaction, recorded as the background one's.
    auto e = co_await commit(decide);
    if (e && !*e)
        co_return std::move(*early);
    if (!e)
    {
        auto failed = co_await fail(*p->job, e.error());
        co_return prepared_use{std::move(failed)};
    }
    auto done = co_await succeed(*p->job, std::move(**e));
    done.second.reason = j_.request.reason;
    done.second.will_retry = j_.request.will_retry;
    co_return prepared_use{std::move(done), verdict == size_verdict::commit_then_foreground};
}

std::optional<compaction_run::commit_input> compaction_run::judge_prepared(
    prepared_result& p, size_verdict& verdict
)
{
    // Its prefix must still hold, and the result must still be worth committing now.
    compaction_job& bg = *p.job;
    if (const auto why = check_binding(p.binding, path_steps(cx_.log()), config_digest_of(cx_.config())))
    {
        report_discard(cx_, bg, *why);
        return std::nullopt;
    }
    auto v = revalidate(p.plan, p.first_kept);
    auto result = v ? build(p.plan, *v, p.summaries, false)
                    : step<compaction_result>(boost::system::in_place_error, v.error());
    const auto threshold = cx_.config().model.context_window > 0 ? cx_.threshold() : 0;
    verdict =
        result
            ? judge_size(
                  cx_.current()->context_tokens(), result->tokens_after, threshold, !j_.request.prepared_only
              )
            : size_verdict::discard;
    if (verdict == size_verdict::discard)
    {
        report_discard(cx_, bg, result ? discard_reason::over_threshold : discard_reason::failed);
        return std::nullopt;
    }
    return commit_input{std::move(*v), std::move(*result), &bg, &p.summaries};
}

void compaction_run::report_discard(const run_context& cx, compaction_job& background, discard_reason why)
{
    background.evidence.discarded = to_string(why);
    cx.emit(compaction_end_event{
        compaction_reason::background,
        std::nullopt,
        false,
        false,
        std::nullopt,
        background.evidence.discarded});
    const auto ev = finished_evidence(background, std::nullopt);
    cx.emit(compaction_finished_event{compaction_reason::background, ev});
    cx.logger().info(
        "compaction reason=background outcome=discarded discarded={} duration_ms={} model_calls={}",
        to_string(why),
        ev.elapsed_ms,
        ev.calls
    );
}

}  // namespace agentctx::runtime::detail
