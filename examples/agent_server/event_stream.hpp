// The event stream (server-sent events): a session's subscribers, and one subscriber's stream.
#pragma once

#include <agentctx/runtime/session.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace agentctx::server {

using event_channel =
    boost::asio::experimental::concurrent_channel<void(boost::system::error_code, std::string)>;

/// A session's subscribers; thread-safe. A slow subscriber misses events, it never blocks the
/// session (each has a bounded channel).
class event_subscribers
{
public:
    /// A new subscriber's channel (it unsubscribes by dropping it).
    std::shared_ptr<event_channel> subscribe(boost::asio::any_io_executor ex);
    /// Sends one SSE frame to every subscriber that has room for it.
    void publish(const std::string& frame);
    /// Ends every subscriber's stream (the server stops).
    void close_all();

private:
    std::mutex mu_;
    std::vector<std::weak_ptr<event_channel>> channels_;
};

/// The SSE frame of an event (`event: NAME\ndata: JSON\n\n`), with `data_dir` removed from it.
std::string sse_frame(const runtime::session_event& e, const std::string& data_dir);

/// Answers an event stream request on `stream` and sends `channel`'s frames until the channel
/// closes, the peer goes away, a write takes longer than `write_timeout`, or `stopped` is set.
boost::asio::awaitable<void> stream_events(
    boost::beast::tcp_stream& stream,
    unsigned http_version,
    std::shared_ptr<event_channel> channel,
    std::chrono::milliseconds write_timeout,
    const std::atomic<bool>& stopped
);

}  // namespace agentctx::server
