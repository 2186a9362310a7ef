// The running compaction's state (session_core::job) and the transaction coroutine that the session launches.
#pragma once

#include "session_core.hpp"

#include "compaction_coordinator.hpp"

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
    bool from_hook = false;  ///< a before_compact hook supplied (or vetoed) the result
    compaction_evidence evidence;  ///< method, usage and pieces, reported at the end either way
};

/// The messages of a projected range, without their entry ids.
std::vector<std::shared_ptr<const compaction::message>> messages_of(std::span<const compaction::context_message> v);

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
    static boost::asio::awaitable<result_type> run(std::shared_ptr<session_core> self, std::shared_ptr<session_core::job> job);

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

    // The steps, in order. Coroutine steps take references: their caller awaits them at once.
    static boost::asio::awaitable<step<committed>> attempt(session_core& s, session_core::job& j);
    static step<plan> plan_compaction(session_core& s, const session_core::job& j);
    static step<std::optional<compaction::compaction_result>> before_hooks(
        session_core& s, const session_core::job& j, const compaction::compaction_preparation& prep);
    static boost::asio::awaitable<step<summaries>> summarize(
        session_core& s, session_core::job& j, const plan& p, std::optional<compaction::compaction_result> custom);
    static step<revalidated> revalidate(session_core& s, const plan& p, std::string first_kept);
    static step<compaction::compaction_result> build(
        session_core& s, const plan& p, const revalidated& v, const summaries& sum);
    static boost::asio::awaitable<step<compaction::entry_ptr>> commit(
        session_core& s, const session_core::job& j, const compaction::compaction_result& result, const revalidated& v,
        const summaries& sum);
    /// A shared store's compaction lease (nullptr for a single-writer store).
    static boost::asio::awaitable<step<std::shared_ptr<store_lease>>> take_lease(session_core& s, const session_core::job& j);

    /// The session's write turn, held from revalidation to the swap (asynchronous stores).
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
        std::size_t limit = 0;    ///< source bytes per request (0 = unbounded)
        std::optional<bool> fits;  ///< the exact count's verdict on the whole prefix (nullopt: estimate)
    };

    // piecewise.cpp: the prefix's preflight (exact count when offered), whether the history goes
    // piecewise (and from which progress), the pieces in order with the running note, and each
    // accepted piece's persistence.
    static boost::asio::awaitable<step<portable_bound>> preflight(session_core& s, session_core::job& j, const plan& p);
    /// A split turn whose prefix alone is over the portable bound: the prefix joins the history
    /// (summarized in pieces like it), so no request carries more than the bound.
    static void fold_oversized_turn_prefix(session_core& s, session_core::job& j, plan& p);
    static step<std::optional<piece_run>> choose_pieces(session_core& s, session_core::job& j, const plan& p,
                                                        const portable_bound& bound);
    static boost::asio::awaitable<step<compaction::summary_output>> summarize_pieces(
        session_core& s, session_core::job& j, const plan& p, piece_run run, const scrub_fn& scrub);
    static boost::asio::awaitable<step<bool>> persist_piece(
        session_core& s, session_core::job& j, const compaction::progress_record& r, progress_position pos);

    // native.cpp: provider-native compaction of the whole eligible window when the summarizer
    // offers it and the window qualifies; nullopt = portable (evidence.native_selection says why).
    static boost::asio::awaitable<step<std::optional<providers::native_reply>>> try_native(
        session_core& s, session_core::job& j, const plan& p);

    // One model request, validated; the `_or_throw` form feeds Asio's `&&`, which cancels the
    // sibling request only when one throws (the failure itself goes to `first`).
    static boost::asio::awaitable<step<compaction::summary_output>> request(
        session_core& s, session_core::job& j, compaction::summary_prompt prompt, compaction::summary_kind kind);
    static boost::asio::awaitable<compaction::summary_output> request_or_throw(
        session_core& s, session_core::job& j, compaction::summary_prompt prompt, compaction::summary_kind kind,
        std::optional<failure>& first);

    /// The job's evidence with its elapsed time, call count and (when it failed) the failure's code name.
    static compaction_evidence finished_evidence(const session_core::job& j, std::optional<boost::system::error_code> failed);
    static bool still_wanted(const session_core& s, const session_core::job& j, boost::asio::cancellation_type cancelled);
    static void emit_start(session_core& s, session_core::job& j);
    static result_type succeed(session_core& s, const session_core::job& j, const committed& c);
    static result_type fail(session_core& s, const session_core::job& j, const failure& f);
};

}  // namespace agentctx::runtime
