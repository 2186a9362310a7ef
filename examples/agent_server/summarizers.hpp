// The sessions' summarizers for a model provider: one shared HTTP client per io thread.
#pragma once

#include <agentctx/providers/http_summarizer.hpp>
#include <agentctx/runtime/host_config.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <cstddef>

namespace agentctx::server {

using runtime::summarizer_factory;

/// A runtime::host_config::make_summarizer that gives every session an http_summarizer for `cfg`
/// sending through one of `io_threads` http_clients on `ex` (a providers::http_client_pool), so
/// the server holds `io_threads` curl multi handles and connection caches, not one per session.
summarizer_factory shared_http_summarizers(
    boost::asio::any_io_executor ex, providers::provider_config cfg, std::size_t io_threads
);

}  // namespace agentctx::server
