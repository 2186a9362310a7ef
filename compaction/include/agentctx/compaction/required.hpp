// Required entries: what the host marks as never summarized; no cut ever passes one.
#pragma once

#include <agentctx/compaction/cut_point.hpp>
#include <agentctx/compaction/entry.hpp>
#include <agentctx/compaction/projection.hpp>

#include <boost/json/object.hpp>

#include <functional>
#include <span>
#include <string>
#include <vector>

namespace agentctx::compaction {

/**
 * @brief What the host requires to stay in the working context: entries by id, custom messages by
 * `customType`, or a predicate.
 *
 * Unlike a pin (carried verbatim beside the summary while the cut moves on), a required entry
 * holds the cut: a compaction summarizes only what lies before the oldest required entry after
 * the previous compaction. When that leaves nothing to summarize, the compaction fails with
 * `budget_exceeded` instead of doing nothing quietly.
 */
/// Why required context does not fit, in numbers only (no content): filled when a plan fails
/// with `budget_exceeded`.
struct budget_shortfall
{
    std::int64_t input_tokens = 0;      ///< the context's estimate as planned
    std::int64_t required_tokens = 0;   ///< what stays from the oldest required entry on
    std::string boundary_entry_id;      ///< where the range that could be summarized starts
    std::string required_entry_id;      ///< the oldest required entry, which holds the cut
    std::size_t boundary_position = 0;  ///< both as positions among the projected entries
    std::size_t required_position = 0;
    /// When the summary's room is what is missing (reserve_summary_room): the summary's output
    /// budget and the allowance the kept part and the summary must fit; 0 otherwise.
    std::int64_t summary_tokens = 0;
    std::int64_t allowance = 0;
};

struct required_policy
{
    std::vector<std::string> ids;
    std::vector<std::string> custom_types;
    std::function<bool(const entry&)> predicate;

    bool empty() const noexcept { return ids.empty() && custom_types.empty() && !predicate; }
    bool requires_entry(const entry& e) const;
};

/// Reads `{"required": {"ids": [..], "customTypes": [..]}}` strictly (`invalid_settings` naming
/// the field). Absent = nothing required.
result<required_policy> parse_required_settings(const boost::json::object& settings, diagnostics& diag);

/// The oldest projected entry in `[start, end)` the policy requires, if any.
std::optional<std::size_t> first_required(
    std::span<const projected_entry> entries,
    std::size_t start,
    std::size_t end,
    const required_policy& policy
);

/// The numbers of a plan that required entries hold at `start` (see budget_shortfall).
budget_shortfall measure_shortfall(
    std::span<const projected_entry> entries,
    std::size_t start,
    const required_policy& policy,
    const token_counter& counter
);

/**
 * @brief Moves the cut `r` back so that no required entry lies before it.
 *
 * The new cut is the latest cut point the mode allows at or before the oldest required entry of
 * `[start, end)`; `r` is unchanged when it already keeps every required entry. `budget_exceeded`
 * (the entry named in `diag`) when no allowed cut lies after `start`: nothing could be summarized.
 */
result<void> hold_cut_before_required(
    std::span<const projected_entry> entries,
    std::size_t start,
    std::size_t end,
    const required_policy& policy,
    compat_mode mode,
    cut_point_result& r,
    diagnostics& diag
);

/**
 * agentctx mode with a known window: the cut leaves room for the summary. When the backward walk
 * reached keepRecentTokens (`r.crossing_index`; a budget covering the whole range keeps it all
 * and leaves nothing to compact, unchanged) and the kept range
 * `[r.chosen_index, end)` plus `summary_tokens` exceeds `allowance`, the cut moves to the earliest
 * later cut the tool rounds allow (never past the oldest required entry) whose kept range fits:
 * the compacted context then fits whatever the summary's length. When no cut fits, the result is
 * `budget_exceeded` and `shortfall` (when set) holds the numbers: `required_tokens` is the smallest
 * suffix the cut can keep, `required_entry_id` where it starts. No model is asked.
 */
result<void> reserve_summary_room(
    std::span<const projected_entry> entries,
    std::size_t start,
    std::size_t end,
    const required_policy* policy,
    std::int64_t allowance,
    std::int64_t summary_tokens,
    const token_counter& counter,
    cut_point_result& r,
    budget_shortfall* shortfall,
    diagnostics& diag
);

}  // namespace agentctx::compaction
