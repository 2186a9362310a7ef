// Messages refused at the door when a tool call or result in them can never pair.
#pragma once

#include <agentctx/compaction/message.hpp>
#include <agentctx/compaction/projection.hpp>
#include <agentctx/runtime/snapshot.hpp>

#include <boost/json/object.hpp>

#include <cstddef>
#include <optional>
#include <span>
#include <string>

namespace agentctx::server {

/// What cannot pair, in `incoming[message]`: a result (`call` is npos) or its `call`-th tool call.
struct unpairable
{
    static constexpr std::size_t npos = static_cast<std::size_t>(-1);

    std::size_t message;
    std::size_t call = npos;
    std::string why;  ///< the reason, without the field path
};

/**
 * The first message of `incoming` (to be appended after `context`) holding what can never pair,
 * with results matched within their batch (compaction::pair_tool_calls): a tool result with no
 * call to answer, a second result for a call, an assistant message naming one tool-call id twice.
 * nullopt when everything pairs: an id reused by a later turn is not a problem.
 */
std::optional<unpairable> find_unpairable(
    std::span<const compaction::context_message> context, std::span<const compaction::message> incoming
);

/// A field path and why, for a refusal.
struct refused_field
{
    std::string field;
    std::string message;  ///< `<field>: <why>`
};

/// The same for the fields of a `message` entry (POST /entries) after `context`'s messages: the field is
/// `message.toolCallId` or `message.content[k].id`. nullopt for any other entry, or one the
/// append's own validation refuses.
std::optional<refused_field> unpairable_entry(
    const runtime::snapshot& context, const boost::json::object& fields
);

}  // namespace agentctx::server
