// Where to cut (Pi 1.6): over projected entries, with agentctx's fixes and a Pi-exact mode.
#pragma once

#include <agentctx/compaction/entry.hpp>
#include <agentctx/compaction/error.hpp>
#include <agentctx/compaction/projection.hpp>
#include <agentctx/compaction/token_accounting.hpp>

#include <cstddef>
#include <optional>
#include <span>

namespace agentctx::compaction {

/// `agentctx`: Pi 1.6's algorithm with two fixes Pi still lacks (metadata before a prompt is no
/// split turn; no cut inside an interleaved tool round) plus fail-closed errors. `pi`: Pi 1.6.0
/// exactly, quirks included.
enum class compat_mode
{
    agentctx,
    pi,
};

struct cut_point_result
{
    std::size_t first_kept_index = 0;             ///< after the look-back over context-invisible entries
    std::size_t chosen_index = 0;                 ///< the cut point chosen before the look-back
    std::optional<std::size_t> turn_start_index;  ///< Pi's -1 is nullopt
    bool is_split_turn = false;
    /// Where the backward walk reached keepRecentTokens (nullopt: never reached).
    std::optional<std::size_t> crossing_index;
    bool advanced_past_omitted_attempt = false;  ///< the recovery-suffix rule applied (Pi 1.6)
};

/// Pi 1.6: not a compaction, and a projected message of role user, assistant, bashExecution,
/// custom, branchSummary or compactionSummary.
bool is_valid_cut_point(const projected_entry& p) noexcept;

/// Pi 1.6: not a compaction, and a projected user, bashExecution, custom, branchSummary or
/// compactionSummary message.
bool starts_turn(const projected_entry& p) noexcept;

/// The nearest turn start at or before `index`, not before `start`.
std::optional<std::size_t> find_turn_start(
    std::span<const projected_entry> entries, std::size_t index, std::size_t start
);

/// The cut points the mode allows in `entries[start, end)` (agentctx mode removes those strictly
/// inside a tool round).
std::vector<std::size_t> allowed_cut_points(
    std::span<const projected_entry> entries, std::size_t start, std::size_t end, compat_mode mode
);

/// Pi 1.6's findProjectedCutPoint over `entries[start, end)`. In agentctx mode a range with no
/// allowed cut point is `boundary_unavailable`; in pi mode it yields `start` as Pi does.
result<cut_point_result> find_cut_point(
    std::span<const projected_entry> entries,
    std::size_t start,
    std::size_t end,
    std::int64_t keep_recent_tokens,
    compat_mode mode = compat_mode::agentctx,
    const token_counter& counter = default_token_counter()
);

/**
 * @brief agentctx's long-run rule: the newest `exchanges` exchanges of the current turn stay kept.
 *
 * A human turn starts at a user prompt or a `!command` (not at a custom message a host injects
 * mid-run). When none starts in the kept range of `r` (the cut falls inside the current,
 * autonomous turn), the cut moves back to the latest cut the tool rounds allow at or before the
 * `exchanges`-th most recent assistant message of that turn (at most to the turn's start). An
 * exchange is an assistant message with its tool results. `max_kept_tokens` (> 0) bounds what the
 * rule may keep: it then keeps as many of those exchanges as fit, so a few huge tool results
 * cannot make a compaction useless. `r` is returned unchanged when it already keeps enough, when
 * the turn is kept whole, or when no earlier cut exists (or fits).
 */
cut_point_result keep_recent_exchanges(
    std::span<const projected_entry> entries,
    std::size_t start,
    std::size_t end,
    cut_point_result r,
    std::int64_t exchanges,
    std::int64_t max_kept_tokens = 0,
    const token_counter& counter = default_token_counter()
);

/// A cut that splits a turn moves back to the turn's start when the turn's prefix (the turn
/// start up to the cut) is at most `max_prefix_tokens`: the whole turn is kept and no separate
/// turn-prefix summary is needed. `r` is returned unchanged when it splits no turn, when the turn
/// starts at `start` (nothing would be left to summarize) or when the prefix is larger.
cut_point_result keep_turn_whole(
    std::span<const projected_entry> entries,
    std::size_t start,
    cut_point_result r,
    std::int64_t max_prefix_tokens,
    const token_counter& counter = default_token_counter()
);

/// Fills `r` for the cut point `chosen`: the look-back over context-invisible entries to
/// `first_kept_index`, and the split-turn fields (`pi`: Pi's test on the widened cut).
void settle_cut(
    std::span<const projected_entry> entries,
    std::size_t start,
    std::size_t chosen,
    bool pi,
    cut_point_result& r
);

/// Pi's exported raw variants: the same rules over raw path entries through
/// entry_messages (no edits, no recovery-suffix rule); indices are path indices.
std::vector<projected_entry> raw_projected_entries(std::span<const entry_ptr> path);
bool is_valid_cut_point(const entry& e);
bool is_turn_start(const entry& e);
std::optional<std::size_t> find_turn_start(
    std::span<const entry_ptr> path, std::size_t index, std::size_t start
);
std::vector<std::size_t> allowed_cut_points(
    std::span<const entry_ptr> path, std::size_t start, std::size_t end, compat_mode mode
);
result<cut_point_result> find_cut_point(
    std::span<const entry_ptr> path,
    std::size_t start,
    std::size_t end,
    std::int64_t keep_recent_tokens,
    compat_mode mode = compat_mode::agentctx,
    const token_counter& counter = default_token_counter()
);

}  // namespace agentctx::compaction
