// The turn-end and overflow routes: the session's own checks, answered with what they did.
#include "turn_routes.hpp"

#include "error_status.hpp"

#include <agentctx/compaction/token_accounting.hpp>
#include <agentctx/compaction/working_budget.hpp>
#include <agentctx/providers/wire_input.hpp>
#include <agentctx/runtime/error.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <initializer_list>
#include <optional>
#include <string>

namespace agentctx::server {

namespace asio = boost::asio;
namespace http = boost::beast::http;
namespace json = boost::json;
namespace rt = agentctx::runtime;
using boost::system::error_code;

namespace {

// The newest assistant message the next request carries, if any.
std::optional<compaction::message> last_assistant(const runtime::snapshot& snap)
{
    for (std::size_t i = snap.messages.size(); i-- > 0;)
        if (const auto& m = *snap.messages[i].msg; m.role == compaction::role::assistant)
            return m;
    return std::nullopt;
}

// The token count the threshold check compares (as the session does): the reported usage, or
// the projected estimate when there is none, the context was edited or the call failed.
std::int64_t checked_tokens(const runtime::snapshot& snap, const compaction::message& m)
{
    const std::int64_t direct = m.usage ? compaction::calculate_context_tokens(*m.usage) : 0;
    if (snap.has_edits || m.stop_reason == compaction::stop_reason::error || direct == 0)
        return snap.context_tokens();
    return direct;
}

// What a committed compaction adds to an answer.
void add_compaction(json::object& out, const rt::compaction_outcome& o)
{
    if (!o.compacted || !o.result)
        return;
    out["entryId"] = o.entry_id;
    out["tokensBefore"] = o.result->tokens_before;
    out["tokensAfter"] = o.result->tokens_after;
    if (o.reason)
        out["reason"] = rt::to_string(*o.reason);
}

http_response bad(const http_request& req, std::string_view why)
{
    return reply(req, http::status::bad_request, error_body("invalid_request", why));
}

// The first field of `body` not among `known` (as the other routes, unknown fields are refused).
std::optional<std::string> unknown_field(
    const json::object& body, std::initializer_list<std::string_view> known
)
{
    for (const auto& kv : body)
        if (std::find(known.begin(), known.end(), std::string_view(kv.key())) == known.end())
            return std::string(kv.key()) + ": unknown field";
    return std::nullopt;
}

}  // namespace

asio::awaitable<http_response> turn_end(request_context& c, const lease& held)
{
    if (const auto why = unknown_field(c.body, {"format", "usage"}))
        co_return bad(c.req, *why);
    const auto* f = c.body.if_contains("format");
    const auto format =
        f && f->is_string() ? providers::input_format_from_string(f->get_string()) : std::nullopt;
    if (!format)
        co_return bad(c.req, "format: must be openai, responses or anthropic");
    const auto* usage = c.body.if_contains("usage");
    if (usage && !usage->is_object())
        co_return bad(c.req, "usage: expected an object");
    if (providers::diagnostics why; usage && !providers::check_wire_usage(usage->get_object(), why))
        co_return bad(c.req, why.message);
    const auto snap = held->session().current();
    auto m = last_assistant(*snap);
    if (!m)
        co_return reply(
            c.req,
            http::status::conflict,
            error_body("no_assistant_message", "the session has no assistant message to check")
        );
    if (usage)
        m->usage = providers::usage_from_wire(*format, usage->get_object());
    const auto& cfg = held->session().config();
    // The window the check uses: the serving model's after a model_change (not with `--compat pi`).
    const auto window = cfg.compat == compaction::compat_mode::pi
                            ? cfg.model.context_window
                            : held->session().serving_model().context_window;
    json::object out{
        {"compacted", false},
        {"retry", false},
        {"tokens", checked_tokens(*snap, *m)},
        {"contextWindow", window},
        {"threshold", compaction::automatic_threshold(window, cfg.settings, cfg.compat)}};
    const auto started = std::chrono::steady_clock::now();
    auto [ec, outcome] =
        co_await held->session().async_on_turn_end(std::move(*m), asio::as_tuple(asio::use_awaitable));
    c.server.metrics.turn_check(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()
    );
    if (ec && ec != rt::errc::auto_compaction_paused && ec != rt::errc::overflow_recovery_failed)
        co_return reply(
            c.req,
            status_for(ec),
            error_body(ec.message(), without_data_dir(outcome.message, c.server.data_dir_prefix))
        );
    out["compacted"] = outcome.compacted;
    out["retry"] = outcome.compacted && outcome.will_retry;
    add_compaction(out, outcome);
    if (!outcome.message.empty())
        out["message"] = outcome.message;
    co_return reply(c.req, http::status::ok, out);
}

asio::awaitable<http_response> overflow(request_context& c, const lease& held)
{
    if (const auto why = unknown_field(c.body, {"status", "body"}))
        co_return bad(c.req, *why);
    const auto* status = c.body.if_contains("status");
    const auto* body = c.body.if_contains("body");
    if (!status || !status->is_int64() || status->get_int64() < 100 || status->get_int64() > 599)
        co_return bad(c.req, "status: expected the provider's HTTP status (100 to 599)");
    if (body && !body->is_string())
        co_return bad(c.req, "body: expected a string");
    // As the provider clients word a failed call: the status, then the body ("413 (no body)" without one).
    std::string error = std::to_string(status->get_int64()) + " ";
    error += body && !body->get_string().empty() ? std::string(body->get_string()) : std::string("(no body)");
    const auto started = std::chrono::steady_clock::now();
    auto [ec, outcome] = co_await held->session().async_recover_overflow(
        std::move(error), asio::as_tuple(asio::use_awaitable)
    );
    c.server.metrics.turn_check(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()
    );
    if (ec == rt::errc::not_overflow)
        co_return reply(
            c.req,
            http::status::ok,
            json::object{
                {"overflow", false}, {"retry", false}, {"compacted", false}, {"message", outcome.message}}
        );
    if (ec && ec != rt::errc::overflow_recovery_failed && ec != rt::errc::auto_compaction_paused)
        co_return reply(
            c.req,
            status_for(ec),
            error_body(ec.message(), without_data_dir(outcome.message, c.server.data_dir_prefix))
        );
    json::object out{
        {"overflow", true},
        {"retry", !ec && outcome.compacted && outcome.will_retry},
        {"compacted", outcome.compacted}};
    add_compaction(out, outcome);
    if (!outcome.message.empty())
        out["message"] = outcome.message;
    co_return reply(c.req, http::status::ok, out);
}

}  // namespace agentctx::server
