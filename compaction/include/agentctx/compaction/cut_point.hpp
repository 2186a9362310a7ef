// Where to cut the active path (spec §5), with agentctx's three fixes and a Pi-exact mode.
#pragma once

#include <agentctx/compaction/entry.hpp>
#include <agentctx/compaction/error.hpp>
#include <agentctx/compaction/token_accounting.hpp>

#include <cstddef>
#include <optional>
#include <span>

namespace agentctx::compaction {

/// `agentctx`: Pi's algorithm with three fixes (trailing tool results, metadata before a prompt,
/// interleaved tool rounds) plus fail-closed errors. `pi`: Pi 0.73.1 exactly, quirks included.
enum class compat_mode
{
    agentctx,
    pi,
};

struct cut_point_result
{
    std::size_t first_kept_index = 0;  ///< after widening over adjacent metadata
    std::size_t chosen_index = 0;      ///< the cut point chosen before widening
    std::optional<std::size_t> turn_start_index;  ///< Pi's -1 is nullopt
    bool is_split_turn = false;
    /// Where the backward walk reached keepRecentTokens (nullopt: never reached).
    std::optional<std::size_t> crossing_index;
};

/// Pi's findValidCutPoints predicate: a context-visible message that is not a tool result, or a
/// branch_summary / custom_message entry.
bool is_valid_cut_point(const entry& e) noexcept;

/// A user-like turn start: user or bashExecution message, branch_summary or custom_message.
bool is_turn_start(const entry& e) noexcept;

/// Pi's findTurnStartIndex: the nearest turn start at or before `index`, not before `start`.
std::optional<std::size_t> find_turn_start(std::span<const entry_ptr> path, std::size_t index, std::size_t start);

/// Pi's findCutPoint over `path[start, end)`. In agentctx mode a range with no allowed cut point is
/// `boundary_unavailable`; in pi mode it yields `start` as Pi does.
result<cut_point_result> find_cut_point(
    std::span<const entry_ptr> path,
    std::size_t start,
    std::size_t end,
    std::int64_t keep_recent_tokens,
    compat_mode mode = compat_mode::agentctx,
    const token_counter& counter = default_token_counter()
);

/// The cut points the selected mode allows in `path[start, end)` (agentctx mode removes those
/// strictly inside a tool round).
std::vector<std::size_t> allowed_cut_points(std::span<const entry_ptr> path, std::size_t start, std::size_t end,
                                            compat_mode mode);

}  // namespace agentctx::compaction
