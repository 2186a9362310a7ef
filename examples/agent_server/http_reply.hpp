// The server's HTTP message types and its JSON answers.
#pragma once

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/json/value.hpp>

#include <cstddef>

namespace agentctx::server {

using http_request = boost::beast::http::request<boost::beast::http::string_body>;
using http_response = boost::beast::http::response<boost::beast::http::string_body>;

/// A JSON answer to `req` (its HTTP version and keep-alive).
http_response reply(const http_request& req, boost::beast::http::status st, const boost::json::value& body);

/// 503 `too_many_open_sessions` (with Retry-After): every one of the `limit` open sessions is in use.
http_response busy_reply(const http_request& req, std::size_t limit);

}  // namespace agentctx::server
