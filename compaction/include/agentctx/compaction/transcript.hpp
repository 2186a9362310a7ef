// Tool-call/result linkage on a path: validation and the merged intervals no cut may split.
#pragma once

#include <agentctx/compaction/entry.hpp>
#include <agentctx/compaction/projection.hpp>

#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace agentctx::compaction {

enum class transcript_issue_kind
{
    duplicate_call_id,      ///< two live calls share an id and a result could answer either (a barrier)
    result_without_call,    ///< a tool result whose call does not precede it
    call_with_two_results,  ///< a second result for one call
    name_mismatch,          ///< a result's toolName differs from its call's name
};

const char* to_string(transcript_issue_kind k) noexcept;

/// A conflict of live declarations does not fail a plan: the cut may not fall inside it (its
/// span is one of tool_round_intervals) and the rest of the session compacts. Every other
/// issue fails an agentctx-mode plan as transcript_invalid.
constexpr bool is_barrier(transcript_issue_kind k) noexcept
{
    return k == transcript_issue_kind::duplicate_call_id;
}

struct transcript_issue
{
    transcript_issue_kind kind;
    std::string entry_id;  ///< the offending entry (the later of a pair)
    std::string tool_call_id;
};

/// Checks the message entries of `path[start, end)` with results paired within their batch
/// (pair_tool_calls): an id reused by a later turn is not an issue, nor is a call with no
/// result (an aborted turn).
std::vector<transcript_issue> validate_transcript(
    std::span<const entry_ptr> path, std::size_t start, std::size_t end
);
std::vector<transcript_issue> validate_transcript(std::span<const entry_ptr> path);
/// The same over projected entries (edited content; omitted entries contribute nothing).
std::vector<transcript_issue> validate_transcript(
    std::span<const projected_entry> entries, std::size_t start, std::size_t end
);

/// A closed range [first, last] of path indices that no cut may fall strictly inside.
struct interval
{
    std::size_t first;
    std::size_t last;
};

/// For every assistant with tool calls in `path[start, end)`: the interval from it through its
/// last paired result (from the earliest candidate, for an ambiguous result); overlapping
/// intervals merged; sorted. Calls without results span only the assistant itself and are left out.
std::vector<interval> tool_round_intervals(
    std::span<const entry_ptr> path, std::size_t start, std::size_t end
);
std::vector<interval> tool_round_intervals(
    std::span<const projected_entry> entries, std::size_t start, std::size_t end
);

}  // namespace agentctx::compaction
