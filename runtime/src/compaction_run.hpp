// A compaction as one run object: plan, hooks, summarize, validate and commit over a narrow view of the
// session.
#pragma once

#include "background_policy.hpp"
#include "compaction_coordinator.hpp"
#include "compaction_ledger.hpp"
#include "failure_suppression.hpp"
#include "hook_set.hpp"
#include "model_budgets.hpp"
#include "write_path.hpp"

#include <agentctx/compaction/prepare.hpp>
#include <agentctx/compaction/recall.hpp>
#include <agentctx/compaction/redaction.hpp>
#include <agentctx/providers/summarizer.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/strand.hpp>
#include <boost/json/object.hpp>
#include <boost/system/result.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace agentctx::runtime::detail {

/// The one running compaction: what it was asked, its cancellation signal, its counters.
struct compaction_job
{
    operation_id id = 0;
    operation_request request;
    boost::asio::cancellation_signal signal;  ///< emitted on the strand only
    std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
    int model_calls = 0;
    bool start_emitted = false;
    bool from_hook = false;        ///< a before_compact hook supplied (or vetoed) the result
    compaction_evidence evidence;  ///< method, usage and pieces, reported at the end either way
    /// A prepared background result this operation committed before compacting the remainder.
    std::optional<compaction_outcome> prepared_commit;
    /// The prefix the plan would summarize, under which settings: what a failure pauses.
    std::optional<prefix_key> prefix;
};

/// The messages of a projected range, without their entry ids.
std::vector<std::shared_ptr<const compaction::message>> messages_of(
    std::span<const compaction::context_message> v
);

/// The id of the latest compaction on `path`, if any.
std::optional<std::string> previous_compaction_id(const std::vector<compaction::entry_ptr>& path);

/**
 * @brief What a compaction may touch of its session: a read-only view of the log and the
 * settings, the hooks, the redactor, the compaction ledger and the write path.
 *
 * The session builds one per run from its parts; the run never sees the session itself.
 */
class run_context
{
public:
    /// Appends one entry as an append would (validated in the write turn): a piece's progress.
    using append_fn =
        std::function<void(boost::json::object, boost::asio::any_completion_handler<append_signature>)>;

    run_context(
        write_path& writes,
        const model_budgets& budgets,
        const hook_set& hooks,
        const compaction::redactor& redactor,
        compaction_ledger& ledger,
        compaction_coordinator& coordinator,
        const bool& closed,
        append_fn append
    )
        : writes_(&writes), budgets_(&budgets), hooks_(&hooks), redactor_(&redactor), ledger_(&ledger),
          coordinator_(&coordinator), closed_(&closed), append_(std::move(append))
    {}

    const compaction::session_log& log() const noexcept { return writes_->log(); }
    std::shared_ptr<const snapshot> current() const noexcept { return writes_->current(); }
    const model_budgets& budgets() const noexcept { return *budgets_; }
    const session_config& config() const noexcept { return budgets_->config(); }
    const compaction::token_counter& counter() const { return budgets_->counter(); }
    std::int64_t threshold() const noexcept { return budgets_->threshold(); }
    const hook_set& hooks() const noexcept { return *hooks_; }
    void emit(const session_event& e) const { hooks_->emit(e); }
    spdlog::logger& logger() const noexcept { return hooks_->logger(); }
    const compaction::redactor& redaction() const noexcept { return *redactor_; }
    compaction_ledger& ledger() const noexcept { return *ledger_; }
    write_path& writes() const noexcept { return *writes_; }
    bool closed() const noexcept { return *closed_; }
    /// The operation was aborted (abort_compaction, close, a manual compaction's preemption).
    bool aborted(operation_id id) const { return coordinator_->aborted(id); }
    /// The prepared result is taken (committed or discarded): the lifecycle forgets it.
    void consume_prepared() const { coordinator_->consume_prepared(); }
    /// The operation was aborted because a newer one replaced it.
    bool superseded(operation_id id) const { return coordinator_->superseded(id); }
    void append(boost::json::object fields, boost::asio::any_completion_handler<append_signature> h) const
    {
        append_(std::move(fields), std::move(h));
    }

private:
    write_path* writes_;
    const model_budgets* budgets_;
    const hook_set* hooks_;
    const compaction::redactor* redactor_;
    compaction_ledger* ledger_;
    compaction_coordinator* coordinator_;
    const bool* closed_;
    append_fn append_;
};

