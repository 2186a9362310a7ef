// JSON answers of the agent server.
#include "http_reply.hpp"

#include "error_status.hpp"

#include <agentctx/compaction/json_text.hpp>

#include <boost/beast/http/field.hpp>

#include <string>

namespace agentctx::server {

namespace http = boost::beast::http;

http_response reply(const http_request& req, http::status st, const boost::json::value& body)
{
    http_response res{st, req.version()};
    res.set(http::field::content_type, "application/json");
    res.keep_alive(req.keep_alive());
    res.body() = compaction::stringify(body);
    // Every 503 is retryable (busy, out of descriptors, shutting down): it says when.
    if (st == http::status::service_unavailable)
        res.set(http::field::retry_after, "1");
    res.prepare_payload();
    return res;
}

http_response busy_reply(const http_request& req, std::size_t limit)
{
    auto res = reply(
        req,
        http::status::service_unavailable,
        error_body(
            "too_many_open_sessions",
            "all " + std::to_string(limit) + " open sessions are in use; retry later"
        )
    );
    res.set(http::field::retry_after, "1");
    return res;
}

std::optional<http_response> too_many_items(
    const http_request& req, const boost::json::object& body, std::string_view key, std::size_t limit
)
{
    const auto* v = body.if_contains(key);
    if (!v || !v->is_array() || v->get_array().size() <= limit)
        return std::nullopt;
    auto out = error_body(
        "too_many_items",
        std::string(key) + ": " + std::to_string(v->get_array().size()) + " items, at most " +
            std::to_string(limit) + " per request"
    );
    out["error"].as_object()["field"] = std::string(key);
    return reply(req, http::status::payload_too_large, out);
}

}  // namespace agentctx::server
