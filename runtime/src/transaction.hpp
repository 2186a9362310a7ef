// The running compaction's state (session_core::job) and the transaction coroutine that the session launches.
#pragma once

#include "session_core.hpp"

#include "background_policy.hpp"
#include "compaction_coordinator.hpp"
#include "failure_suppression.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/system/result.hpp>

#include <map>
#include <vector>

#include <chrono>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>

namespace agentctx::runtime {

using detail::session_core;

/// The one running compaction: what it was asked, its cancellation signal, its counters.
struct session_core::job
{
    detail::operation_id id = 0;
    detail::operation_request request;
    boost::asio::cancellation_signal signal;  ///< emitted on the strand only
    std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
    int model_calls = 0;
    bool start_emitted = false;
    bool from_hook = false;        ///< a before_compact hook supplied (or vetoed) the result
    compaction_evidence evidence;  ///< method, usage and pieces, reported at the end either way
    /// A prepared background result this operation committed before compacting the remainder.
    std::optional<compaction_outcome> prepared_commit;
    /// The prefix the plan would summarize, under which settings: what a failure pauses.
    std::optional<detail::prefix_key> prefix;
};

/// The messages of a projected range, without their entry ids.
std::vector<std::shared_ptr<const compaction::message>> messages_of(
    std::span<const compaction::context_message> v
);

/// The id of the latest compaction on `path`, if any.
std::optional<std::string> previous_compaction_id(const std::vector<compaction::entry_ptr>& path);

/// The compaction transaction: steps over the session's core, each returning its failure.
struct transaction
{
    using result_type = std::pair<boost::system::error_code, compaction_outcome>;

    /// Plans, runs the hooks, summarizes, revalidates, builds and commits; reports the outcome
    /// (events, hooks, log line) either way. Runs on the session's strand.
    /// @par Per-operation cancellation
    /// `terminal` (bound to the job's signal): the model request stops and the transaction
    /// completes with `cancelled`; nothing is written after a cancellation.
    static boost::asio::awaitable<result_type> run(
        std::shared_ptr<session_core> self, std::shared_ptr<session_core::job> job
    );

    /// Reports a prepared background result that is dropped without being committed.
    static void report_discard(session_core& s, session_core::job& background, detail::discard_reason why);

    friend struct detail::session_core::prepared;

private:
    /// Why a step stopped the transaction.
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
        std::shared_ptr<store_lease> lease;  ///< held until the transaction ends
        summaries sum;
        std::string first_kept;  ///< the plan's, or a hook's result's
    };

    // The steps, in order. Coroutine steps take references: their caller awaits them at once.
    static boost::asio::awaitable<step<committed>> attempt(session_core& s, session_core::job& j);
    static boost::asio::awaitable<step<summarized>> plan_and_summarize(
        session_core& s, session_core::job& j, const compaction::compaction_settings* settings = nullptr
    );
    /// `settings`: planning settings other than the session's (a background cut), else nullptr.
    static step<plan> plan_compaction(
        session_core& s, const session_core::job& j, const compaction::compaction_settings* settings = nullptr
    );
    /// Keys the plan's prefix on the job; an automatic compaction of a prefix whose last attempt
    /// failed deterministically under the same settings stops here, quietly (no model call).
    static step<void> check_paused(session_core& s, session_core::job& j, const plan& p);
    /// The before_compact hooks, awaited in registration order; a cancellation while one runs
    /// stops the compaction after it returns.
    /// A hook's result and the usage its decision reported.
    struct hook_result
    {
        compaction::compaction_result result;
        std::optional<compaction::usage> usage;
    };
    static boost::asio::awaitable<step<std::optional<hook_result>>> before_hooks(
        session_core& s, const session_core::job& j, const plan& p
    );
    /// hook_cut.cpp: a hook's `first_kept_entry_id` checked against the plan's cut-point rules
    /// (agentctx mode); `hook_invalid_cut` naming the entry and why.
    static step<void> check_hook_cut(const session_core& s, const plan& p, const std::string& first_kept);
    /// preserve_evidence.cpp: the host keeps the range about to be summarized (session_config::
    /// preserve_evidence), for a compaction keeping from `first_kept`; none configured: no references.
    static boost::asio::awaitable<step<std::vector<compaction::evidence_reference>>> preserve_evidence(
        session_core& s, const session_core::job& j, const std::string& first_kept
    );
    static boost::asio::awaitable<step<summaries>> summarize(
        session_core& s, session_core::job& j, const plan& p, std::optional<hook_result> custom
    );

