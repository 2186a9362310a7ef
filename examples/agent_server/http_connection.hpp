// One HTTP/1.1 connection: reading requests (the token checked on the header), answering them in order.
#pragma once

#include "server_state.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <memory>

namespace agentctx::server {

/// Serves requests on `sock` until the peer closes, a timeout, a refused request, or the end
/// of an event stream. The bearer token is checked on the header, before any byte of the body
/// is read; while the connection waits for its next request it may be closed to make room.
boost::asio::awaitable<void> serve_connection(
    std::shared_ptr<server_state> server, boost::asio::ip::tcp::socket sock
);

}  // namespace agentctx::server
