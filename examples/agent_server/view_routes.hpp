// A budgeted request view over HTTP: the newest whole interaction groups that fit, or why they cannot.
#pragma once

#include "route_context.hpp"

namespace agentctx::server {

/// POST /v1/sessions/{id}/view: `{"maxTokens", "reservedOutput"?, "safetyMargin"?,
/// "systemTokens"?, "requiredEntryIds"?}` (compaction::request_budget). 200 with the view's
/// messages and numbers; 409 `budget_exceeded` with `error.budget` when what must stay does not
/// fit (the session's budget_exceeded event reaches the event stream and the metrics); 400
/// naming the field for bad input.
boost::asio::awaitable<http_response> request_view(request_context& c, const lease& held);

}  // namespace agentctx::server
