// The route table: each endpoint's handler, the request body parsed once for all of them.
#pragma once

#include "http_reply.hpp"
#include "server_state.hpp"

#include <boost/asio/awaitable.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace agentctx::server {

/// "/v1/sessions/x/events?y" -> {"v1", "sessions", "x", "events"} (the query is left out).
std::vector<std::string> split_target(std::string_view target);

/// The value of `name` in the target's query string (nullopt when absent, "" when empty; no
/// percent-decoding: the values taken are plain words).
std::optional<std::string> query_param(std::string_view target, std::string_view name);

/// Session ids become file names: only a safe alphabet (letters, digits, '-', '_'), 1 to 64 of them.
bool valid_id(std::string_view id);

/// Whether the request asks for a session's event stream (the connection serves that itself).
bool is_event_stream(const http_request& req);

/// Answers one request through the route table: 404 for no such path, 405 for a path without
/// this method, 400 for a body that is not one JSON object (parsed here, once, for every handler).
boost::asio::awaitable<http_response> route(std::shared_ptr<server_state> server, const http_request& req);

}  // namespace agentctx::server
