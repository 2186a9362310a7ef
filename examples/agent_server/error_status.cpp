// Errors to HTTP statuses and client-safe messages.
#include "error_status.hpp"

#include "server_error.hpp"

#include <agentctx/runtime/error.hpp>

#include <algorithm>
#include <iterator>

namespace agentctx::server {

namespace http = boost::beast::http;
namespace rt = agentctx::runtime;
using boost::system::error_code;

namespace {

http::status compaction_status(const error_code& ec)
{
    // Bad input by the code's name, the name the client sees: this also covers the codes of
    // refused client input (a reserved entry type, a repeated key) wherever they arise.
    static constexpr std::string_view bad_input[] = {
        "wrong_type",
        "missing_field",
        "invalid_json",
        "duplicate_id",
        "dangling_parent",
        "reserved_type",
        "reserved_field",
        "duplicate_key",
        "invalid_value"};
    if (std::find(std::begin(bad_input), std::end(bad_input), ec.message()) != std::end(bad_input))
        return http::status::bad_request;
    const auto e = static_cast<compaction::errc>(ec.value());
    if (e == compaction::errc::already_compacted || e == compaction::errc::nothing_to_compact ||
        e == compaction::errc::boundary_unavailable || e == compaction::errc::budget_exceeded)
        return http::status::conflict;
    return http::status::unprocessable_entity;  // the summary was rejected
}

}  // namespace

http::status status_for(const error_code& ec)
{
    if (ec.category() == compaction::error_category())
        return compaction_status(ec);
    if (ec == rt::errc::not_found)
        return http::status::not_found;
    if (ec == rt::errc::session_locked || ec == rt::errc::already_exists || ec == rt::errc::cancelled ||
        ec == rt::errc::stale_plan || ec == rt::errc::stale_leaf || ec == rt::errc::compaction_in_progress ||
        ec == rt::errc::model_window_exceeded || ec == rt::errc::summarized_history)
        return http::status::conflict;  // stale_leaf: the session reloaded, retry the append
    // session_closed: the server is stopping (SIGTERM) while the request was in flight; the
    // request did nothing and may be retried against the next server (reply adds Retry-After).
    if (ec == rt::errc::database_error || ec == errc::too_many_open_sessions ||
        ec == errc::out_of_descriptors || ec == rt::errc::session_closed)
        return http::status::service_unavailable;
    if (ec == rt::errc::io_error)
        return http::status::internal_server_error;  // the session file could not be written
    return http::status::bad_gateway;                // the model provider failed
}

std::string public_message(const error_code& ec, const compaction::diagnostics& diag)
{
    if (ec.category() == compaction::error_category())
        return diag.message;
    if (ec == rt::errc::not_found)
        return "no such session";
    if (ec == rt::errc::session_locked)
        return "the session file is locked by another writer";
    if (ec == rt::errc::already_exists)
        return "the session exists already";
    if (ec == rt::errc::database_error)
        return "the session database could not be read or written";
    if (ec == errc::out_of_descriptors)
        return "the server is out of file descriptors; retry later";
    if (ec == rt::errc::session_closed)
        return "the server is shutting down and did not carry out the request; retry";
    return "the session file could not be read or written";
}

std::string without_data_dir(std::string message, const std::string& dir)
{
    if (dir.empty())
        return message;
    for (auto p = message.find(dir); p != std::string::npos; p = message.find(dir, p))
        message.erase(p, dir.size());
    return message;
}

boost::json::object error_body(std::string_view code, std::string_view message)
{
    return {{"error", boost::json::object{{"code", code}, {"message", message}}}};
}

}  // namespace agentctx::server
