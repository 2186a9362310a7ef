// The session's state and operations behind the public facade: the log, the store, the snapshot, the strand.
#pragma once

#include <agentctx/runtime/session.hpp>

#include "background_policy.hpp"
#include "branch_hook_runner.hpp"

#include <agentctx/compaction/redaction.hpp>
#include <agentctx/compaction/session_log.hpp>

#include "failure_suppression.hpp"

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/strand.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace agentctx::runtime::detail {

class compaction_coordinator;
struct coordinator_effects;
enum class discard_reason;

/**
 * @brief What a `session` is: one conversation's state on one strand, and the operations on it.
 *
 * The public `session` forwards to it; the compaction transaction, the checkpoint operations and
 * the piecewise and native steps work on it directly. Its members are open to those files (the
 * runtime's own sources): every one of them is used on the strand only, except `snapshot_`
 * (atomic), `next_caller_` (atomic) and the registration vectors (filled before operations run).
 * Operations keep it alive through shared_from_this until they complete.
 */
class session_core : public std::enable_shared_from_this<session_core>
{
public:
    using executor_type = session::executor_type;
    struct job;       ///< the running compaction (transaction.hpp)
    struct prepared;  ///< a background compaction's result, held (transaction.hpp)
    struct caller;    ///< one caller of a compacting operation: its id and early-cancellation flag

    session_core(
        executor_type ex, std::unique_ptr<store> st, session_config config, compaction::session_log log
    );
    ~session_core();
    session_core(const session_core&) = delete;
    session_core& operator=(const session_core&) = delete;

    /// Builds the redactor and the first snapshot; listens to a shared store's remote changes.
    compaction::result<void> start_up(compaction::diagnostics& diag);

    std::shared_ptr<const snapshot> current() const noexcept
    {
        return snapshot_.load(std::memory_order_acquire);
    }
    /// Swaps in `s`; reports its dropped derived state that the previous snapshot did not have.
    /// In agentctx mode, reminder snapshots a newer one replaces leave it first
    /// (without_replaced_snapshots). `appended`: `s` extends the current snapshot by this entry
    /// only, so only a new snapshot can replace anything.
    void publish(std::shared_ptr<const snapshot> s, const compaction::entry* appended = nullptr);
    const compaction::token_counter& counter() const;

    // The public operations, from any thread (session.hpp documents them).
    /// `out`: where a refusal's diagnostics go (the caller's, alive until the handler runs), or nullptr.
    void append_impl(
        boost::json::object fields,
        boost::asio::any_completion_handler<append_signature> h,
        compaction::diagnostics* out = nullptr
    );
    void refresh_impl(boost::asio::any_completion_handler<void_signature> h);
    void original_impl(
        std::string id, boost::asio::any_completion_handler<original_signature> h
    );  // clearing.cpp
    void between_turns_impl(boost::asio::any_completion_handler<outcome_signature> h);
    void check_impl(
        compaction::message m, bool skip_aborted, boost::asio::any_completion_handler<outcome_signature> h
    );
    void before_prompt_impl(boost::asio::any_completion_handler<outcome_signature> h);
    /// The post-run (`skip_aborted`) or pre-prompt check of the snapshot's latest assistant message.
    void last_assistant_check_impl(
        bool skip_aborted, boost::asio::any_completion_handler<outcome_signature> h
    );
    void recover_overflow_impl(std::string error, boost::asio::any_completion_handler<outcome_signature> h);
    void compact_impl(
        std::optional<std::string> instr, boost::asio::any_completion_handler<outcome_signature> h
    );
    void branch_impl(std::string id, boost::asio::any_completion_handler<void_signature> h);
    /// Pi 1.6's navigateTree (branch_navigation.cpp): completes with the branch summary's id.
    void navigate_impl(
        std::string id, branch_options opts, boost::asio::any_completion_handler<append_signature> h
    );
    void request_view_impl(
        compaction::request_budget budget, boost::asio::any_completion_handler<request_view_signature> h
    );
    // checkpoint_ops.cpp
    void export_checkpoint_impl(boost::asio::any_completion_handler<checkpoint_signature> h);
    void restore_checkpoint_impl(
        boost::json::value record, boost::asio::any_completion_handler<checkpoint_signature> h
    );
    void checkpoint_status_impl(boost::asio::any_completion_handler<checkpoint_status_signature> h);
    void abort_compaction();
    void close();

    // Model changes (model_change.cpp).
    void change_model_impl(model_identity m, boost::asio::any_completion_handler<append_signature> h);
    /// The model `provider`/`model_id` names among the known ones (config, then async_change_model's).
    std::optional<model_identity> known_model(const std::string& provider, const std::string& model_id) const;
    /// A `model_change` entry was appended: a known model becomes the serving one; in agentctx
    /// mode its budgets wait for the next automatic check (downshift_first).
    void model_changed(const compaction::entry& e);
    /// At open and after a reload: the latest known `model_change` on the active path is served,
    /// with its budgets at once (the change was checked when it was made).
    void follow_path_model();
    /// Before an automatic check: a pending model change compacts first (reason `model_change`,
    /// the previous model's budgets) when decide_downshift says so, and takes `h` (true); else
    /// the new model's budgets apply and the check goes on (false).
    bool downshift_first(
        boost::asio::any_completion_handler<outcome_signature>& h, const std::shared_ptr<caller>& c
    );
    /// After the downshift's compaction: the new budgets, and `model_window_exceeded` when the
    /// context still does not fit the new window.
    void after_downshift(
        boost::system::error_code ec,
        compaction_outcome out,
        boost::asio::any_completion_handler<outcome_signature> h
    );

    /// On the strand: waits for the write turn, then validates, writes, appends to the log and
    /// publishes the new snapshot (append_async).
    void append_in_turn(
        boost::json::object fields,
        boost::asio::any_completion_handler<append_signature> h,
        compaction::diagnostics* out = nullptr
    );
    /// The entry `fields` become as the leaf's child, validated completely (nothing written).
    compaction::result<compaction::entry_ptr> prepare_entry(
        boost::json::object fields, compaction::diagnostics& diag
    );
    /// After the store has the entry: the log, the snapshot, the trigger flags.
    compaction::result<void> adopt_entry(const compaction::entry_ptr& e, compaction::diagnostics& diag);

    // Every write goes through the store's asynchronous interface, one at a time, in arrival
    // order, so no append interleaves between a validation and its snapshot swap. On the strand.
    /// Runs `next` now when no write is in flight (without type-erasing it), else queues it.
    /// `next` is taken by value: a handler is moved from once it is run.
    template <class Next>
    void enter_writes(Next next)
    {
        if (writing_)
        {
            write_queue_.emplace_back(std::move(next));
            return;
        }
        writing_ = true;
        std::move(next)();
    }
    void leave_writes();
    /// Inside the write turn: appends through async_write; on `stale_leaf` reloads first.
    void append_async(
        boost::json::object fields,
        boost::asio::any_completion_handler<append_signature> h,
        compaction::diagnostics* out = nullptr
    );
    /// Inside the write turn: replaces the log with the store's current content.
    void reload(boost::asio::any_completion_handler<void_signature> h);
    /// Appends several entries in order through the write turn (the overflow path's omissions).
    void append_all(
        std::vector<boost::json::object> fields, boost::asio::any_completion_handler<void_signature> h
    );
    /// The context_edit entries that omit the attempt at `index` and its tool results.
    compaction::result<std::vector<boost::json::object>> omissions(
        std::size_t index, compaction::diagnostics& diag
    ) const;
    struct assistant_location
    {
        std::optional<std::size_t> entry;  ///< log index; nullopt = unknown (not persisted)
        bool projected = true;
        bool usage_matches = true;
        bool retained = true;
    };
    assistant_location locate_assistant(const compaction::message& m) const;

    /// In the initiating function: a caller id, and the caller's cancellation slot hooked at once
    /// (so no emission is lost; one that comes before the strand sees the request sets the flag).
    std::shared_ptr<caller> hook_cancellation(boost::asio::any_completion_handler<outcome_signature>& h);

    // On the strand.
    /// The automatic threshold: `contextWindow − reserveTokens`, or the lower working budget
    /// (compaction/working_budget.hpp).
    std::int64_t threshold() const noexcept;
    /// Tool-result clearing (clearing.cpp): when the context of `tokens` reaches the trigger,
    /// asks the host's evidence store (if any), writes one batch of context edits and emits
    /// context_cleared_event; then `next` runs with the context's size as it is now (at once
    /// when nothing is cleared).
    void clear_then(std::int64_t tokens, boost::asio::any_completion_handler<void(std::int64_t)> next);
    /// An automatic check's decision once the context's size is known: compact, start a
    /// background compaction, or nothing. `mid_run` (between tool batches): only compact.
    void decide(
        std::int64_t tokens,
        bool mid_run,
        boost::asio::any_completion_handler<outcome_signature> h,
        const std::shared_ptr<caller>& c
    );
    void evaluate(
        const compaction::message& m,
        bool skip_aborted,
        boost::asio::any_completion_handler<outcome_signature> h,
        const std::shared_ptr<caller>& c
    );
    /// Overflow or early-`length` recovery, once per attempt: omits the failed attempt, then compacts.
    void recover(
        const compaction::message& m,
        const assistant_location& where,
        bool overflow,
        boost::asio::any_completion_handler<outcome_signature> h,
        const std::shared_ptr<caller>& c
    );
    void start(
        compaction_reason reason,
        std::optional<std::string> instr,
        bool will_retry,
        boost::asio::any_completion_handler<outcome_signature> h,
        const std::shared_ptr<caller>& c
    );
    /// Carries out what the coordinator decided.
    void apply(const coordinator_effects& fx);
    void launch(std::uint64_t operation);
    void finish(std::uint64_t operation, boost::system::error_code ec, const compaction_outcome& out);
    void complete_caller(std::uint64_t id, boost::system::error_code ec, compaction_outcome out);
    /// Background compaction (`compaction.background`) is on for this session.
    bool background_on() const noexcept;
    /// Drops the prepared background result, if any, and reports why.
    void drop_prepared(detail::discard_reason why);
    /// Below the threshold: drops a prepared result whose covered prefix no longer holds, then
    /// starts a background compaction when the check asks for one. True when one started.
    bool maybe_start_background(std::int64_t tokens);
    void emit(const session_event& e);
    /// The compact_failed hooks, in registration order (after compaction_end, as Pi 1.6),
    /// each awaited; one that throws is logged and skipped.
    boost::asio::awaitable<void> run_failed_hooks(const compact_failed_event& e);
    /// The compacted hooks likewise.
    boost::asio::awaitable<void> run_compacted_hooks(const compacted_event& e);

    boost::asio::strand<executor_type> strand_;
    std::unique_ptr<store> store_;
    session_config config_;
    compaction::session_log log_;
    std::atomic<std::shared_ptr<const snapshot>> snapshot_;
    std::shared_ptr<spdlog::logger> logger_;
    std::optional<compaction::redactor> redactor_;  ///< built at open from config_.redaction
    /// sourceRevision of each compaction: the covered prefix is read once, not at every compaction.
    std::unique_ptr<compaction::source_revision_cache> revisions_ =
        std::make_unique<compaction::source_revision_cache>();

    // Compactions: the lifecycle (sans-io), the running transaction, and the callers waiting.
    std::unique_ptr<compaction_coordinator> coordinator_;
    std::shared_ptr<job> job_;
    std::shared_ptr<prepared>
        prepared_;  ///< set between a background compaction's end and its commit or discard
    /// Linked callers' handlers. A map: handlers are never move-assigned (Asio 1.26 bug).
    std::map<std::uint64_t, boost::asio::any_completion_handler<outcome_signature>> waiting_;
    std::atomic<std::uint64_t> next_caller_{1};  ///< allocated in initiating functions, on any thread

    bool overflow_attempted_ = false;
    bool closed_ = false;
    bool writing_ = false;  ///< a write or reload is in flight
    /// Writers waiting for their turn. A deque: only push_back/pop_front (no move-assignment).
    std::deque<boost::asio::any_completion_handler<void()>> write_queue_;
    /// Automatic compaction paused after a failure (until the prefix, the settings or the log change).
    failure_suppression suppression_;
    detail::growth_meter growth_;  ///< when a background compaction should start
    boost::asio::cancellation_signal turn_abort_;
    /// A clearing is waiting for the host's evidence store (clearing.cpp); close() cancels it.
    bool clearing_asking_ = false;
    boost::asio::cancellation_signal clearing_abort_;

    std::vector<event_listener> listeners_;
    std::vector<async_before_compact_hook> before_hooks_;  ///< synchronous ones wrapped
    std::vector<async_compacted_hook> compacted_hooks_;    ///< synchronous ones wrapped
    std::vector<async_compact_failed_hook> failed_hooks_;  ///< synchronous ones wrapped
    branch_hook_runner branch_hooks_;                      ///< before_branch and branched

    // Model changes. config_.model holds the budgets in use (the previous model's while a change
    // waits for its check); session::config() shows the configuration as given.
    const session_config given_config_;
    std::atomic<std::shared_ptr<const model_identity>> serving_;  ///< read from any thread
    std::vector<model_identity> changed_to_;                      ///< models async_change_model made known
    std::optional<model_identity> pending_model_;                 ///< served, its budgets not yet in use
};

}  // namespace agentctx::runtime::detail
