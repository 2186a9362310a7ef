// The agent server: Beast coroutines per connection, a registry of sessions, SSE subscribers.
#include "server.hpp"

#include <agentctx/compaction/json_text.hpp>
#include <agentctx/compaction/token_estimate.hpp>
#include <agentctx/runtime/error.hpp>
#include <agentctx/runtime/jsonl_store.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json/parse.hpp>

#include <spdlog/spdlog.h>

#include <map>
#include <mutex>
#include <random>

namespace agentctx::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using asio::ip::tcp;
using boost::system::error_code;

namespace {

using event_channel = asio::experimental::concurrent_channel<void(error_code, std::string)>;

// Session ids become file names: only a safe alphabet, so no path can be injected.
bool valid_id(std::string_view id)
{
    if (id.empty() || id.size() > 64)
        return false;
    return std::all_of(id.begin(), id.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; });
}

std::string new_session_id()
{
    thread_local std::mt19937_64 rng{std::random_device{}()};
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(rng()));
    return buf;
}

json::object error_body(std::string_view code, std::string_view message)
{
    return {{"error", json::object{{"code", code}, {"message", message}}}};
}

std::string event_json(const runtime::session_event& e, std::string& name)
{
    json::object o;
    if (const auto* s = std::get_if<runtime::compaction_start_event>(&e))
    {
        name = "compaction_start";
        o["reason"] = runtime::to_string(s->reason);
    }
    else if (const auto* end = std::get_if<runtime::compaction_end_event>(&e))
    {
        name = "compaction_end";
        o["reason"] = runtime::to_string(end->reason);
        o["aborted"] = end->aborted;
        o["willRetry"] = end->will_retry;
        if (end->result)
            o["result"] = json::object{{"firstKeptEntryId", end->result->first_kept_entry_id},
                                       {"tokensBefore", end->result->tokens_before},
                                       {"tokensAfter", end->result->tokens_after}};
        if (end->error_message)
            o["errorMessage"] = *end->error_message;
    }
    return compaction::stringify(o);
}

}  // namespace

struct agent_server::impl : std::enable_shared_from_this<impl>
{
    impl(asio::io_context& c, server_options o) : ioc(c), opts(std::move(o)), acceptor(c) {}

    struct session_slot
    {
        std::shared_ptr<runtime::session> session;
        std::mutex mu;
        std::vector<std::weak_ptr<event_channel>> subscribers;
    };

    asio::io_context& ioc;
    server_options opts;
    tcp::acceptor acceptor;
    std::mutex mu;
    std::map<std::string, std::shared_ptr<session_slot>> sessions;
    bool stopped = false;

    runtime::session_config config()
    {
        runtime::session_config c;
        c.settings = opts.settings;
        c.model = opts.model;
        if (opts.make_summarizer)
            c.summarizer = opts.make_summarizer(ioc.get_executor());
        return c;
    }

    void attach(const std::shared_ptr<session_slot>& slot)
    {
        slot->session->on_event([weak = std::weak_ptr(slot)](const runtime::session_event& e) {
            auto s = weak.lock();
            if (!s)
                return;
            std::string name;
            const std::string data = event_json(e, name);
            const std::string frame = "event: " + name + "\ndata: " + data + "\n\n";
            std::lock_guard lock(s->mu);
            for (auto& w : s->subscribers)
                if (auto ch = w.lock())
                    ch->try_send(error_code{}, frame);  // a slow subscriber misses events, never blocks the session
        });
    }

    // Wraps a store in a session slot with its event fan-out. Caller holds `mu`.
    compaction::result<std::shared_ptr<session_slot>> adopt(const std::string& id, std::unique_ptr<runtime::store> store,
                                                            compaction::diagnostics& diag)
    {
        auto s = runtime::session::open(ioc.get_executor(), std::move(store), config(), diag);
        if (!s)
            return s.error();
        auto slot = std::make_shared<session_slot>();
        slot->session = std::move(*s);
        attach(slot);
        sessions.emplace(id, slot);
        return slot;
    }

