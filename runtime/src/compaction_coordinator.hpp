// Who runs, who waits, who is cancelled: the session's compaction lifecycle as a sans-io state machine.
#pragma once

#include <agentctx/runtime/events.hpp>

#include "background_policy.hpp"

#include <boost/asio/cancellation_type.hpp>
#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace agentctx::runtime::detail {

using caller_id = std::uint64_t;
using operation_id = std::uint64_t;

/// What a compaction was asked to do.
struct operation_request
{
    compaction_reason reason = compaction_reason::manual;
    std::optional<std::string> instructions;
    bool will_retry = false;
    /// Commit the prepared background result or nothing (`commit: "when-ready"`): never a
    /// foreground compaction.
    bool prepared_only = false;
    /// A compaction the provider made inside the loop's own request (OpenAI inline compaction):
    /// `item` is the reply's `compaction` output item (recorded as the native state with the
    /// serving model), `first_kept` the first entry of the reply that carried it. The run cuts
    /// there and sends no native request.
    struct adopted_native
    {
        boost::json::object item;
        std::string first_kept;
        /// The leaf the request that produced the item was built at: the item covers the path up
        /// to it, and the cut is the entry after it (entries appended meanwhile stay kept).
        std::optional<std::string> covered_leaf;
    };
    std::optional<adopted_native> adopted;
};

/// What the session must do after an event, in this order: drop the prepared background result
/// (`discard_prepared`, reporting the reason), complete `cancelled` callers with `cancelled`, emit
/// `terminal` on the `interrupt`ed operation's signal, run the `launch`ed one.
struct coordinator_effects
{
    std::optional<discard_reason> discard_prepared;
    std::vector<caller_id> cancelled;
    std::optional<operation_id> interrupt;
    std::optional<operation_id> launch;
};

/// After the running operation's run completed: who gets its result, what runs next.
struct finished_operation
{
    std::vector<caller_id> waiters;  ///< the initiator and every joined caller, in arrival order
    std::optional<operation_id> launch;
};

/// True for the cancellation types a compaction honours: terminal, partial and total.
bool honours(boost::asio::cancellation_type t) noexcept;

/**
 * @brief The compaction lifecycle of one session, with no executor, handler or I/O: the session
 * feeds it events on its strand and carries out the effects it returns (as Boost.Redis's
 * `exec_fsm`). Tested without an io_context.
 *
 * At most one operation runs. A manual compaction joins a running or pending manual one (one
 * compaction, one result for all), or interrupts a running automatic one and waits, pending,
 * until it has unwound, so lifecycles never overlap. The initiator's cancellation aborts its
 * operation (every waiter gets the operation's result); a joined caller's cancellation ends only
 * its own wait. A caller cancelled before its request reached the strand ("cancel before link")
 * says so with `cancelled_early`: an initiator's operation starts aborted and unwinds at once, a
 * joiner completes at once.
 *
 * Background compactions are more states of the same machine. One starts with no caller (the
 * turn that started it has returned) and, once its summary is validated, finishes `held`: the
 * result is *prepared*. A threshold or overflow check while it runs queues behind it (no second
 * model call; the queued operation then uses the prepared result); a queued caller's
 * cancellation ends only its own wait, the background one goes on. The next automatic operation
 * commits the prepared result or discards it (consume_prepared). A manual compaction supersedes
 * both: a running background one is aborted, a prepared one is dropped (`superseded`). close()
 * drops a prepared one (`closed`); abort_compaction() aborts a running one and keeps a prepared one.
 */
class compaction_coordinator
{
public:
    bool running() const noexcept { return current_.has_value(); }
    std::optional<compaction_reason> running_reason() const;

    /// The request of a running or pending operation (nullptr when unknown).
    const operation_request* request(operation_id id) const;
    /// Whether the operation was aborted (by its initiator, abort_all(), or a manual request).
    bool aborted(operation_id id) const;

    /// Starts a compaction. Precondition: !running() (automatic checks skip while one runs).
    coordinator_effects start(caller_id caller, operation_request req, bool cancelled_early);
    /// Adopts a provider's compaction (operation_request::adopted): starts it at once; the caller
    /// refuses it while a compaction runs. A prepared background result is discarded
    /// (`superseded`). Precondition: !running().
    coordinator_effects adopt(caller_id caller, operation_request req, bool cancelled_early);
    /// The manual path: joins, queues behind an automatic operation (interrupting it), or starts.
    coordinator_effects compact(
        caller_id caller, std::optional<std::string> instructions, bool cancelled_early
    );
    /// A caller's cancellation slot fired; types that honours() rejects change nothing.
    coordinator_effects cancel(caller_id caller, boost::asio::cancellation_type type);
    /// abort_compaction() and close() (`closing`): the running and the pending operation are
    /// aborted; closing also drops a prepared result.
    coordinator_effects abort_all(bool closing = false);
    /// The running operation's run completed; `held`: it was a background operation and
    /// left a prepared result. `commit_now` (`"when-ready"`) launches its commit at once when no
    /// operation is queued. Precondition: `id` is running.
    finished_operation finish(operation_id id, bool held = false, bool commit_now = false);

    bool background_running() const noexcept;
    /// A background result is held (prepared), waiting to be committed or discarded.
    bool prepared() const noexcept { return prepared_; }
    /// Whether the operation was aborted by a manual compaction.
    bool superseded(operation_id id) const;
    /// Starts a background compaction that no caller waits for. Precondition: !running() && !prepared().
    coordinator_effects start_background();
    /// A threshold or overflow check while a background compaction runs: queues behind it, or
    /// joins the operation already queued. Precondition: background_running().
    coordinator_effects await_background(caller_id caller, operation_request req, bool cancelled_early);
    /// The prepared result was committed or discarded by the running operation.
    void consume_prepared() noexcept { prepared_ = false; }

private:
    struct operation
    {
        operation_id id = 0;
        operation_request request;
        caller_id initiator = 0;
        std::vector<caller_id> waiters;  ///< includes the initiator (none for a background one)
        bool aborted = false;
        bool superseded = false;  ///< aborted by a manual compaction
    };

    /// A queued operation's caller cancelled while the background one it waits for goes on.
    coordinator_effects leave_queue(caller_id caller);

    operation make(caller_id initiator, operation_request req, bool cancelled_early);
    operation* find(operation_id id);
    const operation* find(operation_id id) const;

    std::optional<operation> current_;  ///< running
    /// A manual operation waiting for an aborted automatic one, or a threshold or overflow one
    /// queued behind a running background one.
    std::optional<operation> next_;
    bool prepared_ = false;
    operation_id next_id_ = 1;
};

}  // namespace agentctx::runtime::detail
