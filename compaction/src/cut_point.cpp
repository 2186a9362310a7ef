// find_cut_point: the backward keepRecentTokens walk, metadata widening, split-turn detection.
#include <agentctx/compaction/cut_point.hpp>

#include <agentctx/compaction/transcript.hpp>

#include <algorithm>

namespace agentctx::compaction {

bool is_valid_cut_point(const entry& e) noexcept
{
    if (e.type == entry_type::branch_summary || e.type == entry_type::custom_message)
        return true;
    if (e.type != entry_type::message || !e.message)
        return false;
    switch (e.message->role)
    {
    case role::user:
    case role::assistant:
    case role::bash_execution:
    case role::custom:
    case role::branch_summary:
    case role::compaction_summary: return true;
    default: return false;
    }
}

bool is_turn_start(const entry& e) noexcept
{
    if (e.type == entry_type::branch_summary || e.type == entry_type::custom_message)
        return true;
    return e.type == entry_type::message && e.message &&
           (e.message->role == role::user || e.message->role == role::bash_execution);
}

std::optional<std::size_t> find_turn_start(std::span<const entry_ptr> path, std::size_t index, std::size_t start)
{
    for (std::size_t i = index + 1; i-- > start;)
        if (is_turn_start(*path[i]))
            return i;
    return std::nullopt;
}

std::vector<std::size_t> allowed_cut_points(std::span<const entry_ptr> path, std::size_t start, std::size_t end,
                                            compat_mode mode)
{
    std::vector<std::size_t> cuts;
    for (std::size_t i = start; i < end; ++i)
        if (is_valid_cut_point(*path[i]))
            cuts.push_back(i);
    if (mode == compat_mode::pi)
        return cuts;
    // A cut at c keeps [c, end): it splits a tool round [first, last] when first < c <= last.
    const auto rounds = tool_round_intervals(path, start, end);
    std::erase_if(cuts, [&](std::size_t c) {
        const auto it = std::upper_bound(rounds.begin(), rounds.end(), c, [](std::size_t v, const interval& iv) {
            return v < iv.first;
        });
        return it != rounds.begin() && std::prev(it)->first < c && c <= std::prev(it)->last;
    });
    return cuts;
}

result<cut_point_result> find_cut_point(
    std::span<const entry_ptr> path,
    std::size_t start,
    std::size_t end,
    std::int64_t keep_recent_tokens,
    compat_mode mode,
    const token_counter& counter
)
{
    const bool pi = mode == compat_mode::pi;
    const auto cuts = allowed_cut_points(path, start, end, mode);
    cut_point_result r;
    if (cuts.empty())
    {
        if (!pi)
            return errc::boundary_unavailable;
        r.first_kept_index = r.chosen_index = start;
        return r;
    }
    std::size_t cut = cuts.front();
    std::int64_t acc = 0;
    for (std::size_t i = end; i-- > start;)
    {
        const entry& e = *path[i];
        if (e.type != entry_type::message || !e.message)
            continue;  // Pi counts only message entries (tool results included)
        acc += static_cast<std::int64_t>(counter.count(*e.message));
        if (acc < keep_recent_tokens)
            continue;
        r.crossing_index = i;
        const auto at_or_after = std::lower_bound(cuts.begin(), cuts.end(), i);
        if (at_or_after != cuts.end())
            cut = *at_or_after;
        else if (!pi)
            // Fix 1: the budget was crossed inside trailing tool results. Pi falls back to the
            // first cut point (keeps everything, compacts again next turn); we take the nearest
            // allowed cut point before the crossing.
            cut = *std::prev(at_or_after);
        break;
    }
    const std::size_t chosen = cut;
    r.chosen_index = chosen;
    while (cut > start && path[cut - 1]->type != entry_type::message && path[cut - 1]->type != entry_type::compaction)
        --cut;  // keep adjacent metadata with the retained side
    r.first_kept_index = cut;
    auto is_user = [](const entry& e) {
        return e.type == entry_type::message && e.message && e.message->role == role::user;
    };
    // Fix 2: Pi tests the widened cut, so a prompt preceded by metadata looks like a split turn
    // of the previous turn. The chosen cut point is what starts the retained region.
    const bool user_cut = pi ? is_user(*path[cut]) : is_user(*path[chosen]);
    if (!user_cut)
    {
        r.turn_start_index = find_turn_start(path, cut, start);
        r.is_split_turn = r.turn_start_index.has_value();
    }
    return r;
}

}  // namespace agentctx::compaction
