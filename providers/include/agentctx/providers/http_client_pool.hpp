// A fixed set of HTTP clients (one curl multi handle each) shared by every caller of a server.
#pragma once

#include <agentctx/providers/http_client.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

namespace agentctx::providers {

/**
 * @brief `n` http_clients on their own strands of one executor, handed out round-robin.
 *
 * A server with `n` io threads makes one pool of `n`: every session's summarizer sends through
 * one of them, so the process holds `n` curl multi handles (and their connection caches, kept
 * warm across sessions) however many sessions are open, and each client's work runs on one
 * strand at a time, so requests spread over the io threads.
 *
 * @par Thread safety
 * next() may be called from any thread. Destroy the pool (and drop every client it handed out)
 * once nothing runs on the executor.
 */
class http_client_pool
{
public:
    http_client_pool(boost::asio::any_io_executor ex, std::size_t n);

    /// The next client, round-robin.
    std::shared_ptr<http_client> next();
    std::size_t size() const noexcept { return clients_.size(); }

private:
    std::vector<std::shared_ptr<http_client>> clients_;
    std::atomic<std::size_t> next_{0};
};

}  // namespace agentctx::providers
