// The accept loop and the admission of each connection.
#include "listener.hpp"

#include "accept_policy.hpp"
#include "error_status.hpp"
#include "http_connection.hpp"

#include <agentctx/compaction/json_text.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include <spdlog/spdlog.h>

namespace agentctx::server {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

namespace {

// A connection over the cap: one fixed 503 (within a second) and the close; nothing is read.
asio::awaitable<void> refuse_connection(tcp::socket sock, std::size_t limit)
{
    const std::string body = compaction::stringify(error_body(
        "too_many_connections", "all " + std::to_string(limit) + " connections are in use; retry later"
    ));
    const std::string text =
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
        "Connection: close\r\nContent-Length: " +
        std::to_string(body.size()) + "\r\n\r\n" + body;
    boost::beast::tcp_stream stream(std::move(sock));
    stream.expires_after(std::chrono::seconds(1));
    co_await asio::async_write(stream, asio::buffer(text), asio::as_tuple(asio::use_awaitable));
    error_code ignore;
    stream.socket().shutdown(tcp::socket::shutdown_send, ignore);
}

// Serves an accepted connection, or refuses it when the cap is reached and none is idle.
void admit(const std::shared_ptr<server_state>& s, tcp::socket sock)
{
    auto ex = sock.get_executor();
    // Connections not authenticated yet go first (oldest first): a client without the token
    // cannot hold the slots an authenticated one needs. Then the longest idle.
    const std::size_t closable = s->idle.unauthenticated() + s->idle.count();
    switch (admit_connection(s->connections.load(), s->opts.max_connections, closable))
    {
    case admission::refuse:
        asio::co_spawn(ex, refuse_connection(std::move(sock), s->opts.max_connections), asio::detached);
        return;
    case admission::accept_after_idle:
        if (!s->idle.close_unauthenticated())
            s->idle.close_longest();
        break;
    case admission::accept:
        break;
    }
    ++s->connections;
    asio::co_spawn(ex, serve_connection(s, std::move(sock)), asio::detached);
}

}  // namespace

asio::awaitable<void> accept_loop(std::shared_ptr<server_state> s)
{
    asio::steady_timer pause(s->ioc);
    std::uint64_t streak = 0;
    for (;;)
    {
        auto [ec, sock] =
            co_await s->acceptor.async_accept(asio::make_strand(s->ioc), asio::as_tuple(asio::use_awaitable));
        if (!ec)
        {
            if (streak)
                spdlog::info("accepting again after {} failed accepts", streak);
            streak = 0;
            admit(s, std::move(sock));
            continue;
        }
        const auto action = classify_accept_error(ec, !s->stopped && s->acceptor.is_open());
        if (action == accept_action::stop)
            co_return;
        ++s->accept_failures;
        if (streak++ == 0)
            spdlog::warn("accept failed: {}; retrying", ec.message());
        if (action == accept_action::back_off)
            s->free_descriptors();
        if (action == accept_action::back_off || streak % 64 == 0)  // a persistent error must not spin
        {
            pause.expires_after(accept_back_off);
            co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
        }
    }
}

}  // namespace agentctx::server
