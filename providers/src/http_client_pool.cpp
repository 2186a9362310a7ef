// http_client_pool: n shared clients, each on its own strand, handed out round-robin.
#include <agentctx/providers/http_client_pool.hpp>

#include <boost/asio/strand.hpp>

#include <algorithm>

namespace agentctx::providers {

http_client_pool::http_client_pool(boost::asio::any_io_executor ex, std::size_t n)
{
    for (std::size_t i = 0; i < std::max<std::size_t>(n, 1); ++i)
        clients_.push_back(std::make_shared<http_client>(boost::asio::make_strand(ex)));
}

std::shared_ptr<http_client> http_client_pool::next()
{
    return clients_[next_.fetch_add(1, std::memory_order_relaxed) % clients_.size()];
}

}  // namespace agentctx::providers