/// A compaction from plan to report: each step returns its failure; `attempt` tells the story.
class compaction_run
{
public:
    using result_type = std::pair<boost::system::error_code, compaction_outcome>;

    /// Plans, runs the hooks, summarizes, revalidates, builds and commits; reports the outcome
    /// (events, hooks, log line) either way. Runs on the session's strand; `keep_alive` owns the
    /// parts `cx` refers to.
    /// @par Per-operation cancellation
    /// `terminal` (bound to the job's signal): the model request stops and the run completes
    /// with `cancelled`; nothing is written after a cancellation.
    static boost::asio::awaitable<result_type> run(
        std::shared_ptr<const void> keep_alive, run_context cx, std::shared_ptr<compaction_job> job
    );

    /// Reports a prepared background result that is dropped without being committed.
    static void report_discard(const run_context& cx, compaction_job& background, discard_reason why);

    friend struct prepared_result;

private:
    /// Why a step stopped the run.
    struct failure
    {
        boost::system::error_code ec;
        std::string message;
        bool from_hook = false;
        /// An automatic compaction with nothing to prepare: no events, no hooks (Pi 1.6).
        bool silent = false;
    };
    template <class T>
    using step = boost::system::result<T, failure>;

    /// What planning chose, against the path it saw.
    struct plan
    {
        std::optional<std::string> leaf;
        std::vector<compaction::entry_ptr> path;
        compaction::compaction_preparation prep;
    };
    /// What the model (or a hook) wrote, scrubbed of secrets.
    struct summaries
    {
        std::optional<compaction::compaction_result> custom;  ///< a before_compact hook's result
        std::optional<std::string> history, prefix;
        std::optional<compaction::usage> history_usage, prefix_usage;
        std::map<std::string, std::size_t> redactions;
        std::optional<boost::json::object> native;  ///< details.agentctx.native
        /// The history is Anthropic's compaction block: it covers the whole window, turn prefix included.
        bool native_covers_window = false;
        /// The host's references to the original range (details.agentctx.evidence).
        std::vector<compaction::evidence_reference> evidence;
        /// The requests the history and turn-prefix replies answered (the recall gate's follow-up
        /// extends one); none for a history summarized in pieces.
        std::optional<compaction::summary_prompt> history_request, prefix_request;
        /// The user rules the checkpoint carries forward (details.agentctx.recall.rules); nullopt:
        /// the recall gate did not run.
        std::optional<std::vector<std::string>> recall_rules;
    };
    /// The current path, against which the result is validated and committed.
    struct revalidated
    {
        std::vector<compaction::entry_ptr> path;
        std::size_t kept_index = 0;
        std::string first_kept;
    };
    /// A piecewise history summary: the pieces still to send and the note they continue.
    struct piece_run
    {
        std::vector<compaction::summary_piece> pieces;
        std::optional<std::string> note;  ///< the running note (the previous summary, or resumed progress)
    };
    using scrub_fn = std::function<void(std::string&)>;
    struct committed
    {
        compaction::entry_ptr entry;
        compaction::compaction_result result;
    };

    /// Steps 1-4 of every compaction, foreground or background: what they produced.
    struct summarized
    {
        plan p;
        std::shared_ptr<store_lease> lease;  ///< held until the run ends
        summaries sum;
        std::string first_kept;  ///< the plan's, or a hook's result's
    };

