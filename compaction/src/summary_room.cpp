// reserve_summary_room: the cut keeps no more than the allowance leaves beside the summary's budget.
#include <agentctx/compaction/required.hpp>

#include <algorithm>

namespace agentctx::compaction {

namespace {

// Tokens of [i, end) for every i in [start, end], as the cut's walk counts them.
std::vector<std::int64_t> suffix_tokens(std::span<const projected_entry> entries, std::size_t start, std::size_t end,
                                        const token_counter& counter)
{
    std::vector<std::int64_t> suffix(end - start + 1, 0);
    for (std::size_t i = end; i-- > start;)
    {
        std::int64_t t = 0;
        for (const auto& m : entries[i].messages)
            t += static_cast<std::int64_t>(counter.count(*m));
        suffix[i - start] = suffix[i - start + 1] + t;
    }
    return suffix;
}

budget_shortfall room_shortfall(std::span<const projected_entry> entries, std::size_t start, std::size_t smallest,
                                std::int64_t input, std::int64_t kept, std::int64_t allowance, std::int64_t summary_tokens)
{
    budget_shortfall b;
    b.input_tokens = input;
    b.required_tokens = kept;
    b.boundary_position = start;
    b.required_position = smallest;
    if (start < entries.size() && entries[start].source)
        b.boundary_entry_id = entries[start].source->id;
    if (smallest < entries.size() && entries[smallest].source)
        b.required_entry_id = entries[smallest].source->id;
    b.summary_tokens = summary_tokens;
    b.allowance = allowance;
    return b;
}

}  // namespace

result<void> reserve_summary_room(std::span<const projected_entry> entries, std::size_t start, std::size_t end,
                                  const required_policy* policy, std::int64_t allowance, std::int64_t summary_tokens,
                                  const token_counter& counter, cut_point_result& r, budget_shortfall* shortfall,
                                  diagnostics& diag)
{
    if (allowance <= 0 || r.chosen_index >= end || r.chosen_index < start)
        return {};
    const auto suffix = suffix_tokens(entries, start, end, counter);
    const auto kept = [&](std::size_t c) { return suffix[c - start]; };
    if (kept(r.chosen_index) + summary_tokens <= allowance)
        return {};
    // The latest cut may keep the oldest required entry, never pass it.
    const std::size_t limit =
        (policy ? first_required(entries, start, end, *policy) : std::nullopt).value_or(end - 1);
    const auto cuts = allowed_cut_points(entries, start, end, compat_mode::agentctx);
    std::optional<std::size_t> smallest;
    for (const auto c : cuts)
    {
        if (c <= r.chosen_index || c > limit)
            continue;
        smallest = c;
        if (kept(c) + summary_tokens <= allowance)
        {
            cut_point_result moved;
            moved.crossing_index = r.crossing_index;
            settle_cut(entries, start, c, false, moved);
            r = moved;
            return {};
        }
    }
    const std::size_t at = smallest.value_or(r.chosen_index);
    if (shortfall)
        *shortfall = room_shortfall(entries, start, at, suffix[0], kept(at), allowance, summary_tokens);
    diag.field = at < entries.size() && entries[at].source ? entries[at].source->id : std::string();
    diag.message = "the smallest part the cut can keep (from entry " + diag.field + ", ~" + std::to_string(kept(at)) +
                   " tokens) and the summary's budget of " + std::to_string(summary_tokens) +
                   " tokens do not fit the allowance of " + std::to_string(allowance) + " tokens";
    return errc::budget_exceeded;
}

}  // namespace agentctx::compaction
