// A turn's outcome over HTTP: the threshold check with the provider's usage, and overflow recovery.
#pragma once

#include "route_context.hpp"

namespace agentctx::server {

/// POST /v1/sessions/{id}/turn-end: `{"format", "usage"?}`. The session's last assistant message,
/// with the provider's usage when given, goes through the post-run check; 200 says whether it
/// compacted and with which token count.
boost::asio::awaitable<http_response> turn_end(request_context& c, const lease& held);

/// POST /v1/sessions/{id}/overflow: `{"status", "body"}` of a provider error. The runtime decides
/// whether it is a context overflow, compacts once and answers `{"overflow", "retry", ...}`.
boost::asio::awaitable<http_response> overflow(request_context& c, const lease& held);

}  // namespace agentctx::server
