// The connection pool behind runtime::pg_pool: idle connections, waiters, and the LISTEN connection's subscribers.
#pragma once

#include "pg_connection.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

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

class pool : public std::enable_shared_from_this<pool>
{
public:
    pool(boost::asio::any_io_executor ex, std::string conninfo, std::size_t max_connections);

    /// An idle connection, a new one while under the limit, or the next one released.
    /// Per-operation cancellation: terminal/partial/total while waiting (operation_aborted).
    boost::asio::awaitable<result<std::unique_ptr<connection>>> acquire(diagnostics& diag);
    /// Returns a connection; a broken one is dropped and frees its slot.
    void release(std::unique_ptr<connection> c);
    /// A connection outside the pool's limit (the LISTEN connection, a compaction lease).
    boost::asio::awaitable<result<std::unique_ptr<connection>>> dedicated(diagnostics& diag);

    using subscriber = std::function<void(std::size_t)>;
    std::uint64_t subscribe(const std::string& session_id, subscriber s);
    void unsubscribe(const std::string& session_id, std::uint64_t token);

    /// Starts the LISTEN loop (once); it reconnects after a failure and then tells every
    /// subscriber to check (count = npos), since notifications may have been missed.
    void start_listening();
    /// Stops the LISTEN loop and drops idle connections.
    void close();

    const boost::asio::any_io_executor& executor() const noexcept { return ex_; }
    const std::string& conninfo() const noexcept { return conninfo_; }

private:
    struct waiter
    {
        std::shared_ptr<boost::asio::steady_timer> timer;
        bool woken = false;
    };
    boost::asio::awaitable<void> listen_loop();
    void dispatch(const std::string& payload);
    void notify_all_subscribers();
    void wake_one_locked();

    boost::asio::any_io_executor ex_;
    std::string conninfo_;
    std::size_t max_;

    std::mutex mutex_;
    std::vector<std::unique_ptr<connection>> idle_;
    std::size_t open_ = 0;
    std::deque<std::shared_ptr<waiter>> waiters_;
    std::map<std::string, std::map<std::uint64_t, subscriber>> subscribers_;
    std::uint64_t next_token_ = 1;
    bool listening_ = false;
    bool closed_ = false;
    boost::asio::strand<boost::asio::any_io_executor> listen_strand_;  ///< the LISTEN loop runs here
    boost::asio::cancellation_signal stop_listening_;  ///< emitted on listen_strand_ only
};

}  // namespace agentctx::runtime::pg
