// The server's HTTP message types and its JSON answers.
#pragma once

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstddef>
#include <optional>
#include <string_view>

namespace agentctx::server {

using http_request = boost::beast::http::request<boost::beast::http::string_body>;
using http_response = boost::beast::http::response<boost::beast::http::string_body>;

/// A JSON answer to `req` (its HTTP version and keep-alive).
http_response reply(const http_request& req, boost::beast::http::status st, const boost::json::value& body);

/// 503 `too_many_open_sessions` (with Retry-After): every one of the `limit` open sessions is in use.
http_response busy_reply(const http_request& req, std::size_t limit);

/// Items one request may carry: messages or input items of a batch (`POST`/`PUT /messages`),
/// and `requiredEntryIds` of a view. Over it: 413 `too_many_items` naming the field.
inline constexpr std::size_t max_batch_items = 10000;
inline constexpr std::size_t max_required_ids = 10000;

/// 413 `too_many_items` with `field` = `key` when `body[key]` is an array of more than `limit`
/// items; nullopt otherwise (absent, another type, or within the limit).
std::optional<http_response> too_many_items(
    const http_request& req, const boost::json::object& body, std::string_view key, std::size_t limit
);

}  // namespace agentctx::server
