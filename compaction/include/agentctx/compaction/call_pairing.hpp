// Which tool call each tool result answers: ids are matched within their batch, as providers do.
#pragma once

#include <agentctx/compaction/message.hpp>
#include <agentctx/compaction/projection.hpp>

#include <cstddef>
#include <limits>
#include <span>
#include <vector>

namespace agentctx::compaction {

/// One message of a sequence to pair, at a position the caller chooses (an entry or a message index).
/// Positions must not decrease along the sequence.
struct pairing_input
{
    const message* msg;
    std::size_t position;
};

/// A tool call as declared by an assistant message.
struct call_declaration
{
    std::size_t position;  ///< the declaring assistant's position
    const tool_call_block* call;
    std::size_t answers = 0;  ///< results linked to this declaration
};

enum class result_link_kind
{
    paired,     ///< the first result of its call
    repeat,     ///< a further result of a call already answered
    ambiguous,  ///< two live declarations share the id and either could own the result
    no_call,    ///< no declaration of the id precedes it
};

/// How one tool result links to a declaration.
struct result_link
{
    static constexpr std::size_t none = std::numeric_limits<std::size_t>::max();

    std::size_t position;  ///< the result's position
    result_link_kind kind;
    std::size_t declaration = none;  ///< index into tool_call_pairing::declarations (none for no_call)
    std::size_t reach_from = none;   ///< ambiguous: the earliest candidate's position; else the declaration's
    std::size_t answer = 0;          ///< the declaration's answers counting this one (1 for the first)
    bool late = false;               ///< linked by looking back past its own batch
};

struct tool_call_pairing
{
    std::vector<call_declaration> declarations;
    std::vector<result_link> results;
    /// Declarations that repeat an id already declared in the same assistant message (indices).
    std::vector<std::size_t> repeated_in_message;
};

/**
 * Links every tool result to the call it answers. A batch is an assistant message and every
 * message after it up to the next assistant message. A result answers the call of its id in its
 * own batch; only when its batch declares no such id does it look back, and then it answers the
 * one earlier declaration of the id that is still unanswered (a late result). So an id reused in
 * every turn (`call_0`) pairs turn by turn. Ambiguous: the batch declares the id twice, or more
 * than one earlier declaration of it is unanswered; such a result is linked to the first
 * unanswered candidate and `reach_from` names the earliest one, so no cut splits the conflict.
 */
tool_call_pairing pair_tool_calls(std::span<const pairing_input> messages);
/// The same over a context; positions are message indices.
tool_call_pairing pair_tool_calls(std::span<const context_message> messages);

}  // namespace agentctx::compaction
