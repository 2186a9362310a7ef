// The route table and its handlers: create, append, read an entry, compact, context, metrics.
#include "routes.hpp"

#include "call_check.hpp"
#include "error_status.hpp"
#include "openapi_text.hpp"
#include "request_json.hpp"
#include "route_context.hpp"
#include "turn_routes.hpp"
#include "view_routes.hpp"
#include "wire_routes.hpp"
#include "server_error.hpp"

#include <agentctx/compaction/client_values.hpp>
#include <agentctx/compaction/jobs.hpp>
#include <agentctx/compaction/json_text.hpp>
#include <agentctx/compaction/token_estimate.hpp>
#include <agentctx/compaction/unresolved_calls.hpp>
#include <agentctx/compaction/working_budget.hpp>
#include <agentctx/providers/chat_messages.hpp>
#include <agentctx/runtime/error.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/json/array.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <variant>

namespace agentctx::server {

namespace asio = boost::asio;
namespace http = boost::beast::http;
namespace json = boost::json;
using boost::system::error_code;

std::vector<std::string> split_target(std::string_view target)
{
    target = target.substr(0, target.find('?'));
    std::vector<std::string> parts;
    for (std::size_t p = 1; p <= target.size();)
    {
        const auto slash = target.find('/', p);
        parts.emplace_back(
            target.substr(p, slash == std::string_view::npos ? std::string_view::npos : slash - p)
        );
        if (slash == std::string_view::npos)
            break;
        p = slash + 1;
    }
    return parts;
}

std::optional<std::string> query_param(std::string_view target, std::string_view name)
{
    const auto q = target.find('?');
    if (q == std::string_view::npos)
        return std::nullopt;
    for (std::string_view rest = target.substr(q + 1); !rest.empty();)
    {
        const auto amp = rest.find('&');
        const auto pair = rest.substr(0, amp);
        const auto eq = pair.find('=');
        if (pair.substr(0, eq) == name)
            return std::string(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1));
        rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    }
    return std::nullopt;
}

bool valid_id(std::string_view id)
{
    if (id.empty() || id.size() > 64)
        return false;
    return std::all_of(id.begin(), id.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
    });
}

bool is_event_stream(const http_request& req)
{
    const auto parts = split_target(req.target());
    return req.method() == http::verb::get && parts.size() == 4 && parts[0] == "v1" &&
           parts[1] == "sessions" && parts[3] == "events";
}