    // summarize's strategies, in the order it tries them: a before_compact hook's result, the
    // provider's native compaction, then portable summaries (the history in pieces, or in one
    // request; a split turn's prefix in its own request, after or beside the history's).
    static step<void> accept_hook_summary(
        session_core& s, session_core::job& j, hook_result custom, const scrub_fn& scrub, summaries& out
    );
    /// Keeps the native state; true when the reply's readable block is the whole summary (Anthropic).
    static bool adopt_native_reply(session_core::job& j, providers::native_reply reply, summaries& out);
    static boost::asio::awaitable<step<void>> summarize_portable(
        session_core& s, session_core::job& j, const plan& p, const scrub_fn& scrub, summaries& out
    );
    /// True when the history went out piece by piece (then it needs no single request).
    static boost::asio::awaitable<step<bool>> summarize_history_in_pieces(
        session_core& s, session_core::job& j, const plan& p, const scrub_fn& scrub, summaries& out
    );
    /// The history and turn-prefix prompts, scrubbed (the history one empty when not needed).
    static std::pair<compaction::summary_prompt, compaction::summary_prompt> request_prompts(
        const session_core& s,
        const session_core::job& j,
        const compaction::compaction_preparation& prep,
        bool need_history,
        const scrub_fn& scrub
    );
    static boost::asio::awaitable<step<void>> request_together(
        session_core& s,
        session_core::job& j,
        compaction::summary_prompt hp,
        compaction::summary_prompt pp,
        summaries& out
    );
    static boost::asio::awaitable<step<void>> request_in_turn(
        session_core& s,
        session_core::job& j,
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
    static cache_friendly_calls plan_cache_friendly(
        session_core& s,
        session_core::job& j,
        const plan& p,
        const scrub_fn& scrub,
        bool need_history,
        bool need_prefix
    );
    /// The standalone path (the history in pieces or in one request, the turn prefix in its own).
    static boost::asio::awaitable<step<void>> summarize_standalone(
        session_core& s,
        session_core::job& j,
        const plan& p,
        const scrub_fn& scrub,
        bool history,
        bool prefix,
        summaries& out
    );
    static boost::asio::awaitable<step<void>> summarize_cache_friendly(
        session_core& s,
        session_core::job& j,
        const plan& p,
        const scrub_fn& scrub,
        cache_friendly_calls calls,
        summaries& out
    );
    /// The summaries scrubbed again, a lone turn prefix on the previous summary, native usage added.
    static void finish_portable(
        session_core::job& j,
        const compaction::compaction_preparation& prep,
        const std::optional<compaction::usage>& native_usage,
        const scrub_fn& scrub,
        summaries& out
    );
    static step<revalidated> revalidate(session_core& s, const plan& p, std::string first_kept);
    /// `bounded` = false: the result may leave the context over the threshold (a prepared
    /// background result, judged by judge_size instead).
    static step<compaction::compaction_result> build(
        session_core& s, const plan& p, const revalidated& v, const summaries& sum, bool bounded = true
    );
    static boost::asio::awaitable<step<compaction::entry_ptr>> commit(
        session_core& s,
        const session_core::job& j,
        const compaction::compaction_result& result,
        const revalidated& v,
        const summaries& sum
    );
    /// A shared store's compaction lease (nullptr for a single-writer store).
    static boost::asio::awaitable<step<std::shared_ptr<store_lease>>> take_lease(
        session_core& s, const session_core::job& j
    );

    /// The session's write turn, held from revalidation to the swap.
    struct write_turn
    {
        explicit write_turn(session_core& s) : s(&s) {}
        write_turn(const write_turn&) = delete;
        write_turn& operator=(const write_turn&) = delete;
        ~write_turn() { s->leave_writes(); }
        session_core* s;
    };

    /// What one portable history request may carry, as measured before summarizing.
    struct portable_bound
    {
        std::size_t limit = 0;     ///< source bytes per request (0 = unbounded)
        std::optional<bool> fits;  ///< the exact count's verdict on the whole prefix (nullopt: estimate)
    };

    // piecewise.cpp: the prefix's preflight (exact count when offered), whether the history goes
    // piecewise (and from which progress), the pieces in order with the running note, and each
    // accepted piece's persistence.
    static boost::asio::awaitable<step<portable_bound>> preflight(
        session_core& s, session_core::job& j, const plan& p
    );
    /// A split turn whose prefix alone is over the portable bound: the prefix joins the history
    /// (summarized in pieces like it), so no request carries more than the bound.
    static void fold_oversized_turn_prefix(session_core& s, session_core::job& j, plan& p);
    static step<std::optional<piece_run>> choose_pieces(
        session_core& s, session_core::job& j, const plan& p, const portable_bound& bound
    );
    static boost::asio::awaitable<step<compaction::summary_output>> summarize_pieces(
        session_core& s, session_core::job& j, const plan& p, piece_run run, const scrub_fn& scrub
    );
    static boost::asio::awaitable<step<bool>> persist_piece(
        session_core& s, session_core::job& j, const compaction::progress_record& r, progress_position pos
    );

    // native.cpp: provider-native compaction of the whole eligible window when the summarizer
    // offers it and the window qualifies; nullopt = portable (evidence.native_selection says why).
    static boost::asio::awaitable<step<std::optional<providers::native_reply>>> try_native(
        session_core& s, session_core::job& j, const plan& p
    );
    static boost::asio::awaitable<step<std::pair<std::int64_t, std::string>>> measure_native(
        session_core& s, session_core::job& j, const providers::native_request& req
    );
    static boost::asio::awaitable<step<std::optional<providers::native_reply>>> call_native(
        session_core& s, session_core::job& j, providers::native_request req, const std::string& measured
    );

    // One model request, validated; the `_or_throw` form feeds Asio's `&&`, which cancels the
    // sibling request only when one throws (the failure itself goes to `first`).
    static boost::asio::awaitable<step<compaction::summary_output>> request(
        session_core& s,
        session_core::job& j,
        compaction::summary_prompt prompt,
        compaction::summary_kind kind
    );
    static boost::asio::awaitable<compaction::summary_output> request_or_throw(
        session_core& s,
        session_core::job& j,
        compaction::summary_prompt prompt,
        compaction::summary_kind kind,
        std::optional<failure>& first
    );

    // background.cpp: the background operation (plan, hooks, summarize, validate, hold) and the
    // use of its prepared result by the next automatic operation.
    static boost::asio::awaitable<result_type> run_background(
        session_core& s, const std::shared_ptr<session_core::job>& job
    );
    static boost::asio::awaitable<step<std::shared_ptr<session_core::prepared>>> prepare(
        session_core& s, const std::shared_ptr<session_core::job>& job
    );
    /// Commits (or discards) the prepared result; nullopt = nothing committed, compact in the
    /// foreground (unless the operation is `prepared_only`).
    static boost::asio::awaitable<std::optional<result_type>> use_prepared(
        session_core& s, session_core::job& j
    );
    /// What commit_prepared did: nothing (discarded or cancelled: `result` says which, `go_on`
    /// whether a foreground pass follows), or a commit (`go_on`: the remainder is still over).
    struct prepared_use
    {
        std::optional<result_type> result;
        bool go_on = false;
    };
    static boost::asio::awaitable<prepared_use> commit_prepared(session_core& s, session_core::job& j);

    /// The job's evidence with its elapsed time, call count and (when it failed) the failure's code name.
    static compaction_evidence finished_evidence(
        const session_core::job& j, std::optional<boost::system::error_code> failed
    );
    static bool still_wanted(
        const session_core& s, const session_core::job& j, boost::asio::cancellation_type cancelled
    );
    static void emit_start(session_core& s, session_core::job& j);
    /// Reports the outcome (events, the compacted or compact_failed hooks awaited, the log line).
    /// A cancellation while a hook runs changes nothing of the outcome reported.
    static boost::asio::awaitable<result_type> succeed(
        session_core& s, const session_core::job& j, committed c
    );
    static boost::asio::awaitable<result_type> fail(session_core& s, const session_core::job& j, failure f);
};

/// A background compaction's validated result, held on the strand until it is committed or
/// discarded, bound to the path it was planned on (background_policy.hpp).
struct session_core::prepared
{
    std::shared_ptr<session_core::job> job;  ///< its operation: evidence, calls, start time
    transaction::plan plan;
    transaction::summaries summaries;
    std::string first_kept;
    detail::prepared_binding binding;
};

}  // namespace agentctx::runtime
