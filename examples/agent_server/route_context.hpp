// What a route handler gets (the server, the request, its body parsed once) and the handler types.
#pragma once

#include "http_reply.hpp"
#include "server_state.hpp"
#include "session_registry.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>

namespace agentctx::server {

struct request_context
{
    server_state& server;
    const http_request& req;
    boost::json::object body;
};

using plain_handler = boost::asio::awaitable<http_response> (*)(request_context&);
using session_handler = boost::asio::awaitable<http_response> (*)(request_context&, const lease&);

}  // namespace agentctx::server
