// The session's one write path: the store, the log, the snapshot and the write turn that orders every write.
#pragma once

#include <agentctx/runtime/events.hpp>
#include <agentctx/runtime/session.hpp>
#include <agentctx/runtime/snapshot.hpp>
#include <agentctx/runtime/store.hpp>

#include <agentctx/compaction/pinned.hpp>
#include <agentctx/compaction/session_log.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/strand.hpp>

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace spdlog {
class logger;
}

namespace agentctx::runtime::detail {

/// What one commit writes, decided inside the write turn against the log as it is then.
struct commit_plan
{
    /// Written in one store write, in order; empty: nothing is stored (the commit succeeds, and a
    /// leaf move or a snapshot still applies).
    std::vector<compaction::entry_ptr> entries;
    /// Set: the leaf moves to this entry (nullopt: before the first entry) once the store has the
    /// entries, and they join the log from there (a branch summary's navigation).
    std::optional<std::optional<std::string>> leaf;
    /// The snapshot after the commit when the caller built it (a compaction's projection);
    /// null: each entry is adopted as an append (extended, or projected again for an edit or a
    /// new branch).
    std::shared_ptr<const snapshot> next;
};

/**
 * @brief The only place the session's store is written, and the only owner of the log and snapshot.
 *
 * Every write takes the write turn, decides what it writes against the log as it is then, writes
 * it to the store in one step, adds it to the log and publishes the new snapshot, then gives the
 * turn to the next writer: no append interleaves between a validation and its swap. A writer
 * waiting for the turn holds no lock; the turn passes in arrival order, and it is released by the
 * turn object's destructor, so no path can keep it. On the strand, except current() (any thread).
 * A caller keeps the session alive through its handler until it completes.
 */
class write_path
{
public:
    using executor_type = session::executor_type;
    using commit_handler = boost::asio::any_completion_handler<void(boost::system::error_code, std::string)>;
    using reload_handler = boost::asio::any_completion_handler<void(boost::system::error_code)>;
    /// Inside the write turn: what to write, or why not (an error with `diag.message`: nothing is
    /// written).
    using prepare_fn = std::function<compaction::result<commit_plan>(diagnostics& diag)>;

    /// What the session does when the path changes under it.
    struct observers
    {
        std::function<void(const session_event&)> emit;
        std::function<void(const compaction::entry&)> adopted;  ///< an entry joined the log by an append
        std::function<void()> reloaded;                         ///< a reload brought another writer's entries
    };
    /// How snapshots are published: reminder snapshots that a newer one replaces leave the context.
    struct publish_rules
    {
        const compaction::pin_policy* pins = nullptr;
        compaction::compat_mode compat = compaction::compat_mode::agentctx;
        const compaction::token_counter* counter = nullptr;
        compaction::load_options load;  ///< for a reload of the stored session
    };

    write_path(
        boost::asio::strand<executor_type> strand,
        std::unique_ptr<store> st,
        compaction::session_log log,
        publish_rules rules,
        observers obs,
        std::shared_ptr<spdlog::logger> logger
    );
    ~write_path();
    write_path(const write_path&) = delete;
    write_path& operator=(const write_path&) = delete;

    const compaction::session_log& log() const noexcept { return log_; }
    std::shared_ptr<const snapshot> current() const noexcept
    {
        return snapshot_.load(std::memory_order_acquire);
    }
    /// Projects the log again and publishes it (at open, after a reload).
    compaction::result<void> project(diagnostics& diag);
    /// Swaps in `next`; reports its dropped derived state that the previous snapshot did not
    /// have. In agentctx mode, reminder snapshots a newer one replaces leave it first.
    /// `appended`: `next` extends the current snapshot by this entry only.
    void publish(std::shared_ptr<const snapshot> next, const compaction::entry* appended = nullptr);
    /// Moves the leaf (Pi's `branch`; nullopt: before the first entry). Not persisted, as in Pi.
    compaction::result<void> move_leaf(const std::optional<std::string>& id, diagnostics& diag);

    /// Takes the write turn, runs `prepare`, writes its entries in one store write (compare-and-set
    /// against the log's size where the store is shared), adds them to the log, publishes, gives
    /// the turn on and calls `h` on the strand with the store's error and message (at once when a
    /// refusal or an empty plan needs no write: callers complete their own handlers through the
    /// strand). A `stale_leaf` write reloads first, in the same turn.
    /// @par Cancellation
    /// None of its own: `prepare` is where a caller checks its cancellation (after waiting for the
    /// turn); once the store write is sent only the store's answer says whether it committed.
    void async_commit(prepare_fn prepare, commit_handler h);
    /// Takes the write turn and, when `wanted()` still holds there (always when empty), replaces
    /// the log with the store's current content.
    void async_reload(std::function<bool()> wanted, reload_handler h);
    /// A shared store's compaction lease (store::async_lease).
    void async_lease(boost::asio::any_completion_handler<store_lease_signature> h);
    /// store::on_remote_change: called from the store's thread with the stored entry count.
    void on_remote_change(std::function<void(std::size_t)> callback);

private:
    class turn;
    void enter(boost::asio::any_completion_handler<void()> next);
    void leave();
    void write(turn t, commit_plan plan, commit_handler h);
    compaction::result<void> adopt(const commit_plan& plan, diagnostics& diag);
    void reload_in_turn(turn t, reload_handler h);

    boost::asio::strand<executor_type> strand_;
    std::unique_ptr<store> store_;
    compaction::session_log log_;
    std::atomic<std::shared_ptr<const snapshot>> snapshot_;
    publish_rules rules_;
    observers obs_;
    std::shared_ptr<spdlog::logger> logger_;
    bool writing_ = false;  ///< a writer holds the turn
    /// Writers waiting for the turn. A deque: only push_back/pop_front.
    std::deque<boost::asio::any_completion_handler<void()>> queue_;
};

}  // namespace agentctx::runtime::detail
