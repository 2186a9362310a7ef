// History replacement: a host's whole transcript compared with the context, the difference appended as a
// branch.
#pragma once

#include <agentctx/compaction/projection.hpp>
#include <agentctx/compaction/session_log.hpp>
#include <agentctx/runtime/session.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace agentctx::runtime::detail {

class session_core;

/// The custom type of the entry a replacement that only shortens the context writes.
inline constexpr std::string_view history_replaced_type = "agentctx.history_replaced";

/// What is compared of a message: its role and what the model reads of it (text, images and
/// tool calls; a tool result's call id and error flag; a custom message's type; a summary's
/// text; a command and its output). Thinking, timestamps, usage, provider, model, api and stop
/// reason are not: provider formats do not carry them back. A string is one text block.
boost::json::value comparable_message(const compaction::message& m);

/// Whether the host's message `host` stands for the context message `ctx`: the same comparable
/// form, or the form the model is sent (convert_to_llm, either summary framing): a summary or a
/// custom message as the user message a wire view shows.
bool same_message(const std::shared_ptr<const compaction::message>& ctx, const compaction::message& host);

/// Where the replacement goes.
struct replacement_plan
{
    bool changed = false;
    std::size_t shared = 0;           ///< host messages matched, in order
    std::size_t tail_from = 0;        ///< the host's index where the appended tail starts
    std::optional<std::string> fork;  ///< the tail's parent; nullopt = a new root
    bool refused = false;             ///< the difference lies inside the latest compaction's summary
};

/// Compares `host` with `view` (the context with its unknown-outcome observations; `own` tells
/// which of its messages are the snapshot's, the others are observations no entry holds) on the
/// log's active path. System messages are skipped on both sides (wire views leave them out).
compaction::result<replacement_plan> plan_replacement(
    const compaction::session_log& log,
    std::span<const compaction::context_message> view,
    const std::vector<bool>& own,
    std::span<const compaction::message> host,
    compaction::diagnostics& diag
);

/// session::async_replace_history on the core: see session.hpp. Completes on the strand's queue.
void replace_history(
    std::shared_ptr<session_core> core,
    std::vector<boost::json::object> messages,
    boost::asio::any_completion_handler<replace_history_signature> h
);

}  // namespace agentctx::runtime::detail
