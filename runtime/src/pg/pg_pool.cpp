// The PostgreSQL connection pool and the LISTEN loop that turns NOTIFY into per-session callbacks.
#include "pg_pool.hpp"

#include <agentctx/runtime/error.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <chrono>

namespace agentctx::runtime::pg {

namespace asio = boost::asio;
using boost::system::error_code;
using namespace std::chrono_literals;

pool::pool(asio::any_io_executor ex, std::string conninfo, std::size_t max_connections)
    : ex_(std::move(ex)), conninfo_(std::move(conninfo)), max_(std::max<std::size_t>(1, max_connections)),
      listen_strand_(asio::make_strand(ex_))
{
}

asio::awaitable<result<std::unique_ptr<connection>>> pool::dedicated(diagnostics& diag)
{
    co_return co_await connection::connect(ex_, conninfo_, diag);
}

asio::awaitable<result<std::unique_ptr<connection>>> pool::acquire(diagnostics& diag)
{
    const auto my_executor = co_await asio::this_coro::executor;
    for (;;)
    {
        std::shared_ptr<waiter> w;
        {
            std::lock_guard lock(mutex_);
            if (closed_)
            {
                diag.message = "the connection pool is closed";
                co_return errc::session_closed;
            }
            if (!idle_.empty())
            {
                auto c = std::move(idle_.back());
                idle_.pop_back();
                co_return std::move(c);
            }
            if (open_ < max_)
                ++open_;
            else
            {
                w = std::make_shared<waiter>();
                w->timer = std::make_shared<asio::steady_timer>(my_executor);
                waiters_.push_back(w);
            }
        }
        if (!w)
        {
            auto c = co_await connection::connect(ex_, conninfo_, diag);
            if (!c)
            {
                std::lock_guard lock(mutex_);
                --open_;
                wake_one_locked();
            }
            co_return c;
        }
        // A release wakes us by cancelling the timer; the bounded wait covers a wake that lands
        // before the wait starts (timers are not safe to cancel across threads before waiting).
        error_code ec;
        w->timer->expires_after(20ms);
        co_await w->timer->async_wait(asio::redirect_error(asio::use_awaitable, ec));
        const auto cancelled = (co_await asio::this_coro::cancellation_state).cancelled();
        std::lock_guard lock(mutex_);
        std::erase(waiters_, w);
        if (cancelled != asio::cancellation_type::none)
        {
            if (w->woken)
                wake_one_locked();  // pass the wake on
            diag.message = "cancelled while waiting for a database connection";
            co_return make_error_code(asio::error::operation_aborted);
        }
    }
}

void pool::wake_one_locked()
{
    if (waiters_.empty())
        return;
    auto w = waiters_.front();
    waiters_.pop_front();
    w->woken = true;
    asio::post(w->timer->get_executor(), [w] { w->timer->cancel(); });
}

void pool::release(std::unique_ptr<connection> c)
{
    std::lock_guard lock(mutex_);
    if (!c || c->broken() || closed_)
        --open_;
    else
        idle_.push_back(std::move(c));
    wake_one_locked();
}

std::uint64_t pool::subscribe(const std::string& session_id, subscriber s)
{
    std::lock_guard lock(mutex_);
    const auto token = next_token_++;
    subscribers_[session_id].emplace(token, std::move(s));
    return token;
}

void pool::unsubscribe(const std::string& session_id, std::uint64_t token)
{
    std::lock_guard lock(mutex_);
    auto it = subscribers_.find(session_id);
    if (it == subscribers_.end())
        return;
    it->second.erase(token);
    if (it->second.empty())
        subscribers_.erase(it);
}

void pool::dispatch(const std::string& payload)
{
    const auto space = payload.find(' ');
    if (space == std::string::npos)
        return;
    std::size_t count = 0;
    if (std::from_chars(payload.data(), payload.data() + space, count).ec != std::errc{})
        return;
    std::vector<subscriber> targets;
    {
        std::lock_guard lock(mutex_);
        if (auto it = subscribers_.find(payload.substr(space + 1)); it != subscribers_.end())
            for (const auto& [token, s] : it->second)
                targets.push_back(s);
    }
    for (const auto& s : targets)
        s(count);
}

void pool::notify_all_subscribers()
{
    std::vector<subscriber> targets;
    {
        std::lock_guard lock(mutex_);
        for (const auto& [id, subs] : subscribers_)
            for (const auto& [token, s] : subs)
                targets.push_back(s);
    }
    for (const auto& s : targets)
        s(std::string::npos);
}

void pool::start_listening()
{
    {
        std::lock_guard lock(mutex_);
        if (listening_ || closed_)
            return;
        listening_ = true;
    }
    asio::co_spawn(listen_strand_, listen_loop(), asio::bind_cancellation_slot(stop_listening_.slot(), asio::detached));
}

asio::awaitable<void> pool::listen_loop()
{
    // The loop holds the pool alive until close() stops it.
    auto self = shared_from_this();
    bool reconnected = false;
    for (;;)
    {
        diagnostics diag;
        auto c = co_await connection::connect(ex_, conninfo_, diag);
        if (c)
        {
            const std::string listen = std::string("LISTEN ") + notify_channel;
            const params none;
            auto l = co_await (*c)->exec(listen, none, diag);
            if (l && reconnected)
                notify_all_subscribers();
            while (l)
            {
                auto got = co_await (*c)->wait_notifications(diag);
                if (!got)
                    break;
                for (const auto& n : *got)
                    dispatch(n.payload);
            }
        }
        if ((co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none)
            co_return;
        spdlog::warn("pg_store: the LISTEN connection failed ({}); reconnecting in 1 s", diag.message);
        reconnected = true;
        asio::steady_timer t(listen_strand_, 1s);
        error_code ec;
        co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        if (ec)
            co_return;
    }
}

void pool::close()
{
    {
        std::lock_guard lock(mutex_);
        closed_ = true;
        open_ -= idle_.size();
        idle_.clear();
    }
    asio::post(listen_strand_, [self = shared_from_this()] { self->stop_listening_.emit(asio::cancellation_type::terminal); });
}

}  // namespace agentctx::runtime::pg