    // The steps, in order. Coroutine steps take references: their caller awaits them at once.
    boost::asio::awaitable<result_type> go();
    boost::asio::awaitable<step<committed>> attempt();
    boost::asio::awaitable<step<summarized>> plan_and_summarize(
        const compaction::compaction_settings* settings = nullptr
    );
    /// `settings`: planning settings other than the session's (a background cut), else nullptr.
    step<plan> plan_compaction(const compaction::compaction_settings* settings = nullptr);
    /// Keys the plan's prefix on the job; an automatic compaction of a prefix whose last attempt
    /// failed deterministically under the same settings stops here, quietly (no model call).
    step<void> check_paused(const plan& p);
    /// The before_compact hooks, awaited in registration order; a cancellation while one runs
    /// stops the compaction after it returns.
    /// A hook's result and the usage its decision reported.
    struct hook_result
    {
        compaction::compaction_result result;
        std::optional<compaction::usage> usage;
    };
    boost::asio::awaitable<step<std::optional<hook_result>>> before_hooks(const plan& p);
    /// hook_cut.cpp: a hook's `first_kept_entry_id` checked against the plan's cut-point rules
    /// (agentctx mode); `hook_invalid_cut` naming the entry and why.
    step<void> check_hook_cut(const plan& p, const std::string& first_kept);
    /// preserve_evidence.cpp: the host keeps the range about to be summarized (session_config::
    /// preserve_evidence), for a compaction keeping from `first_kept`; none configured: no references.
    boost::asio::awaitable<step<std::vector<compaction::evidence_reference>>> preserve_evidence(
        const std::string& first_kept
    );
    boost::asio::awaitable<step<summaries>> summarize(const plan& p, std::optional<hook_result> custom);
    /// recall_gate.cpp: the span's probes checked against a validated portable summary; `repair`
    /// sends one follow-up in the same conversation and adds the rules still missing verbatim.
    /// Sets evidence.recall and `sum.recall_rules`; fails only when cancelled.
    boost::asio::awaitable<step<void>> recall_gate(const plan& p, summaries& sum);
    /// The rules carried forward and the counts in the evidence.
    void finish_recall(
        const std::vector<compaction::recall_probe>& probes,
        const compaction::recall_counts& counts,
        summaries& sum
    );