    // Opens a session's file on first use (blocking read; files are append-only logs).
    compaction::result<std::shared_ptr<session_slot>> find(const std::string& id, compaction::diagnostics& diag)
    {
        std::lock_guard lock(mu);
        if (auto it = sessions.find(id); it != sessions.end())
            return it->second;
        auto store = runtime::jsonl_store::open(opts.data_dir / (id + ".jsonl"), {}, diag);
        if (!store)
            return store.error();
        return adopt(id, std::move(*store), diag);
    }

    compaction::result<std::string> create(const std::string& cwd, compaction::diagnostics& diag)
    {
        const std::string id = new_session_id();
        auto header = compaction::make_header(id, compaction::iso_timestamp_now(), cwd);
        auto store = runtime::jsonl_store::create(opts.data_dir / (id + ".jsonl"), header, {}, diag);
        if (!store)
            return store.error();
        std::lock_guard lock(mu);
        if (auto slot = adopt(id, std::move(*store), diag); !slot)
            return slot.error();
        return id;
    }

    asio::awaitable<void> accept_loop()
    {
        for (;;)
        {
            auto [ec, sock] = co_await acceptor.async_accept(asio::as_tuple(asio::use_awaitable));
            if (ec)
                co_return;
            asio::co_spawn(ioc, serve(shared_from_this(), std::move(sock)), asio::detached);
        }
    }

    using response = http::response<http::string_body>;

    static response reply(const http::request<http::string_body>& req, http::status st, const json::value& body)
    {
        response res{st, req.version()};
        res.set(http::field::content_type, "application/json");
        res.keep_alive(req.keep_alive());
        res.body() = compaction::stringify(body);
        res.prepare_payload();
        return res;
    }

    static http::status status_for(const error_code& ec)
    {
        namespace rt = agentctx::runtime;
        if (ec == rt::make_error_code(rt::errc::not_found))
            return http::status::not_found;
        if (ec == rt::make_error_code(rt::errc::session_locked))
            return http::status::conflict;
        if (ec.category() == compaction::error_category())
        {
            const auto e = static_cast<compaction::errc>(ec.value());
            if (e == compaction::errc::wrong_type || e == compaction::errc::missing_field || e == compaction::errc::invalid_json ||
                e == compaction::errc::duplicate_id || e == compaction::errc::dangling_parent)
                return http::status::bad_request;
            if (e == compaction::errc::already_compacted || e == compaction::errc::nothing_to_compact ||
                e == compaction::errc::boundary_unavailable)
                return http::status::conflict;
            return http::status::unprocessable_entity;  // the summary was rejected
        }
        if (ec == rt::make_error_code(rt::errc::cancelled) || ec == rt::make_error_code(rt::errc::stale_plan))
            return http::status::conflict;
        return http::status::bad_gateway;  // the model provider failed
    }

