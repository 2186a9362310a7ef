// The connection pool behind runtime::pg_pool: idle connections, waiters, and the LISTEN connection's
// subscribers.
#pragma once

#include "pg_append_queue.hpp"
#include "pg_connection.hpp"
#include "../spill_file.hpp"

#include <agentctx/runtime/pg_store.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace agentctx::runtime::pg {

/// The channel every store notifies on; the payload is `<entry count> <session id>`.
inline constexpr const char* notify_channel = "agentctx_sessions";

/// The spill file's directory for these options: empty when text is not spilled.
std::string spill_directory_for(const pg_pool_options& opts);

class pool : public std::enable_shared_from_this<pool>
{
public:
    pool(boost::asio::any_io_executor ex, std::string conninfo, const pg_pool_options& opts);

    /// An idle connection, a new one while under the limit, or the next one released.
    /// Per-operation cancellation: terminal/partial/total while waiting (operation_aborted).
    boost::asio::awaitable<result<std::unique_ptr<connection>>> acquire(diagnostics& diag);
    /// Returns a connection; a broken one is dropped and frees its slot.
    void release(std::unique_ptr<connection> c);
    /// A connection outside the pool's limit (the LISTEN connection, a compaction lease).
    boost::asio::awaitable<result<std::unique_ptr<connection>>> dedicated(diagnostics& diag);

    using subscriber = std::function<void(std::size_t)>;
    /// `known`: the count the subscriber holds now.
    std::uint64_t subscribe(const std::string& session_id, subscriber s, std::size_t known);
    void unsubscribe(const std::string& session_id, std::uint64_t token);

    /// Starts the LISTEN loop (once); it reconnects after a failure and then tells every
    /// subscriber to check (count = npos), since notifications may have been missed. It also
    /// starts the periodic check of the subscribed sessions' stored counts.
    void start_listening();
    /// Queues an append for group commit (append_queue).
    void append(append_request r) { appends_.submit(std::move(r)); }
    /// A count this node committed or learnt of: a later check that finds more counts a miss.
    void note_count(const std::string& session_id, std::size_t count);
    pg_pool_stats stats() const;
    /// The server process of the LISTEN connection, 0 while there is none.
    int listen_backend_pid() const noexcept { return listen_pid_.load(); }
    /// Stops the LISTEN loop and drops idle connections.
    void close();

    const boost::asio::any_io_executor& executor() const noexcept { return ex_; }
    const std::string& conninfo() const noexcept { return conninfo_; }

    /// A log over `text`: its lines in the spill file, or in memory when there is none (the
    /// file is made on first use; a failure is logged once and counted per load).
    result<compaction::session_log> load_log(
        std::string text,
        const compaction::load_options& opts,
        compaction::load_report& report,
        diagnostics& diag
    );

private:
    struct waiter
    {
        std::shared_ptr<boost::asio::steady_timer> timer;
        bool woken = false;
        std::unique_ptr<connection> handed;  ///< a released connection handed straight to this waiter
    };
    /// Queued: a handed connection, null for a freed slot, or operation_aborted.
    boost::asio::awaitable<result<std::unique_ptr<connection>>> wait_turn(
        std::shared_ptr<waiter> w, diagnostics& diag
    );
    boost::asio::awaitable<void> listen_loop();
    boost::asio::awaitable<bool> listen_once(bool reconnected, diagnostics& diag);
    boost::asio::awaitable<void> check_loop();
    boost::asio::awaitable<void> check_counts();
    void dispatch(const std::string& payload);
    void dispatch_one(const std::string& session_id, std::size_t count, bool from_check);
    void notify_all_subscribers();
    void wake_one_locked(std::unique_ptr<connection> c);

    std::shared_ptr<spill_file> spill();

    boost::asio::any_io_executor ex_;
    std::string conninfo_;
    std::size_t max_;
    std::chrono::milliseconds check_interval_;
    append_queue appends_;
    std::string spill_directory_;  ///< empty: no spilling
    std::shared_ptr<spill_file> spill_;
    bool spill_failed_ = false;  ///< the file could not be made: text stays in memory

    mutable std::mutex mutex_;
    std::vector<std::unique_ptr<connection>> idle_;
    std::size_t open_ = 0;
    std::deque<std::shared_ptr<waiter>> waiters_;
    std::map<std::string, std::map<std::uint64_t, subscriber>> subscribers_;
    std::map<std::string, std::size_t> seen_;  ///< subscribed sessions: the highest count this node knows of
    pg_pool_stats stats_;
    std::atomic<int> listen_pid_{0};
    std::atomic<std::uint64_t> spill_fallbacks_{0};
    std::uint64_t next_token_ = 1;
    bool listening_ = false;
    bool closed_ = false;
    boost::asio::strand<boost::asio::any_io_executor> listen_strand_;  ///< the LISTEN loop runs here
    boost::asio::cancellation_signal stop_listening_;                  ///< emitted on listen_strand_ only
    boost::asio::cancellation_signal stop_checking_;                   ///< emitted on listen_strand_ only
};

}  // namespace agentctx::runtime::pg
