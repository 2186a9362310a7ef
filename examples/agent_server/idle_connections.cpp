// The registry of idle and unauthenticated connections, and closing one of them from outside its strand.
#include "idle_connections.hpp"

#include <boost/asio/post.hpp>

namespace agentctx::server {

void idle_connections::enter(const std::shared_ptr<connection_state>& c)
{
    std::lock_guard lock(mu_);
    c->idle_key = ++sequence_;
    idle_.emplace(c->idle_key, c);
}

bool idle_connections::leave(const std::shared_ptr<connection_state>& c)
{
    std::lock_guard lock(mu_);
    return idle_.erase(c->idle_key) == 1;
}

bool idle_connections::close_longest()
{
    std::shared_ptr<connection_state> victim;
    {
        std::lock_guard lock(mu_);
        if (idle_.empty())
            return false;
        victim = std::move(idle_.begin()->second);
        idle_.erase(idle_.begin());
    }
    boost::asio::post(victim->strand, [victim] {
        if (victim->stream)
            victim->stream->cancel();
    });
    return true;
}

std::size_t idle_connections::count()
{
    std::lock_guard lock(mu_);
    return idle_.size();
}

void idle_connections::admitted(const std::shared_ptr<connection_state>& c)
{
    std::lock_guard lock(mu_);
    c->pending_key = ++sequence_;
    pending_.emplace(c->pending_key, c);
}

bool idle_connections::authenticated(const std::shared_ptr<connection_state>& c)
{
    std::lock_guard lock(mu_);
    if (c->pending_key == 0)
        return true;  // authenticated before
    const bool kept = pending_.erase(c->pending_key) == 1;
    c->pending_key = 0;
    return kept;
}

void idle_connections::ended(const std::shared_ptr<connection_state>& c)
{
    std::lock_guard lock(mu_);
    if (c->pending_key)
        pending_.erase(c->pending_key);
    idle_.erase(c->idle_key);
}

bool idle_connections::close_unauthenticated()
{
    std::shared_ptr<connection_state> victim;
    {
        std::lock_guard lock(mu_);
        if (pending_.empty())
            return false;
        victim = std::move(pending_.begin()->second);
        pending_.erase(pending_.begin());
        idle_.erase(victim->idle_key);  // it may be waiting for its first byte too
    }
    boost::asio::post(victim->strand, [victim] {
        if (!victim->stream)
            return;
        boost::system::error_code ignore;
        victim->stream->socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignore);
        victim->stream->cancel();
    });
    return true;
}

std::size_t idle_connections::unauthenticated()
{
    std::lock_guard lock(mu_);
    return pending_.size();
}

}  // namespace agentctx::server
