// The connection loop: the idle wait, header, token, body, the answer; refusals that close gracefully.
#include "http_connection.hpp"

#include "error_status.hpp"
#include "event_stream.hpp"
#include "routes.hpp"
#include "server_error.hpp"

#include <agentctx/compaction/json_text.hpp>
#include <agentctx/runtime/error.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <cerrno>
#include <stdexcept>

#include <sys/socket.h>

namespace agentctx::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;
using boost::system::error_code;
using request_parser = http::request_parser<http::string_body>;
using clock_type = std::chrono::steady_clock;

namespace {

// Answers a request that is not read further (too large, unauthenticated) and closes the
// connection gracefully: shut down sending, then drain (and discard) what the peer is still
// sending so the close is not a reset that could destroy the answer in flight.
asio::awaitable<void> answer_and_close(server_state& s, beast::tcp_stream& stream, http_response res)
{
    res.keep_alive(false);
    res.prepare_payload();
    stream.expires_after(s.opts.idle_timeout);
    auto [wec, wn] = co_await http::async_write(stream, res, asio::as_tuple(asio::use_awaitable));
    if (wec)
        co_return;
    error_code ignore;
    stream.socket().shutdown(tcp::socket::shutdown_send, ignore);
    stream.expires_after(std::min<std::chrono::milliseconds>(s.opts.idle_timeout, std::chrono::seconds(5)));
    char scratch[16384];
    for (std::size_t drained = 0; drained < 4 * s.opts.body_limit;)
    {
        auto [rec, n] =
            co_await stream.async_read_some(asio::buffer(scratch), asio::as_tuple(asio::use_awaitable));
        if (rec)
            break;
        drained += n;
    }
}

asio::awaitable<void> refuse_and_close(
    server_state& s,
    beast::tcp_stream& stream,
    http::status st,
    std::string_view code,
    std::string_view message
)
{
    http_response res{st, 11};
    res.set(http::field::content_type, "application/json");
    res.body() = compaction::stringify(error_body(code, message));
    co_await answer_and_close(s, stream, std::move(res));
}

// Answers a read that failed on the request itself (413, 431, 400); the others (a timeout, the
// peer gone) are closed without an answer.
asio::awaitable<void> refuse_unreadable(server_state& s, beast::tcp_stream& stream, error_code ec)
{
    const auto& o = s.opts;
    if (ec == http::error::body_limit)
        co_await refuse_and_close(
            s,
            stream,
            http::status::payload_too_large,
            "body_too_large",
            "the request body is over " + std::to_string(o.body_limit) + " bytes"
        );
    else if (ec == http::error::header_limit)
        co_await refuse_and_close(
            s,
            stream,
            http::status::request_header_fields_too_large,
            "header_too_large",
            "the request header is over " + std::to_string(o.header_limit) + " bytes"
        );
    else if (ec.category() == http::make_error_code(http::error::bad_target).category() && ec != http::error::end_of_stream && ec != http::error::partial_message)
        co_await refuse_and_close(
            s, stream, http::status::bad_request, "bad_request", "the request is not valid HTTP/1.1"
        );
}

// Waits (up to the idle timeout) for the first byte of the next request. Meanwhile the
// connection is idle: the accept loop may close it to make room for a new one.
asio::awaitable<bool> await_request(
    server_state& s,
    beast::tcp_stream& stream,
    beast::flat_buffer& buffer,
    const std::shared_ptr<connection_state>& state
)
{
    if (buffer.size() != 0)
        co_return true;  // a pipelined request is here already
    s.idle.enter(state);
    stream.expires_after(s.opts.idle_timeout);
    auto [ec, n] = co_await stream.async_read_some(buffer.prepare(4096), asio::as_tuple(asio::use_awaitable));
    const bool evicted = !s.idle.leave(state);
    if (ec || evicted)
        co_return false;  // idle timeout, the peer went away, or closed to make room
    buffer.commit(n);
    co_return true;
}

// Reads one request's header (bounded by the header timeout); nothing of the body.
asio::awaitable<bool> read_header(
    server_state& s, beast::tcp_stream& stream, beast::flat_buffer& buffer, request_parser& parser
)
{
    parser.header_limit(static_cast<std::uint32_t>(s.opts.header_limit));
    parser.body_limit(s.opts.body_limit);
    stream.expires_after(s.opts.header_timeout);
    auto [ec, n] =
        co_await http::async_read_header(stream, buffer, parser, asio::as_tuple(asio::use_awaitable));
    stream.expires_never();
    if (ec)
        co_await refuse_unreadable(s, stream, ec);
    co_return !ec;
}

// Reads the body of a request whose header was read and accepted (bounded by the idle timeout).
asio::awaitable<bool> read_body(
    server_state& s, beast::tcp_stream& stream, beast::flat_buffer& buffer, request_parser& parser
)
{
    if (parser.is_done())
        co_return true;
    stream.expires_after(s.opts.idle_timeout);
    auto [ec, n] = co_await http::async_read(stream, buffer, parser, asio::as_tuple(asio::use_awaitable));
    stream.expires_never();
    if (ec)
        co_await refuse_unreadable(s, stream, ec);
    co_return !ec;
}

// The 401 of a request without the bearer token, answered from its header alone: its body is
// never read into memory, and the connection is closed.
asio::awaitable<void> refuse_unauthorized(
    server_state& s, beast::tcp_stream& stream, const http_request& req, clock_type::time_point started
)
{
    auto res = reply(
        req,
        http::status::unauthorized,
        error_body("unauthorized", "a valid bearer token is required (Authorization: Bearer ...)")
    );
    res.set(http::field::www_authenticate, "Bearer");
    s.record(req, res.result_int(), started);
    co_await answer_and_close(s, stream, std::move(res));
}

// Writes an answer (a peer that does not read it is closed). Returns false to close.
asio::awaitable<bool> send(
    server_state& s,
    beast::tcp_stream& stream,
    const http_request& req,
    http_response res,
    clock_type::time_point started
)
{
    s.record(req, res.result_int(), started);
    stream.expires_after(s.opts.idle_timeout);
    auto [wec, wn] = co_await http::async_write(stream, res, asio::as_tuple(asio::use_awaitable));
    co_return !wec && res.keep_alive();
}

// Completes when the peer has closed its side of the connection while a request runs; with
// a pipelined request pending (or a socket error) it waits until it is cancelled instead.
asio::awaitable<void> until_disconnected(beast::tcp_stream& stream)
{
    auto& sock = stream.socket();
    auto [ec] = co_await sock.async_wait(tcp::socket::wait_read, asio::as_tuple(asio::use_awaitable));
    if (!ec)
    {
        char c;
        const auto n = ::recv(sock.native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno == ECONNRESET))
            co_return;  // gone
    }
    asio::steady_timer forever(co_await asio::this_coro::executor, clock_type::time_point::max());
    co_await forever.async_wait(asio::use_awaitable);  // throws when cancelled: the route won
    throw std::runtime_error("unreachable");
}