    // summarize's strategies, in the order it tries them: a before_compact hook's result, the
    // provider's native compaction, then portable summaries (the history in pieces, or in one
    // request; a split turn's prefix in its own request, after or beside the history's).
    step<void> accept_hook_summary(hook_result custom, const scrub_fn& scrub, summaries& out);
    /// Keeps the native state; true when the reply's readable block is the whole summary (Anthropic).
    bool adopt_native_reply(providers::native_reply reply, summaries& out);
    boost::asio::awaitable<step<void>> summarize_portable(
        const plan& p, const scrub_fn& scrub, summaries& out
    );
    /// True when the history went out piece by piece (then it needs no single request).
    boost::asio::awaitable<step<bool>> summarize_history_in_pieces(
        const plan& p, const scrub_fn& scrub, summaries& out
    );
    /// The history and turn-prefix prompts, scrubbed (the history one empty when not needed).
    std::pair<compaction::summary_prompt, compaction::summary_prompt> request_prompts(
        const compaction::compaction_preparation& prep, bool need_history, const scrub_fn& scrub
    );
    boost::asio::awaitable<step<void>> request_together(
        compaction::summary_prompt hp, compaction::summary_prompt pp, summaries& out
    );
    boost::asio::awaitable<step<void>> request_in_turn(
        std::optional<compaction::summary_prompt> hp,
        std::optional<compaction::summary_prompt> pp,
        summaries& out
    );
    // cache_friendly.cpp (agentctx mode): the history and turn-prefix requests as the
    // conversation's own request plus the checkpoint instructions, when the setting or its default
    // asks for them and they fit the window; a refused reply falls back to the standalone path.
    // Sets evidence.request.
    struct cache_friendly_calls
    {
        std::optional<compaction::summary_prompt> history, prefix;
    };
    cache_friendly_calls plan_cache_friendly(
        const plan& p, const scrub_fn& scrub, bool need_history, bool need_prefix
    );
    /// The standalone path (the history in pieces or in one request, the turn prefix in its own).
    boost::asio::awaitable<step<void>> summarize_standalone(
        const plan& p, const scrub_fn& scrub, bool history, bool prefix, summaries& out
    );
    boost::asio::awaitable<step<void>> summarize_cache_friendly(
        const plan& p, const scrub_fn& scrub, cache_friendly_calls calls, summaries& out
    );
    /// The summaries scrubbed again, a lone turn prefix on the previous summary, native usage added.
    void finish_portable(
        const compaction::compaction_preparation& prep,
        const std::optional<compaction::usage>& native_usage,
        const scrub_fn& scrub,
        summaries& out
    );
    step<revalidated> revalidate(const plan& p, std::string first_kept);
    /// `bounded` = false: the result may leave the context over the threshold (a prepared
    /// background result, judged by judge_size instead).
    step<compaction::compaction_result> build(
        const plan& p, const revalidated& v, const summaries& sum, bool bounded = true
    );
    /// What the write turn found: the current path and the result validated against it, for the
    /// operation `job` (the run's own, or a prepared background one's) with its summaries.
    struct commit_input
    {
        revalidated v;
        compaction::compaction_result result;
        const compaction_job* job = nullptr;
        const summaries* sum = nullptr;
    };
    /// Inside the write turn: still wanted, still valid, built; nullopt = write nothing (the
    /// caller's capture says why).
    using decide_fn = std::function<step<std::optional<commit_input>>()>;
    /// The compaction entry for `result` against the current path, redacted, and the snapshot
    /// after it; refused when the line would not fit the log's line limit.
    step<commit_plan> make_entry(
        const compaction_job& j,
        const compaction::compaction_result& result,
        const revalidated& v,
        const summaries& sum
    ) const;
    /// `r` as the entry `stored` keeps it: its summary, and its details and pins redacted.
    compaction::compaction_result stored_result(
        compaction::compaction_result r, const compaction::entry& stored
    ) const;
    /// One write turn (write_path::async_commit): `decide`, then the one compaction entry,
    /// written and published. nullopt: `decide` chose to write nothing.
    boost::asio::awaitable<step<std::optional<committed>>> commit(decide_fn decide);
    /// A shared store's compaction lease (nullptr for a single-writer store).
    boost::asio::awaitable<step<std::shared_ptr<store_lease>>> take_lease();

    /// What one portable history request may carry, as measured before summarizing.
    struct portable_bound
    {
        std::size_t limit = 0;     ///< source bytes per request (0 = unbounded)
        std::optional<bool> fits;  ///< the exact count's verdict on the whole prefix (nullopt: estimate)
    };

    // piecewise.cpp: the prefix's preflight (exact count when offered), whether the history goes
    // piecewise (and from which progress), the pieces in order with the running note, and each
    // accepted piece's persistence.
    boost::asio::awaitable<step<portable_bound>> preflight(const plan& p);
    /// A split turn whose prefix alone is over the portable bound: the prefix joins the history
    /// (summarized in pieces like it), so no request carries more than the bound.
    void fold_oversized_turn_prefix(plan& p);
    step<std::optional<piece_run>> choose_pieces(const plan& p, const portable_bound& bound);
    boost::asio::awaitable<step<compaction::summary_output>> summarize_pieces(
        const plan& p, piece_run run, const scrub_fn& scrub
    );
    boost::asio::awaitable<step<bool>> persist_piece(
        const compaction::progress_record& r, progress_position pos
    );