    // Routes one request. SSE requests are handled in serve() itself.
    asio::awaitable<response> route(std::shared_ptr<impl> self, http::request<http::string_body>& req)
    {
        const std::string target(req.target());
        std::vector<std::string> parts;
        for (std::size_t p = 1; p <= target.size();)
        {
            const auto slash = target.find('/', p);
            parts.push_back(target.substr(p, slash == std::string::npos ? std::string::npos : slash - p));
            if (slash == std::string::npos)
                break;
            p = slash + 1;
        }
        const bool post = req.method() == http::verb::post;
        json::object body;
        if (post && !req.body().empty())
        {
            error_code ec;
            auto v = json::parse(req.body(), ec);
            if (ec || !v.is_object())
                co_return reply(req, http::status::bad_request, error_body("invalid_json", "the request body is not a JSON object"));
            body = std::move(v.get_object());
        }
        if (parts.size() < 2 || parts[0] != "v1" || parts[1] != "sessions")
            co_return reply(req, http::status::not_found, error_body("not_found", "no such endpoint"));
        compaction::diagnostics diag;
        if (parts.size() == 2)
        {
            if (!post)
                co_return reply(req, http::status::method_not_allowed, error_body("method_not_allowed", "use POST"));
            const auto* cwd = body.if_contains("cwd");
            auto id = self->create(cwd && cwd->is_string() ? std::string(cwd->get_string()) : std::string("/"), diag);
            if (!id)
                co_return reply(req, http::status::internal_server_error, error_body(id.error().message(), diag.message));
            co_return reply(req, http::status::created, json::object{{"id", *id}});
        }
        if (parts.size() != 4 || !valid_id(parts[2]))
            co_return reply(req, http::status::not_found, error_body("not_found", "no such endpoint"));
        auto slot = self->find(parts[2], diag);
        if (!slot)
            co_return reply(req, status_for(slot.error()), error_body(slot.error().message(), "session '" + parts[2] + "': " + diag.message));
        auto& session = *(*slot)->session;
        const std::string& action = parts[3];
        if (action == "entries" && post)
        {
            const bool assistant = body.contains("message") && body.at("message").is_object() &&
                                   body.at("message").as_object().contains("role") &&
                                   body.at("message").as_object().at("role") == "assistant";
            json::object message = assistant ? body.at("message").as_object() : json::object{};
            auto [ec, id] = co_await session.async_append(std::move(body), asio::as_tuple(asio::use_awaitable));
            if (ec)
                co_return reply(req, status_for(ec), error_body(ec.message(), "the entry was rejected"));
            if (assistant)
            {
                // The automatic check after each assistant message; its result shows on /events.
                compaction::diagnostics d;
                if (auto m = compaction::decode_message(message, "message", d))
                    session.async_on_turn_end(std::move(*m), [](error_code, runtime::compaction_outcome) {});
            }
            co_return reply(req, http::status::created, json::object{{"id", id}});
        }
        if (action == "compact" && post)
        {
            std::optional<std::string> instructions;
            if (const auto* i = body.if_contains("instructions"); i && i->is_string())
                instructions = std::string(i->get_string());
            auto [ec, outcome] = co_await session.async_compact(std::move(instructions), asio::as_tuple(asio::use_awaitable));
            if (ec || !outcome.compacted)
                co_return reply(req, status_for(ec), error_body(ec ? ec.message() : "not_compacted", outcome.message));
            const auto& r = *outcome.result;
            co_return reply(req, http::status::ok,
                            json::object{{"entryId", outcome.entry_id},
                                         {"firstKeptEntryId", r.first_kept_entry_id},
                                         {"tokensBefore", r.tokens_before},
                                         {"tokensAfter", r.tokens_after},
                                         {"summary", r.summary}});
        }
        if (action == "context" && req.method() == http::verb::get)
        {
            const auto snap = session.current();
            json::array msgs;
            for (std::size_t i = 0; i < snap->messages.size(); ++i)
            {
                const auto& m = snap->messages[i];
                msgs.push_back(json::object{{"role", compaction::to_string(m.msg->role)},
                                            {"entryId", m.entry_id},
                                            {"tokens", compaction::estimate_tokens(*m.msg)}});
            }
            co_return reply(req, http::status::ok,
                            json::object{{"leafId", snap->leaf_id ? json::value(*snap->leaf_id) : json::value(nullptr)},
                                         {"estimatedTokens", snap->context_tokens()},
                                         {"messages", std::move(msgs)}});
        }
        co_return reply(req, http::status::method_not_allowed, error_body("method_not_allowed", "no such action for this method"));
    }

