// POST /v1/sessions/{id}/messages: an agent's provider-format messages appended as one batch.
#pragma once

#include "route_context.hpp"

namespace agentctx::server {

/// `?format=openai|responses|anthropic`; the body holds the messages under the format's own
/// request key (`messages`, or `input` for Responses) and optionally the provider's `usage`,
/// `stop_reason`, `provider` and `model` of the batch's last assistant message. 201 `{"ids"}`;
/// 400 `invalid_wire_message` with the field path, nothing written.
boost::asio::awaitable<http_response> append_wire_messages(request_context& c, const lease& held);

}  // namespace agentctx::server
