// The registry of idle connections, and closing one of them from outside its strand.
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

}  // namespace agentctx::server
