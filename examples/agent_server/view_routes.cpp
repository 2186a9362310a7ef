// The request-view route: the session's budgeted view, or the numbers of what did not fit.
#include "view_routes.hpp"

#include "error_status.hpp"

#include <agentctx/compaction/request_view.hpp>
#include <agentctx/compaction/token_estimate.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/array.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

namespace agentctx::server {

namespace asio = boost::asio;
namespace http = boost::beast::http;
namespace json = boost::json;

namespace {

// A non-negative integer field (absent: `fallback`); nullopt when it is something else.
std::optional<std::int64_t> count_field(
    const json::object& body, std::string_view name, std::int64_t fallback
)
{
    const auto* v = body.if_contains(name);
    if (!v)
        return fallback;
    if (v->is_int64() && v->get_int64() >= 0)
        return v->get_int64();
    if (v->is_uint64() && v->get_uint64() <= static_cast<std::uint64_t>(INT64_MAX))
        return static_cast<std::int64_t>(v->get_uint64());
    return std::nullopt;
}

// The body as a request_budget; `why` names the field at fault.
std::optional<compaction::request_budget> budget_of(const json::object& body, std::string& why)
{
    for (const auto& kv : body)
        if (kv.key() != "maxTokens" && kv.key() != "reservedOutput" && kv.key() != "safetyMargin" &&
            kv.key() != "systemTokens" && kv.key() != "requiredEntryIds")
        {
            why = std::string(kv.key()) + ": unknown field";
            return std::nullopt;
        }
    compaction::request_budget b;
    const auto max = body.contains("maxTokens") ? count_field(body, "maxTokens", 0) : std::nullopt;
    if (!max || *max <= 0)
    {
        why = "maxTokens: expected a positive integer";
        return std::nullopt;
    }
    b.max_tokens = *max;
    for (auto [name, out] :
         {std::pair<std::string_view, std::int64_t*>{"reservedOutput", &b.reserved_output},
          {"safetyMargin", &b.safety_margin},
          {"systemTokens", &b.system_tokens}})
    {
        const auto n = count_field(body, name, 0);
        if (!n)
        {
            why = std::string(name) + ": expected a non-negative integer";
            return std::nullopt;
        }
        *out = *n;
    }
    if (const auto* r = body.if_contains("requiredEntryIds"))
    {
        std::unordered_set<std::string> ids;
        const bool strings =
            r->is_array() &&
            std::all_of(r->get_array().begin(), r->get_array().end(), [](const json::value& v) {
                return v.is_string();
            });
        if (!strings)
        {
            why = "requiredEntryIds: expected an array of entry ids";
            return std::nullopt;
        }
        for (const auto& v : r->get_array())
            ids.emplace(v.get_string());
        // One hash lookup per message (a linear search per message was quadratic).
        b.required = [ids = std::move(ids)](const compaction::context_message& m) {
            return ids.count(m.entry_id) != 0;
        };
    }
    return b;
}

// As the context route renders messages: role, entry id and estimated tokens.
json::object view_json(const compaction::fit_result& v)
{
    json::array msgs;
    for (const auto& m : v.messages)
        msgs.push_back(json::object{
            {"role", compaction::to_string(m.msg->role)},
            {"entryId", m.entry_id},
            {"tokens", compaction::estimate_tokens(*m.msg)}});
    const auto& t = v.tokens;
    return json::object{
        {"reason", compaction::to_string(v.reason)},
        {"messages", std::move(msgs)},
        {"keptEntryIds", json::array(v.kept_entry_ids.begin(), v.kept_entry_ids.end())},
        {"tokens",
         json::object{
             {"maxTokens", t.max_tokens},
             {"system", t.system},
             {"fixed", t.fixed},
             {"messages", t.messages},
             {"reservedOutput", t.reserved_output},
             {"safetyMargin", t.safety_margin},
             {"availableForMessages", t.available_for_messages},
             {"total", t.total}}}};
}

// The numbers of the budget_exceeded event, as the event stream shows them.
json::object shortfall_json(const compaction::fit_result& v)
{
    const auto& s = *v.shortfall;
    return json::object{
        {"inputTokens", s.input_tokens},
        {"allowance", v.tokens.available_for_messages},
        {"requiredTokens", s.required_tokens},
        {"boundary", json::object{{"entryId", s.boundary_entry_id}, {"position", s.boundary_position}}},
        {"required", json::object{{"entryId", s.required_entry_id}, {"position", s.required_position}}}};
}

}  // namespace

asio::awaitable<http_response> request_view(request_context& c, const lease& held)
{
    if (auto over = too_many_items(c.req, c.body, "requiredEntryIds", max_required_ids))
        co_return std::move(*over);
    std::string why;
    auto budget = budget_of(c.body, why);
    if (!budget)
    {
        auto body = error_body("invalid_request", why);
        body["error"].as_object()["field"] = why.substr(0, why.find(':'));
        co_return reply(c.req, http::status::bad_request, std::move(body));
    }
    auto [ec, view] =
        co_await held->session().async_request_view(std::move(*budget), asio::as_tuple(asio::use_awaitable));
    if (ec)
        co_return reply(
            c.req, status_for(ec), error_body(ec.message(), "the request view could not be built")
        );
    if (view.shortfall)
    {
        auto body = error_body(
            "budget_exceeded",
            "what must stay (" + std::to_string(view.shortfall->required_tokens) +
                " tokens) does not fit the view's room for messages (" +
                std::to_string(view.tokens.available_for_messages) + ")"
        );
        body["error"].as_object()["budget"] = shortfall_json(view);
        co_return reply(c.req, http::status::conflict, std::move(body));
    }
    co_return reply(c.req, http::status::ok, view_json(view));
}

}  // namespace agentctx::server
