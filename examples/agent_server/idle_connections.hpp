// Connections waiting for their next request, longest idle first: the ones to close to make room.
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

private:
    std::mutex mu_;
    std::map<std::uint64_t, std::shared_ptr<connection_state>> idle_;  ///< by when they began to idle
    std::uint64_t sequence_ = 0;
};

}  // namespace agentctx::server
