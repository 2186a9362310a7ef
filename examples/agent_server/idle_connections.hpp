// Connections that may be closed to make room: those not authenticated yet (oldest first), then those
// waiting for their next request (longest idle first).
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

namespace agentctx::server {

/// What the accept loop may touch of a connection: closing it while it is idle.
struct connection_state
{
    boost::asio::any_io_executor strand;         ///< the connection's strand
    boost::beast::tcp_stream* stream = nullptr;  ///< used on the strand only; null once the connection ended
    std::uint64_t idle_key = 0;                  ///< its key while idle (guarded by idle_connections)
    std::uint64_t pending_key = 0;  ///< its key until authenticated (guarded by idle_connections)
};

/// Thread-safe.
class idle_connections
{
public:
    /// The connection waits for its next request: it may be closed to make room from now on.
    void enter(const std::shared_ptr<connection_state>& c);
    /// The wait ended; false when the connection was chosen to make room (it closes then).
    bool leave(const std::shared_ptr<connection_state>& c);
    /// Closes the connection idle for longest; false when none is idle. Its wait is cancelled on
    /// its own strand; a request that arrived meanwhile finds itself chosen and closes anyway.
    bool close_longest();
    std::size_t count();

    /// A connection was accepted: until its first request passes authentication (or it ends) it
    /// may be closed to make room, before any idle one.
    void admitted(const std::shared_ptr<connection_state>& c);
    /// Its first request passed authentication; false when it was chosen to make room meanwhile
    /// (it closes then).
    bool authenticated(const std::shared_ptr<connection_state>& c);
    /// The connection ended.
    void ended(const std::shared_ptr<connection_state>& c);
    /// Closes the oldest connection not authenticated yet (its socket is shut down on its own
    /// strand, so whatever it waits for now or next fails); false when there is none.
    bool close_unauthenticated();
    std::size_t unauthenticated();

private:
    std::mutex mu_;
    std::map<std::uint64_t, std::shared_ptr<connection_state>> idle_;     ///< by when they began to idle
    std::map<std::uint64_t, std::shared_ptr<connection_state>> pending_;  ///< by when they were accepted
    std::uint64_t sequence_ = 0;
};

}  // namespace agentctx::server
