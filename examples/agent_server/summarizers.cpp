// shared_http_summarizers: per-session summarizers over a pool of shared HTTP clients.
#include "summarizers.hpp"

#include <agentctx/providers/http_client_pool.hpp>

namespace agentctx::server {

summarizer_factory shared_http_summarizers(
    boost::asio::any_io_executor ex, providers::provider_config cfg, std::size_t io_threads
)
{
    auto pool = std::make_shared<providers::http_client_pool>(ex, io_threads);
    return [pool, cfg = std::move(cfg)](boost::asio::any_io_executor session_ex) {
        return std::make_shared<providers::http_summarizer>(session_ex, cfg, nullptr, pool->next());
    };
}

}  // namespace agentctx::server
