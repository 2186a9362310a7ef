// Errors to HTTP: the status of each error code, and what of a failure a client may read.
#pragma once

#include <agentctx/compaction/error.hpp>

#include <boost/beast/http/status.hpp>
#include <boost/json/object.hpp>
#include <boost/system/error_code.hpp>

#include <string>
#include <string_view>

namespace agentctx::server {

/// The status of a failed operation: bad input 400, unknown session 404, conflicts (locked, stale,
/// nothing to compact, another node compacting) 409, a rejected summary 422, the server's own
/// limits and an unavailable database 503, a session file that cannot be written 500, and a
/// failed model provider 502.
boost::beast::http::status status_for(const boost::system::error_code& ec);

/// What a client may learn about a failure to open or create a session: store diagnostics name
/// files by absolute path, so only load diagnostics (which name lines) are passed on.
std::string public_message(const boost::system::error_code& ec, const compaction::diagnostics& diag);

/// `message` without any occurrence of `dir` (store failures name the session file: only its
/// name, relative to the data directory, is kept).
std::string without_data_dir(std::string message, const std::string& dir);

/// `{"error": {"code", "message"}}`.
boost::json::object error_body(std::string_view code, std::string_view message);

}  // namespace agentctx::server
