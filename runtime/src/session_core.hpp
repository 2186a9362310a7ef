// The session's actor: the public operations on one strand, over owned parts (writes, budgets, hooks).
#pragma once

#include <agentctx/runtime/session.hpp>

#include "compaction_callers.hpp"
#include "compaction_ledger.hpp"
#include "hook_set.hpp"
#include "interrupts.hpp"
#include "model_budgets.hpp"
#include "write_path.hpp"

#include <agentctx/compaction/redaction.hpp>
#include <agentctx/compaction/session_log.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/strand.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace agentctx::runtime::detail {

struct compaction_job;
class run_context;
struct coordinator_effects;
enum class discard_reason;

/**
 * @brief What a `session` is: one conversation's operations on one strand, over its owned parts.
 *
 * The parts: the write path (store, log, snapshot, write turn: every write goes through it), the
 * model budgets (the configuration as given and in use, the serving model, a pending change), the
 * hook set (listeners and hooks in order) and the compaction ledger (failures, growth, a prepared
 * background result). This class decides what an operation does and carries it out through them;
 * a compaction runs as a compaction_run over a narrow view of the same parts. The public
 * `session` forwards to it. Everything runs on the strand except the initiating functions, which
 * only post (current(), config() and the registrations are safe from any thread as documented in
 * session.hpp). Operations keep it alive through shared_from_this until they complete.
 */
class session_core : public std::enable_shared_from_this<session_core>
{
public:
    using executor_type = session::executor_type;
    struct caller;  ///< one caller of a compacting operation: its id and early-cancellation flag

    session_core(
        executor_type ex, std::unique_ptr<store> st, session_config config, compaction::session_log log
    );
    ~session_core();
    session_core(const session_core&) = delete;
    session_core& operator=(const session_core&) = delete;

    /// Builds the redactor and the first snapshot; listens to a shared store's remote changes.
    compaction::result<void> start_up(compaction::diagnostics& diag);

    // The parts, for the operations kept in their own files.
    write_path& writes() noexcept { return writes_; }
    const compaction::session_log& log() const noexcept { return writes_.log(); }
    std::shared_ptr<const snapshot> current() const noexcept { return writes_.current(); }
    model_budgets& budgets() noexcept { return budgets_; }
    const model_budgets& budgets() const noexcept { return budgets_; }
    /// The configuration in use (budgets().config()).
    const session_config& config() const noexcept { return budgets_.config(); }
    const compaction::token_counter& counter() const { return budgets_.counter(); }
    /// The automatic threshold: `contextWindow − reserveTokens`, or the lower working budget.
    std::int64_t threshold() const noexcept { return budgets_.threshold(); }
    hook_set& hooks() noexcept { return hooks_; }
    void emit(const session_event& e) const { hooks_.emit(e); }
    compaction_ledger& ledger() noexcept { return ledger_; }
    compaction_coordinator& coordinator() noexcept { return callers_.coordinator(); }
    const compaction_coordinator& coordinator() const noexcept { return callers_.coordinator(); }
    const compaction::redactor& redaction() const noexcept { return *redactor_; }
    spdlog::logger& logger() const noexcept { return hooks_.logger(); }
    const boost::asio::strand<executor_type>& strand() const noexcept { return strand_; }
    bool closed() const noexcept { return interrupts_.closed(); }
    boost::asio::cancellation_slot turn_abort_slot() { return interrupts_.turn_slot(); }

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
    /// session::async_adopt_compaction (adopt_compaction.cpp).
    void adopt_compaction_impl(
        boost::json::object item,
        std::string first_kept,
        std::optional<std::string> covered_leaf,
        boost::asio::any_completion_handler<outcome_signature> h
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

    /// On the strand: appends one entry through the write path (validated in the write turn).
    void append_in_turn(
        boost::json::object fields,
        boost::asio::any_completion_handler<append_signature> h,
        compaction::diagnostics* out = nullptr
    );
    /// Appends several entries in order, one write each (the overflow path's omissions).
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
    /// Background compaction (`compaction.background`) is on for this session.
    bool background_on() const noexcept;
    /// Drops the prepared background result, if any, and reports why.
    void drop_prepared(detail::discard_reason why);
    /// Below the threshold: drops a prepared result whose covered prefix no longer holds, then
    /// starts a background compaction when the check asks for one. True when one started.
    bool maybe_start_background(std::int64_t tokens);

    /// A clearing waits for the host's evidence store (clearing.cpp): close() cancels it, and no
    /// second clearing starts meanwhile.
    boost::asio::cancellation_slot clearing_abort_slot() { return interrupts_.clearing_slot(); }
    bool clearing_asking() const noexcept { return interrupts_.clearing_asking(); }
    void set_clearing_asking(bool v) noexcept { interrupts_.set_clearing_asking(v); }

private:
    void launch(std::uint64_t operation);
    void finish(std::uint64_t operation, boost::system::error_code ec, const compaction_outcome& out);
    void complete_caller(std::uint64_t id, boost::system::error_code ec, compaction_outcome out);
    /// An entry joined the log by an append: the overflow flag, a model change.
    void adopted(const compaction::entry& e);
    /// Another writer's entries were loaded.
    void reloaded();
    /// What a compaction run may touch of this session.
    run_context run_view();
    /// The session's own measurements, before the host's listeners see an event.
    void observe(const session_event& e);

    boost::asio::strand<executor_type> strand_;
    model_budgets budgets_;
    hook_set hooks_;
    write_path writes_;
    compaction_ledger ledger_;
    compaction_callers callers_;
    interrupts interrupts_;
    std::optional<compaction::redactor> redactor_;  ///< built at open from the redaction settings
};

}  // namespace agentctx::runtime::detail
