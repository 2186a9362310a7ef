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

#include <unistd.h>

namespace agentctx::runtime::pg {

namespace asio = boost::asio;
using boost::system::error_code;
using namespace std::chrono_literals;

pool::pool(asio::any_io_executor ex, std::string conninfo, const pg_pool_options& opts)
    : ex_(std::move(ex)), conninfo_(std::move(conninfo)),
      max_(std::max<std::size_t>(1, opts.max_connections)), check_interval_(opts.check_interval),
      appends_(
          *this, opts.max_flushers ? opts.max_flushers : std::max<std::size_t>(1, max_ / 2), opts.max_group
      ),
      spill_directory_(spill_directory_for(opts)), listen_strand_(asio::make_strand(ex_))
{}

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
                wake_one_locked(nullptr);
            }
            co_return c;
        }
        auto handed = co_await wait_turn(w, diag);
        if (!handed || *handed)
            co_return std::move(handed);
        // Woken for a free slot (a broken connection was dropped): open a connection.
    }
}

asio::awaitable<result<std::unique_ptr<connection>>> pool::wait_turn(
    std::shared_ptr<waiter> w, diagnostics& diag
)
{
    // Waiters are served in arrival order: a release hands its connection to the first.
    for (;;)
    {
        // A release wakes us by cancelling the timer; the bounded wait covers a wake that lands
        // before the wait starts (timers are not safe to cancel across threads before waiting).
        error_code ec;
        w->timer->expires_after(20ms);
        co_await w->timer->async_wait(asio::redirect_error(asio::use_awaitable, ec));
        const auto cancelled =
            (co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none;
        std::lock_guard lock(mutex_);
        if (!w->woken && !cancelled)
            continue;
        std::erase(waiters_, w);
        if (!cancelled)
            co_return std::move(w->handed);  // null: a free slot
        if (w->woken)
            wake_one_locked(std::move(w->handed));  // pass the connection (or the free slot) on
        diag.message = "cancelled while waiting for a database connection";
        co_return make_error_code(asio::error::operation_aborted);
    }
}

void pool::wake_one_locked(std::unique_ptr<connection> c)
{
    if (waiters_.empty())
    {
        if (c)
            idle_.push_back(std::move(c));
        return;
    }
    auto w = waiters_.front();
    waiters_.pop_front();
    w->woken = true;
    w->handed = std::move(c);
    asio::post(w->timer->get_executor(), [w] { w->timer->cancel(); });
}

void pool::release(std::unique_ptr<connection> c)
{
    std::lock_guard lock(mutex_);
    if (!c || c->broken() || closed_)
    {
        --open_;
        wake_one_locked(nullptr);
    }
    else
        wake_one_locked(std::move(c));
}

std::uint64_t pool::subscribe(const std::string& session_id, subscriber s, std::size_t known)
{
    std::lock_guard lock(mutex_);
    const auto token = next_token_++;
    subscribers_[session_id].emplace(token, std::move(s));
    auto& seen = seen_[session_id];
    seen = std::max(seen, known);
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
    {
        subscribers_.erase(it);
        seen_.erase(session_id);
    }
}

void pool::note_count(const std::string& session_id, std::size_t count)
{
    std::lock_guard lock(mutex_);
    if (auto it = seen_.find(session_id); it != seen_.end())
        it->second = std::max(it->second, count);
}

pg_pool_stats pool::stats() const
{
    const auto q = appends_.stats();
    std::lock_guard lock(mutex_);
    auto out = stats_;
    out.append_groups = q.groups;
    out.appends = q.appends;
    out.group_fallbacks = q.fallbacks;
    out.spill_fallbacks = spill_fallbacks_.load(std::memory_order_relaxed);
    if (spill_)
    {
        const auto s = spill_->stats();
        out.spilled_bytes = s.live_bytes;
        out.spilled_logs = s.live_extents;
    }
    return out;
}

void pool::dispatch(const std::string& payload)
{
    // One `<count> <session id>` per line (a group's commit notifies its sessions together).
    for (std::size_t at = 0; at < payload.size();)
    {
        auto end = payload.find('\n', at);
        if (end == std::string::npos)
            end = payload.size();
        const std::string_view line(payload.data() + at, end - at);
        at = end + 1;
        const auto space = line.find(' ');
        std::size_t count = 0;
        if (space == std::string_view::npos ||
            std::from_chars(line.data(), line.data() + space, count).ec != std::errc{})
            continue;
        dispatch_one(std::string(line.substr(space + 1)), count, false);
    }
}

void pool::dispatch_one(const std::string& session_id, std::size_t count, bool from_check)
{
    std::vector<subscriber> targets;
    {
        std::lock_guard lock(mutex_);
        if (auto it = subscribers_.find(session_id); it != subscribers_.end())
            for (const auto& [token, s] : it->second)
                targets.push_back(s);
        if (auto it = seen_.find(session_id); it != seen_.end())
        {
            if (from_check && count > it->second)
                ++stats_.missed_changes;
            it->second = std::max(it->second, count);
        }
    }
    for (const auto& s : targets)
        s(count);
}

void pool::notify_all_subscribers()
{
    std::vector<subscriber> targets;
    {
        std::lock_guard lock(mutex_);
        ++stats_.full_resyncs;
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
    asio::co_spawn(
        listen_strand_, listen_loop(), asio::bind_cancellation_slot(stop_listening_.slot(), asio::detached)
    );
    if (check_interval_.count() > 0)
        asio::co_spawn(
            listen_strand_, check_loop(), asio::bind_cancellation_slot(stop_checking_.slot(), asio::detached)
        );
}

asio::awaitable<bool> pool::listen_once(bool reconnected, diagnostics& diag)
{
    // Named after the process, so an operator (or a test) can find a node's LISTEN connection.
    auto c =
        co_await connection::connect(ex_, conninfo_, diag, "agentctx-listen-" + std::to_string(::getpid()));
    if (!c)
        co_return false;
    const std::string listen = std::string("LISTEN ") + notify_channel;
    if (auto l = co_await (*c)->exec(listen, params{}, diag); !l)
        co_return false;
    listen_pid_ = (*c)->backend_pid();
    if (reconnected)
    {
        {
            std::lock_guard lock(mutex_);
            ++stats_.listen_reconnects;
        }
        // Listening again: whatever was notified meanwhile is missed, so every open session checks.
        notify_all_subscribers();
    }
    for (;;)
    {
        auto got = co_await (*c)->wait_notifications(diag);
        if (!got)
            break;
        for (const auto& n : *got)
            dispatch(n.payload);
    }
    listen_pid_ = 0;
    co_return true;
}

asio::awaitable<void> pool::listen_loop()
{
    // The loop holds the pool alive until close() stops it.
    auto self = shared_from_this();
    bool reconnected = false;
    for (;;)
    {
        diagnostics diag;
        const bool was_listening = co_await listen_once(reconnected, diag);
        if ((co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none)
            co_return;
        // A connection that worked is retried at once (the server ended it); a failing one each second.
        const auto delay = was_listening ? 100ms : 1000ms;
        spdlog::warn(
            "pg_store: the LISTEN connection failed ({}); reconnecting in {} ms", diag.message, delay.count()
        );
        reconnected = true;
        asio::steady_timer t(listen_strand_, delay);
        error_code ec;
        co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        if (ec)
            co_return;
    }
}

asio::awaitable<void> pool::check_counts()
{
    std::vector<std::optional<std::string>> ids;
    {
        std::lock_guard lock(mutex_);
        for (const auto& [id, subs] : subscribers_)
            ids.emplace_back(id);
    }
    if (ids.empty())
        co_return;
    diagnostics diag;
    auto c = co_await acquire(diag);
    if (!c)
        co_return;
    const std::vector<transaction> query{
        {{"agentctx_counts",
          "SELECT id, last_seq FROM agentctx_sessions WHERE id = ANY($1::text[])",
          {text_array(ids)}}}};
    auto r = co_await (*c)->pipeline(query, diag);
    release(std::move(*c));
    if (!r || !r->front().ok())
    {
        spdlog::warn(
            "pg_store: checking the open sessions' stored counts failed: {}",
            r ? r->front().error : diag.message
        );
        co_return;
    }
    {
        std::lock_guard lock(mutex_);
        ++stats_.checks;
    }
    for (const auto& row : r->front().statements.front().values)
    {
        std::size_t count = 0;
        if (row[0] && row[1] &&
            std::from_chars(row[1]->data(), row[1]->data() + row[1]->size(), count).ec == std::errc{})
            dispatch_one(*row[0], count, true);
    }
}

asio::awaitable<void> pool::check_loop()
{
    auto self = shared_from_this();
    for (;;)
    {
        asio::steady_timer t(listen_strand_, check_interval_);
        error_code ec;
        co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        if (ec || (co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none)
            co_return;
        co_await check_counts();
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
    asio::post(listen_strand_, [self = shared_from_this()] {
        self->stop_listening_.emit(asio::cancellation_type::terminal);
        self->stop_checking_.emit(asio::cancellation_type::terminal);
    });
}

}  // namespace agentctx::runtime::pg
