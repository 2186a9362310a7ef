// Appending several messages as one batch: all validated before the first is written, none interleaved.
#pragma once

#include <agentctx/runtime/session.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/json/object.hpp>

#include <memory>
#include <vector>

namespace agentctx::runtime::detail {

class session_core;

/// session::async_append_messages on the core: see session.hpp for the contract.
/// The same for entries of any appendable type (`fields` as async_append takes them): the
/// tool-result clearing's context edits. Completes on the strand's queue.
void append_entries(std::shared_ptr<session_core> core, std::vector<boost::json::object> fields,
                    boost::asio::any_completion_handler<append_batch_signature> h);

void append_messages(std::shared_ptr<session_core> core, std::vector<boost::json::object> messages,
                     boost::asio::any_completion_handler<append_batch_signature> h);

}  // namespace agentctx::runtime::detail
