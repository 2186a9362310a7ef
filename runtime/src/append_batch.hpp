// Appending several messages as one batch: all validated before the first is written, none interleaved.
#pragma once

#include <agentctx/compaction/entry.hpp>
#include <agentctx/compaction/session_log.hpp>
#include <agentctx/runtime/session.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/json/object.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace agentctx::runtime::detail {

class session_core;

/// session::async_append_messages on the core: see session.hpp for the contract.
/// The same for entries of any appendable type (`fields` as async_append takes them): the
/// tool-result clearing's context edits. Completes on the strand's queue.
void append_entries(
    std::shared_ptr<session_core> core,
    std::vector<boost::json::object> fields,
    boost::asio::any_completion_handler<append_batch_signature> h
);

/// Inside the write turn: every entry (`fields` of any appendable type) chained after `parent`
/// (the leaf for an append; nullopt = a new root), each checked as a single append would be (the
/// first against the log; the rest have their parent in the batch; a context edit's target
/// against the log). Nothing is written; a refusal names `[index]` and the field in `reason`.
compaction::result<std::vector<compaction::entry_ptr>> prepare_batch(
    const compaction::session_log& log,
    std::vector<boost::json::object> fields,
    std::optional<std::string> parent,
    std::string& reason
);

/// session::async_append_messages: each message as a `message` entry, one batch.
void append_messages(
    std::shared_ptr<session_core> core,
    std::vector<boost::json::object> messages,
    boost::asio::any_completion_handler<append_batch_signature> h
);

}  // namespace agentctx::runtime::detail