    // native.cpp: provider-native compaction of the whole eligible window when the summarizer
    // offers it and the window qualifies; nullopt = portable (evidence.native_selection says why).
    boost::asio::awaitable<step<std::optional<providers::native_reply>>> try_native(const plan& p);
    /// The adopted item of operation_request::adopted as a native reply (no request is sent).
    step<std::optional<providers::native_reply>> adopted_reply();
    /// An adoption with a covered leaf: the id of the entry after it on `path` (the cut), or
    /// `adoption_invalid_cut` when the leaf is not on the path or the reply does not follow it.
    step<std::string> entry_after_covered(const std::vector<compaction::entry_ptr>& path) const;
    boost::asio::awaitable<step<std::pair<std::int64_t, std::string>>> measure_native(
        const providers::native_request& req
    );
    boost::asio::awaitable<step<std::optional<providers::native_reply>>> call_native(
        providers::native_request req, const std::string& measured
    );

    // One model request, validated; the `_or_throw` form feeds Asio's `&&`, which cancels the
    // sibling request only when one throws (the failure itself goes to `first`).
    boost::asio::awaitable<step<compaction::summary_output>> request(
        compaction::summary_prompt prompt, compaction::summary_kind kind
    );
    boost::asio::awaitable<compaction::summary_output> request_or_throw(
        compaction::summary_prompt prompt, compaction::summary_kind kind, std::optional<failure>& first
    );

    // background.cpp: the background operation (plan, hooks, summarize, validate, hold) and the
    // use of its prepared result by the next automatic operation.
    boost::asio::awaitable<result_type> run_background(const std::shared_ptr<compaction_job>& job);
    boost::asio::awaitable<step<std::shared_ptr<prepared_result>>> prepare(
        const std::shared_ptr<compaction_job>& job
    );
    /// Commits (or discards) the prepared result; nullopt = nothing committed, compact in the
    /// foreground (unless the operation is `prepared_only`).
    boost::asio::awaitable<std::optional<result_type>> use_prepared();
    /// What commit_prepared did: nothing (discarded or cancelled: `result` says which, `go_on`
    /// whether a foreground pass follows), or a commit (`go_on`: the remainder is still over).
    struct prepared_use
    {
        std::optional<result_type> result;
        bool go_on = false;
    };
    boost::asio::awaitable<prepared_use> commit_prepared();
    /// Inside the write turn: the taken result checked against the path and the threshold as
    /// they are now; nullopt = discarded (reported), `verdict` says whether a foreground pass follows.
    std::optional<commit_input> judge_prepared(prepared_result& p, size_verdict& verdict);

    /// The job's evidence with its elapsed time, call count and (when it failed) the failure's code name.
    static compaction_evidence finished_evidence(
        const compaction_job& j, std::optional<boost::system::error_code> failed
    );
    bool still_wanted(boost::asio::cancellation_type cancelled);
    void emit_start();
    /// Reports the outcome (events, the compacted or compact_failed hooks awaited, the log line).
    /// A cancellation while a hook runs changes nothing of the outcome reported.
    boost::asio::awaitable<result_type> succeed(const compaction_job& j, committed c);
    /// An adoption's outcome: whether the provider's item is the state, or why not (a hook's result).
    static void record_adoption(const compaction_job& j, compaction_outcome& out);
    boost::asio::awaitable<result_type> fail(const compaction_job& j, failure f);

    compaction_run(run_context cx, std::shared_ptr<compaction_job> job);

    run_context cx_;
    std::shared_ptr<compaction_job> job_;  ///< this run's operation
    compaction_job& j_;
};

/// A background compaction's validated result, held on the strand until it is committed or
/// discarded, bound to the path it was planned on (background_policy.hpp).
struct prepared_result
{
    std::shared_ptr<compaction_job> job;  ///< its operation: evidence, calls, start time
    compaction_run::plan plan;
    compaction_run::summaries summaries;
    std::string first_kept;
    detail::prepared_binding binding;
};

}  // namespace agentctx::runtime::detail
