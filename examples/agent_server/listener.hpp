// The accept loop: admitting connections under the cap, and recovering when descriptors run out.
#pragma once

#include "server_state.hpp"

#include <boost/asio/awaitable.hpp>

#include <memory>

namespace agentctx::server {

/// Accepts on `server->acceptor` until it closes: a failed accept is retried (after freeing
/// descriptors and a pause when out of them), never the end of the loop. Beyond the connection
/// cap the longest-idle connection makes room, or the new one gets 503 and is closed.
boost::asio::awaitable<void> accept_loop(std::shared_ptr<server_state> server);

}  // namespace agentctx::server
