// Server-sent events: fan-out to a session's subscribers, and the stream of one subscriber.
#include "event_stream.hpp"

#include "error_status.hpp"
#include "event_json.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>

namespace agentctx::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using boost::system::error_code;

std::shared_ptr<event_channel> event_subscribers::subscribe(asio::any_io_executor ex)
{
    auto channel = std::make_shared<event_channel>(std::move(ex), 256);
    std::lock_guard lock(mu_);
    std::erase_if(channels_, [](const auto& w) { return w.expired(); });
    channels_.push_back(channel);
    return channel;
}

void event_subscribers::publish(const std::string& frame)
{
    std::lock_guard lock(mu_);
    for (auto& w : channels_)
        if (auto ch = w.lock())
            ch->try_send(error_code{}, frame);  // a slow subscriber misses events, never blocks the session
}

void event_subscribers::close_all()
{
    std::lock_guard lock(mu_);
    for (auto& w : channels_)
        if (auto ch = w.lock())
            ch->close();
}

std::string sse_frame(const runtime::session_event& e, const std::string& data_dir)
{
    const auto text = event_json(e);
    return "event: " + text.name + "\ndata: " + without_data_dir(text.data, data_dir) + "\n\n";
}

namespace {

// Writes events to the stream until the channel closes or a write fails.
asio::awaitable<void> pump_events(
    beast::tcp_stream& stream,
    std::shared_ptr<event_channel> channel,
    std::chrono::milliseconds write_timeout,
    const std::atomic<bool>& stopped
)
{
    const std::string hello = ": subscribed\n\n";
    stream.expires_after(write_timeout);
    auto [wec, wn] = co_await asio::async_write(
        stream, http::make_chunk(asio::buffer(hello)), asio::as_tuple(asio::use_awaitable)
    );
    stream.expires_never();
    while (!wec && !stopped)
    {
        auto [rec, frame] = co_await channel->async_receive(asio::as_tuple(asio::use_awaitable));
        if (rec)
            break;
        stream.expires_after(write_timeout);  // a subscriber that stops reading is closed
        auto [cec, cn] = co_await asio::async_write(
            stream, http::make_chunk(asio::buffer(frame)), asio::as_tuple(asio::use_awaitable)
        );
        stream.expires_never();
        if (cec)
            break;
    }
}

// Completes when the peer closes its side (or the socket fails): a subscriber never sends,
// so a pending read is how a disconnect is seen without waiting for the next event.
asio::awaitable<void> watch_peer(beast::tcp_stream& stream)
{
    char scratch[512];
    for (;;)
    {
        auto [ec, n] = co_await stream.socket().async_read_some(
            asio::buffer(scratch), asio::as_tuple(asio::use_awaitable)
        );
        if (ec)
            co_return;
    }
}

}  // namespace

asio::awaitable<void> stream_events(
    beast::tcp_stream& stream,
    unsigned http_version,
    std::shared_ptr<event_channel> channel,
    std::chrono::milliseconds write_timeout,
    const std::atomic<bool>& stopped
)
{
    http::response<http::empty_body> res{http::status::ok, http_version};
    res.set(http::field::content_type, "text/event-stream");
    res.set(http::field::cache_control, "no-cache");
    res.chunked(true);
    http::response_serializer<http::empty_body> sr{res};
    stream.expires_after(write_timeout);
    auto [hec, hn] = co_await http::async_write_header(stream, sr, asio::as_tuple(asio::use_awaitable));
    stream.expires_never();
    if (hec)
        co_return;
    using namespace asio::experimental::awaitable_operators;
    co_await (
        pump_events(stream, channel, write_timeout, stopped) || watch_peer(stream)
    );  // the first to end cancels the other
}

}  // namespace agentctx::server