// A session's event stream: the lease keeps the session open while it runs. Returns false
// (the connection closes after a stream); true after an error answer.
asio::awaitable<bool> serve_events(
    std::shared_ptr<server_state> s,
    beast::tcp_stream& stream,
    const http_request& req,
    clock_type::time_point started
)
{
    const auto id = split_target(req.target())[2];
    compaction::diagnostics diag;
    compaction::result<lease> held = make_error_code(runtime::errc::not_found);
    if (valid_id(id))
        held = co_await s->sessions->find(id, diag);
    if (!held)
    {
        auto res = held.error() == errc::too_many_open_sessions
                       ? busy_reply(req, s->sessions->max_open_sessions())
                       : reply(
                             req,
                             status_for(held.error()),
                             error_body(held.error().message(), public_message(held.error(), diag))
                         );
        co_return co_await send(*s, stream, req, std::move(res), started);
    }
    s->record(req, 200, started);
    s->metrics.stream_opened();
    auto channel = (*held)->slot().subscribers.subscribe(s->ioc.get_executor());
    co_await stream_events(stream, req.version(), std::move(channel), s->opts.idle_timeout, s->stopped);
    s->metrics.stream_closed();
    co_return false;
}

// Answers one read request. Returns false when the connection is to be closed.
asio::awaitable<bool> answer(
    std::shared_ptr<server_state> s,
    beast::tcp_stream& stream,
    const http_request& req,
    clock_type::time_point started
)
{
    if (is_event_stream(req))
        co_return co_await serve_events(s, stream, req, started);
    http_response res;
    const auto parts = split_target(req.target());
    if (req.method() == http::verb::post && parts.size() == 4 && parts[3] == "compact")
    {
        // A client that leaves stops its compaction: the route is cancelled (nothing is
        // written after a cancellation) and the connection closed.
        using namespace asio::experimental::awaitable_operators;
        auto done = co_await (route(s, req) || until_disconnected(stream));
        if (done.index() == 1)
            co_return false;
        res = std::move(std::get<0>(done));
    }
    else
        res = co_await route(s, req);
    co_return co_await send(*s, stream, req, std::move(res), started);
}

}  // namespace

asio::awaitable<void> serve_connection(std::shared_ptr<server_state> s, tcp::socket sock)
{
    beast::tcp_stream stream(std::move(sock));
    auto state = std::make_shared<connection_state>();
    state->strand = stream.get_executor();
    state->stream = &stream;
    struct leave
    {
        server_state& s;
        std::shared_ptr<connection_state> held;
        ~leave()
        {
            s.idle.ended(held);
            held->stream = nullptr;  // on the connection's strand, like every use of it
            --s.connections;
        }
    } guard{*s, state};
    s->idle.admitted(state);
    beast::flat_buffer buffer;
    for (;;)
    {
        if (!co_await await_request(*s, stream, buffer, state))
            co_return;
        request_parser parser;
        if (!co_await read_header(*s, stream, buffer, parser))
            co_return;
        const auto started = clock_type::now();
        if (!s->authorized(parser.get()))
            co_return co_await refuse_unauthorized(*s, stream, parser.get(), started);
        if (!s->idle.authenticated(state))
            co_return;  // closed to make room before its header was complete
        if (!co_await read_body(*s, stream, buffer, parser))
            co_return;
        const auto req = parser.release();
        if (!co_await answer(s, stream, req, started))
            co_return;
    }
}

}  // namespace agentctx::server
