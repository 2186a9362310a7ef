// POST and PUT /v1/sessions/{id}/messages: an agent's provider-format messages appended as one batch, or
// replacing the history.
#pragma once

#include "route_context.hpp"

namespace agentctx::server {

/// `?format=openai|responses|anthropic`; the body holds the messages under the format's own
/// request key (`messages`, or `input` for Responses) and optionally the provider's `usage`,
/// `stop_reason`, `provider` and `model` of the batch's last assistant message. 201 `{"ids"}`;
/// 400 `invalid_wire_message` with the field path, nothing written.
boost::asio::awaitable<http_response> append_wire_messages(request_context& c, const lease& held);

/// PUT: the body (as for POST) is the whole conversation as the agent now holds it
/// (session::async_replace_history): 200 `{"changed","shared","forkId","oldLeafId","ids"}`
/// (`changed` false and nothing written when it is the context); 400 `invalid_wire_message`
/// with the field path, or the message's decoding error naming `[index]` and field; 409
/// `summarized_history` when it differs inside the latest compaction's summary. Nothing is
/// written on any refusal.
boost::asio::awaitable<http_response> replace_wire_messages(request_context& c, const lease& held);

}  // namespace agentctx::server