namespace {

// A number of the body out of the range of a double, named by its path.
json::object invalid_value_body(std::string field)
{
    auto body = error_body("invalid_value", field + ": a number out of the range of a double");
    body["error"].as_object()["field"] = std::move(field);
    return body;
}

asio::awaitable<http_response> get_metrics(request_context& c)
{
    http_response res{http::status::ok, c.req.version()};
    res.set(http::field::content_type, "text/plain; version=0.0.4");
    res.keep_alive(c.req.keep_alive());
    res.body() = c.server.metrics.render(c.server.sessions->active());
    if (c.server.opts.pg)
        res.body() += render_pg_metrics(c.server.opts.pg->stats());
    res.prepare_payload();
    co_return res;
}

// The checked-in OpenAPI document, as embedded at build time.
asio::awaitable<http_response> get_openapi(request_context& c)
{
    http_response res{http::status::ok, c.req.version()};
    res.set(http::field::content_type, "application/json");
    res.keep_alive(c.req.keep_alive());
    res.body() = std::string(openapi_text());
    res.prepare_payload();
    co_return res;
}

// A session's own settings (`settings` of POST /v1/sessions): only the "jobs" section is
// per session. Errors name the field (`settings.jobs.rules[0].id.from`).
compaction::result<std::optional<compaction::job_rules>> session_settings(
    const json::object& body, compaction::diagnostics& diag
)
{
    const auto* s = body.if_contains("settings");
    if (!s)
        return std::optional<compaction::job_rules>{};
    diag.field = "settings";
    if (!s->is_object())
        return diag.message = "settings: expected an object", compaction::errc::invalid_settings;
    for (const auto& kv : s->get_object())
        if (kv.key() != "jobs")
            return diag.field = "settings." + std::string(kv.key()),
                   diag.message = diag.field + ": not a per-session setting (only \"jobs\" is)",
                   compaction::errc::invalid_settings;
    diag.field.clear();
    auto jobs = compaction::parse_job_settings(s->get_object(), diag);
    if (!jobs)
    {
        // The field as the request body spells it.
        const std::string from = "field '" + diag.field + "'";
        diag.field = "settings." + diag.field;
        if (const auto at = diag.message.find(from); at != std::string::npos)
            diag.message.replace(at, from.size(), "field '" + diag.field + "'");
        return jobs.error();
    }
    return std::optional(std::move(*jobs));
}

asio::awaitable<http_response> create_session(request_context& c)
{
    const auto* cwd = c.body.if_contains("cwd");
    std::string dir = "/";  // no temporaries around co_await: GCC 12 destroys them twice
    if (cwd && cwd->is_string())
        dir = std::string(cwd->get_string());
    compaction::diagnostics diag;
    auto own = session_settings(c.body, diag);
    if (!own)
    {
        auto body = error_body("invalid_settings", diag.message);
        body["error"].as_object()["field"] = diag.field;
        co_return reply(c.req, http::status::unprocessable_entity, std::move(body));
    }
    std::function<void(const std::string&)> declare;
    if (*own)
        declare = [state = c.server.shared_from_this(), jobs = std::move(**own)](const std::string& id) {
            state->declare_jobs(id, jobs);
        };
    std::string new_id;  // for forgetting a declaration whose session was never created
    // Named, not a temporary in the co_await expression (GCC 12 destroys those twice).
    const std::function<void(const std::string&)> before_open = [&new_id, &declare](const std::string& id) {
        new_id = id;
        if (declare)
            declare(id);
    };
    auto created = co_await c.server.sessions->create(dir, diag, before_open);
    if (!created && declare)
        c.server.forget_jobs(new_id);
    if (!created && created.error() == errc::too_many_open_sessions)
        co_return busy_reply(c.req, c.server.sessions->max_open_sessions());
    if (!created)
    {
        spdlog::error("cannot create a session: {}", diag.message);
        co_return reply(
            c.req,
            status_for(created.error()),
            error_body(created.error().message(), public_message(created.error(), diag))
        );
    }
    co_return reply(c.req, http::status::created, json::object{{"id", created->first}});
}

asio::awaitable<http_response> use_post(request_context& c)
{
    co_return reply(c.req, http::status::method_not_allowed, error_body("method_not_allowed", "use POST"));
}

// The assistant message of an append, decoded for the automatic check that follows it.
std::optional<compaction::message> assistant_message(const json::object& body)
{
    const auto* m = body.if_contains("message");
    if (!m || !m->is_object() || !m->get_object().contains("role") ||
        m->get_object().at("role") != "assistant")
        return std::nullopt;
    compaction::diagnostics d;
    auto decoded = compaction::decode_message(m->get_object(), "message", d);
    return decoded ? std::optional(std::move(*decoded)) : std::nullopt;
}

// A model_change is answered after the pre-request check: a switch to a smaller window the
// context exceeds compacts first (model downshift), or fails with model_window_exceeded.
asio::awaitable<http_response> after_model_change(request_context& c, const lease& held, std::string id)
{
    auto [ec, outcome] = co_await held->session().async_before_prompt(asio::as_tuple(asio::use_awaitable));
    // As turn-end: a paused or exhausted automatic path is no failure of the append.
    if (ec && ec != runtime::errc::auto_compaction_paused && ec != runtime::errc::overflow_recovery_failed)
        co_return reply(
            c.req,
            status_for(ec),
            error_body(
                ec.message(),
                "the model_change entry " + id + " is stored; " +
                    without_data_dir(outcome.message, c.server.data_dir_prefix)
            )
        );
    json::object out{{"id", id}};
    if (outcome.compacted && outcome.result && outcome.reason)
        out["compaction"] = json::object{
            {"entryId", outcome.entry_id},
            {"reason", runtime::to_string(*outcome.reason)},
            {"tokensBefore", outcome.result->tokens_before},
            {"tokensAfter", outcome.result->tokens_after}};
    co_return reply(c.req, http::status::created, std::move(out));
}

// A model_change to a model the server does not know (neither the serving model nor one of the
// settings' `models`) would be stored and ignored: refused with 400 `unknown_model`, field `modelId`.
std::optional<http_response> unlisted_model(
    const http_request& req, const json::object& body, const runtime::session_config& config
)
{
    const auto* p = body.if_contains("provider");
    const auto* m = body.if_contains("modelId");
    if (!p || !p->is_string() || !m || !m->is_string())
        return std::nullopt;  // the entry's own validation names the field
    auto same = [&](const runtime::model_identity& k) {
        return k.provider == p->get_string() && k.model_id == m->get_string();
    };
    if (same(config.model) || std::any_of(config.models.begin(), config.models.end(), same))
        return std::nullopt;
    auto out = error_body(
        "unknown_model",
        "modelId: " + std::string(p->get_string()) + "/" + std::string(m->get_string()) +
            " is neither the serving model nor one of the settings' models"
    );
    out["error"].as_object()["field"] = "modelId";
    return reply(req, http::status::bad_request, std::move(out));
}

// unpairable_entry, on the body worker when the context is long (off_thread_context_messages).
asio::awaitable<std::optional<refused_field>> unpairable_entry_off_thread(
    request_context& c, std::shared_ptr<const runtime::snapshot> snap
)
{
    if (snap->messages.size() <= off_thread_context_messages)
        co_return unpairable_entry(*snap, c.body);
    auto work = [snap = std::move(snap), &body = c.body]() -> asio::awaitable<std::optional<refused_field>> {
        co_return unpairable_entry(*snap, body);
    };
    co_return co_await asio::co_spawn(c.server.body_worker, std::move(work), asio::use_awaitable);
}

asio::awaitable<http_response> append_entry(request_context& c, const lease& held)
{
    // Only entries that may follow a header can be appended through the API.
    const auto* t = c.body.if_contains("type");
    if (t && t->is_string() && (t->get_string() == "session" || t->get_string() == "compaction"))
        co_return reply(
            c.req,
            http::status::unprocessable_entity,
            error_body("entry_not_appendable", "session and compaction entries cannot be appended")
        );
    if (auto refused = co_await unpairable_entry_off_thread(c, held->session().current()))
    {
        auto body = error_body("unpaired_tool_call", refused->message);
        body["error"].as_object()["field"] = refused->field;
        co_return reply(c.req, http::status::bad_request, std::move(body));
    }
    auto turn_end = assistant_message(c.body);
    const bool model_change = t && t->is_string() && t->get_string() == "model_change";
    if (model_change)
        if (auto refused = unlisted_model(c.req, c.body, held->session().config()))
            co_return std::move(*refused);
    compaction::diagnostics diag;
    auto [ec, id] =
        co_await held->session().async_append(std::move(c.body), diag, asio::as_tuple(asio::use_awaitable));
    if (ec)
    {
        // The diagnostics: the sentence (field path and reason) and the field on its own.
        const bool refused = ec.category() == compaction::error_category();
        auto body = error_body(
            ec.message(),
            !diag.message.empty() ? without_data_dir(diag.message, c.server.data_dir_prefix)
            : refused             ? std::string("the entry was rejected")
                                  : public_message(ec, diag)
        );
        if (!diag.field.empty())
            body["error"].as_object()["field"] = diag.field;
        co_return reply(c.req, status_for(ec), std::move(body));
    }
    c.server.metrics.append();
    if (model_change)
        co_return co_await after_model_change(c, held, std::move(id));
    // The automatic check after each assistant message; its result shows on the event stream.
    if (turn_end)
        held->session().async_on_turn_end(
            std::move(*turn_end), [hold = held](error_code, runtime::compaction_outcome) {}
        );
    co_return reply(c.req, http::status::created, json::object{{"id", id}});
}

asio::awaitable<http_response> compact(request_context& c, const lease& held)
{
    std::optional<std::string> instructions;
    if (const auto* i = c.body.if_contains("instructions"); i && i->is_string())
        instructions = std::string(i->get_string());
    auto [ec, outcome] =
        co_await held->session().async_compact(std::move(instructions), asio::as_tuple(asio::use_awaitable));
    if (ec || !outcome.compacted)
        co_return reply(
            c.req,
            status_for(ec),
            error_body(
                ec ? ec.message() : "not_compacted",
                without_data_dir(outcome.message, c.server.data_dir_prefix)
            )
        );
    const auto& r = *outcome.result;
    co_return reply(
        c.req,
        http::status::ok,
        json::object{
            {"entryId", outcome.entry_id},
            {"firstKeptEntryId", r.first_kept_entry_id},
            {"tokensBefore", r.tokens_before},
            {"tokensAfter", r.tokens_after},
            {"summary", r.summary}}
    );
}

// The context a session's next request carries: messages (unresolved tool calls answered, see
// unresolved_calls.hpp), the native state, and with `wire` the request body's messages / input.
json::object context_json(
    const runtime::snapshot& snap,
    const std::optional<std::string>& wire,
    compaction::summary_framing framing,
    const compaction::job_rules* jobs,
    std::optional<std::int64_t> inline_threshold = std::nullopt
)
{
    json::array msgs;
    const auto ctx =
        compaction::with_unknown_outcomes(snap.messages.to_vector(), compaction::compat_mode::agentctx, jobs);
    for (const auto& m : ctx)
        msgs.push_back(json::object{
            {"role", compaction::to_string(m.msg->role)},
            {"entryId", m.entry_id},
            {"tokens", compaction::estimate_tokens(*m.msg)}});
    json::object out{
        {"leafId", snap.leaf_id ? json::value(*snap.leaf_id) : json::value(nullptr)},
        {"estimatedTokens", snap.context_tokens()},
        {"messages", std::move(msgs)}};
    const auto* native = snap.native.get();
    if (native)
        out["native"] = json::object{
            {"provider", native->state.format == providers::wire_format::anthropic ? "anthropic" : "openai"},
            {"entryId", native->entry_id}};
    if (wire == "responses")
        out["wire"] = providers::to_responses_input(ctx, native, framing);
    if (wire == "responses" && inline_threshold)  // the loop's request compacts inline
        out["contextManagement"] = providers::inline_context_management(*inline_threshold);
    else if (wire && wire != "responses")
        out["wire"] = providers::to_wire_messages(
            *wire == "anthropic" ? providers::wire_format::anthropic : providers::wire_format::openai,
            ctx,
            native,
            framing
        );
    return out;
}

asio::awaitable<http_response> context(request_context& c, const lease& held)
{
    const auto wire = query_param(c.req.target(), "wire");  // absent: no wire view; empty: refused
    if (wire && *wire != "anthropic" && *wire != "openai" && *wire != "responses")
        co_return reply(
            c.req,
            http::status::bad_request,
            error_body("invalid_request", "wire must be anthropic, openai or responses")
        );
    const auto& cfg = held->session().config();
    const auto framing = providers::summary_framing_for(cfg.compat);
    std::optional<std::int64_t> inline_threshold;
    if (cfg.summarizer && cfg.summarizer->capabilities().inline_compaction &&
        cfg.compat != compaction::compat_mode::pi)
        inline_threshold =
            compaction::automatic_threshold(cfg.model.context_window, cfg.settings, cfg.compat);
    co_return reply(
        c.req,
        http::status::ok,
        context_json(
            *held->session().current(),
            wire,
            framing,
            cfg.compat == compaction::compat_mode::pi ? nullptr : &cfg.jobs,
            inline_threshold
        )
    );
}

// One entry exactly as stored: the original of a tool result the clearing tier replaced.
asio::awaitable<http_response> get_entry(request_context& c, const lease& held)
{
    const auto parts = split_target(c.req.target());
    const std::string entry_id = parts.size() == 5 ? parts[4] : std::string();
    if (!valid_id(entry_id))
        co_return reply(
            c.req, http::status::bad_request, error_body("invalid_request", "the entry id is not valid")
        );
    auto [ec, entry] = co_await held->session().async_original(entry_id, asio::as_tuple(asio::use_awaitable));
    if (ec == compaction::errc::entry_not_found)
        co_return reply(
            c.req,
            http::status::not_found,
            error_body("not_found", "no entry '" + entry_id + "' in this session")
        );
    if (ec)
        co_return reply(c.req, status_for(ec), error_body(ec.message(), "the entry could not be read"));
    co_return reply(c.req, http::status::ok, std::move(entry));
}

asio::awaitable<http_response> no_such_action(request_context& c, const lease&)
{
    co_return reply(
        c.req,
        http::status::method_not_allowed,
        error_body("method_not_allowed", "no such action for this method")
    );
}

struct route_entry
{
    std::optional<http::verb> method;  ///< nullopt: any method (a path's answer when no other entry takes it)
    std::string_view pattern;          ///< segments; "{id}" is a valid session id, "{action}" any segment
    std::variant<plain_handler, session_handler> handler;
};

// First match wins; a session handler gets the session leased (404 when it does not exist).
const route_entry route_table[] = {
    {http::verb::get, "/metrics", &get_metrics},
    {http::verb::get, "/openapi.json", &get_openapi},
    {http::verb::post, "/v1/sessions", &create_session},
    {std::nullopt, "/v1/sessions", &use_post},
    {http::verb::post, "/v1/sessions/{id}/entries", &append_entry},
    {http::verb::get, "/v1/sessions/{id}/entries/{entryId}", &get_entry},
    {http::verb::post, "/v1/sessions/{id}/compact", &compact},
    {http::verb::get, "/v1/sessions/{id}/context", &context},
    {http::verb::post, "/v1/sessions/{id}/messages", &append_wire_messages},
    {http::verb::put, "/v1/sessions/{id}/messages", &replace_wire_messages},
    {http::verb::post, "/v1/sessions/{id}/turn-end", &turn_end},
    {http::verb::post, "/v1/sessions/{id}/overflow", &overflow},
    {http::verb::post, "/v1/sessions/{id}/view", &request_view},
    {std::nullopt, "/v1/sessions/{id}/{action}", &no_such_action},
};

// Whether `parts` match `pattern`; the id segment, if any, in `id`.
bool matches(std::string_view pattern, const std::vector<std::string>& parts, std::string& id)
{
    const auto segments = split_target(pattern);
    if (segments.size() != parts.size())
        return false;
    for (std::size_t i = 0; i < parts.size(); ++i)
    {
        if (segments[i] == "{id}")
        {
            if (!valid_id(parts[i]))
                return false;
            id = parts[i];
        }
        else if (segments[i] != "{action}" && segments[i] != "{entryId}" && segments[i] != parts[i])
            return false;
    }
    return true;
}

asio::awaitable<http_response> with_session(
    request_context& c, const std::string& id, session_handler handler
)
{
    compaction::diagnostics diag;
    auto held = co_await c.server.sessions->find(id, diag);
    if (!held && held.error() == errc::too_many_open_sessions)
        co_return busy_reply(c.req, c.server.sessions->max_open_sessions());
    if (!held)
        co_return reply(
            c.req,
            status_for(held.error()),
            error_body(held.error().message(), "session '" + id + "': " + public_message(held.error(), diag))
        );
    co_return co_await handler(c, *held);
}

// A request body parsed and checked, or the 400 that refuses it.
struct parsed_body
{
    std::optional<json::object> body;
    std::optional<http_response> refused;
};

parsed_body parse_body(const http_request& req)
{
    std::string why;
    auto parsed = parse_request_object(req.body(), compaction::load_options{}.max_depth, why);
    if (!parsed)
        return {std::nullopt, reply(req, http::status::bad_request, error_body("invalid_json", why))};
    // 1e400 parses as infinity, which JSON cannot hold: refused, never written back as null.
    if (auto at = compaction::first_non_finite(*parsed, ""))
        return {std::nullopt, reply(req, http::status::bad_request, invalid_value_body(std::move(*at)))};
    return {std::move(parsed), std::nullopt};
}

// parse_body on the body worker for a large body (off_thread_body_bytes): the io thread serves
// other requests meanwhile. The work owns what it reads (the caller may be cancelled).
asio::awaitable<parsed_body> parse_request_body(server_state& s, const http_request& req)
{
    if (req.body().size() <= off_thread_body_bytes)
        co_return parse_body(req);
    auto work = [copy = std::make_shared<const http_request>(req),
                 hook = s.opts.before_body_parse]() -> asio::awaitable<parsed_body> {
        if (hook)
            hook();
        co_return parse_body(*copy);
    };
    co_return co_await asio::co_spawn(s.body_worker, std::move(work), asio::use_awaitable);
}

}  // namespace

asio::awaitable<http_response> route(std::shared_ptr<server_state> server, const http_request& req)
{
    request_context c{*server, req, {}};
    if ((req.method() == http::verb::post || req.method() == http::verb::put) && !req.body().empty())
    {
        auto parsed = co_await parse_request_body(*server, req);
        if (parsed.refused)
            co_return std::move(*parsed.refused);
        c.body = std::move(*parsed.body);
    }
    const auto parts = split_target(req.target());
    for (const auto& r : route_table)
    {
        std::string id;
        if ((r.method && *r.method != req.method()) || !matches(r.pattern, parts, id))
            continue;
        if (const auto* plain = std::get_if<plain_handler>(&r.handler))
            co_return co_await (*plain)(c);
        co_return co_await with_session(c, id, std::get<session_handler>(r.handler));
    }
    co_return reply(req, http::status::not_found, error_body("not_found", "no such endpoint"));
}

}  // namespace agentctx::server