    // Streams a session's events until the client goes away or the server stops.
    static asio::awaitable<void> stream_events(std::shared_ptr<impl> self, beast::tcp_stream& stream,
                                               const http::request<http::string_body>& req, std::shared_ptr<session_slot> slot)
    {
        auto channel = std::make_shared<event_channel>(self->ioc.get_executor(), 256);
        {
            std::lock_guard lock(slot->mu);
            slot->subscribers.push_back(channel);
        }
        http::response<http::empty_body> res{http::status::ok, req.version()};
        res.set(http::field::content_type, "text/event-stream");
        res.set(http::field::cache_control, "no-cache");
        res.chunked(true);
        http::response_serializer<http::empty_body> sr{res};
        auto [hec, hn] = co_await http::async_write_header(stream, sr, asio::as_tuple(asio::use_awaitable));
        if (hec)
            co_return;
        const std::string hello = ": subscribed\n\n";
        auto [wec, wn] = co_await asio::async_write(stream, http::make_chunk(asio::buffer(hello)), asio::as_tuple(asio::use_awaitable));
        while (!wec && !self->stopped)
        {
            auto [rec, frame] = co_await channel->async_receive(asio::as_tuple(asio::use_awaitable));
            if (rec)
                break;
            auto [cec, cn] = co_await asio::async_write(stream, http::make_chunk(asio::buffer(frame)), asio::as_tuple(asio::use_awaitable));
            if (cec)
                break;
        }
    }

    static asio::awaitable<void> serve(std::shared_ptr<impl> self, tcp::socket sock)
    {
        beast::tcp_stream stream(std::move(sock));
        beast::flat_buffer buffer;
        for (;;)
        {
            http::request_parser<http::string_body> parser;
            parser.body_limit(16 * 1024 * 1024);
            auto [ec, n] = co_await http::async_read(stream, buffer, parser, asio::as_tuple(asio::use_awaitable));
            if (ec)
                co_return;
            auto req = parser.release();
            const std::string target(req.target());
            if (req.method() == http::verb::get && target.size() > 7 && target.ends_with("/events"))
            {
                const auto id = target.substr(13, target.size() - 13 - 7);  // /v1/sessions/{id}/events
                compaction::diagnostics diag;
                auto slot = target.rfind("/v1/sessions/", 0) == 0 && valid_id(id) ? self->find(id, diag)
                                                                                  : compaction::result<std::shared_ptr<session_slot>>(make_error_code(runtime::errc::not_found));
                if (!slot)
                {
                    auto res = reply(req, status_for(slot.error()), error_body(slot.error().message(), "no such session"));
                    co_await http::async_write(stream, res, asio::as_tuple(asio::use_awaitable));
                    continue;
                }
                co_await stream_events(self, stream, req, *slot);
                co_return;
            }
            auto res = co_await self->route(self, req);
            auto [wec, wn] = co_await http::async_write(stream, res, asio::as_tuple(asio::use_awaitable));
            if (wec || !res.keep_alive())
                co_return;
        }
    }
};

agent_server::agent_server(asio::io_context& ioc, server_options opts) : impl_(std::make_shared<impl>(ioc, std::move(opts))) {}

agent_server::~agent_server()
{
    stop();
}

std::uint16_t agent_server::start()
{
    std::filesystem::create_directories(impl_->opts.data_dir);
    const tcp::endpoint ep(asio::ip::make_address(impl_->opts.address), impl_->opts.port);
    impl_->acceptor.open(ep.protocol());
    impl_->acceptor.set_option(asio::socket_base::reuse_address(true));
    impl_->acceptor.bind(ep);
    impl_->acceptor.listen();
    asio::co_spawn(impl_->ioc, impl_->accept_loop(), asio::detached);
    return impl_->acceptor.local_endpoint().port();
}

void agent_server::stop()
{
    if (impl_->stopped)
        return;
    impl_->stopped = true;
    error_code ignore;
    impl_->acceptor.close(ignore);
    std::lock_guard lock(impl_->mu);
    for (auto& [id, slot] : impl_->sessions)
    {
        slot->session->close();
        std::lock_guard sl(slot->mu);
        for (auto& w : slot->subscribers)
            if (auto ch = w.lock())
                ch->close();
    }
}

}  // namespace agentctx::server
