// find_cut_point over projected entries: budget walk, recovery-suffix rule, look-back, split turns.
#include <agentctx/compaction/cut_point.hpp>

#include <agentctx/compaction/transcript.hpp>

#include <algorithm>

namespace agentctx::compaction {

namespace {

using messages_t = std::vector<std::shared_ptr<const message>>;

template <class Pred>
bool any_role(const messages_t& messages, Pred pred)
{
    return std::any_of(messages.begin(), messages.end(), [&](const auto& m) { return pred(m->role); });
}

bool is_compaction(const projected_entry& p) noexcept
{
    return p.source->type == entry_type::compaction;
}

// Pi 1.6's valid cut points over the messages an entry contributes (never for a compaction).
bool cut_roles(const messages_t& messages)
{
    return any_role(messages, [](role r) {
        return r == role::user || r == role::assistant || r == role::bash_execution || r == role::custom ||
               r == role::branch_summary || r == role::compaction_summary;
    });
}

bool turn_roles(const messages_t& messages)
{
    return any_role(messages, [](role r) {
        return r == role::user || r == role::bash_execution || r == role::custom ||
               r == role::branch_summary || r == role::compaction_summary;
    });
}

std::int64_t entry_tokens(const projected_entry& p, const token_counter& counter)
{
    std::int64_t t = 0;
    for (const auto& m : p.messages)
        t += static_cast<std::int64_t>(counter.count(*m));
    return t;
}

// Pi 1.6's definitions of the recovery suffix.
bool intrinsically_visible(const projected_entry& p)
{
    return p.source->type != entry_type::context_edit && !entry_messages(*p.source).empty();
}

bool omitted(const projected_entry& p)
{
    return p.messages.empty() && intrinsically_visible(p);
}

// The recovery-suffix rule: the kept range would hold only an omitted failed attempt (and
// invisible entries), so the cut advances past the input that produced it.
bool suffix_is_omitted_attempt(std::span<const projected_entry> e, std::size_t cut, std::size_t end)
{
    bool omitted_assistant = false;
    for (std::size_t i = cut + 1; i < end; ++i)
    {
        const projected_entry& p = e[i];
        if (is_compaction(p) || (intrinsically_visible(p) && !omitted(p)))
            return false;
        if (p.source->type == entry_type::message && p.source->message &&
            p.source->message->role == role::assistant && omitted(p))
            omitted_assistant = true;
        if (p.source->type == entry_type::context_edit && p.source->replacement)
        {
            bool targets_omitted_suffix = false;
            for (std::size_t j = cut + 1; j < end && !targets_omitted_suffix; ++j)
                targets_omitted_suffix = e[j].source->id == p.source->target_id && omitted(e[j]);
            if (!targets_omitted_suffix)
                return false;
        }
    }
    return omitted_assistant;
}

// A human turn starts at the user's own input (a prompt or a `!command`); custom messages a host
// injects mid-run (reminders, status) do not end an autonomous run.
bool starts_human_turn(const projected_entry& p)
{
    return !is_compaction(p) &&
           any_role(p.messages, [](role r) { return r == role::user || r == role::bash_execution; });
}

bool is_assistant_entry(const projected_entry& p)
{
    return p.source->type == entry_type::message && p.source->message &&
           p.source->message->role == role::assistant && !p.messages.empty();
}

}  // namespace

// The chosen cut `cut` widened over context-invisible entries, and the split-turn fields.
void settle_cut(
    std::span<const projected_entry> e, std::size_t start, std::size_t cut, bool pi, cut_point_result& r
)
{
    const std::size_t chosen = cut;
    r.chosen_index = chosen;
    while (cut > start && !is_compaction(e[cut - 1]) && e[cut - 1].messages.empty())
        --cut;  // context-invisible entries (metadata, edits, omitted entries) stay with the kept side
    r.first_kept_index = cut;
    // Fix: Pi tests the widened cut, so a prompt preceded by metadata looks like a split turn of
    // the previous turn. The chosen cut point is what starts the kept region.
    const bool turn_cut = starts_turn(e[pi ? cut : chosen]);
    r.turn_start_index.reset();
    r.is_split_turn = false;
    if (!turn_cut)
    {
        r.turn_start_index = find_turn_start(e, cut, start);
        r.is_split_turn = r.turn_start_index.has_value();
    }
}

bool is_valid_cut_point(const projected_entry& p) noexcept
{
    return !is_compaction(p) && cut_roles(p.messages);
}

bool starts_turn(const projected_entry& p) noexcept
{
    return !is_compaction(p) && turn_roles(p.messages);
}

std::optional<std::size_t> find_turn_start(
    std::span<const projected_entry> entries, std::size_t index, std::size_t start
)
{
    for (std::size_t i = index + 1; i-- > start;)
        if (starts_turn(entries[i]))
            return i;
    return std::nullopt;
}

std::vector<std::size_t> allowed_cut_points(
    std::span<const projected_entry> entries, std::size_t start, std::size_t end, compat_mode mode
)
{
    std::vector<std::size_t> cuts;
    for (std::size_t i = start; i < end; ++i)
        if (is_valid_cut_point(entries[i]))
            cuts.push_back(i);
    if (mode == compat_mode::pi)
        return cuts;
    // A cut at c keeps [c, end): it splits a tool round [first, last] when first < c <= last.
    const auto rounds = tool_round_intervals(entries, start, end);
    std::erase_if(cuts, [&](std::size_t c) {
        const auto it =
            std::upper_bound(rounds.begin(), rounds.end(), c, [](std::size_t v, const interval& iv) {
                return v < iv.first;
            });
        return it != rounds.begin() && std::prev(it)->first < c && c <= std::prev(it)->last;
    });
    return cuts;
}

result<cut_point_result> find_cut_point(
    std::span<const projected_entry> e,
    std::size_t start,
    std::size_t end,
    std::int64_t keep_recent_tokens,
    compat_mode mode,
    const token_counter& counter
)
{
    const bool pi = mode == compat_mode::pi;
    const auto cuts = allowed_cut_points(e, start, end, mode);
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
        const std::int64_t t = entry_tokens(e[i], counter);
        if (t == 0)
            continue;  // omitted entries, metadata and edits weigh nothing
        acc += t;
        if (acc < keep_recent_tokens)
            continue;
        r.crossing_index = i;
        // The first cut point at or after the crossing; inside trailing tool results the last
        // one before it (their assistant), as Pi 1.6 does.
        const auto at_or_after = std::lower_bound(cuts.begin(), cuts.end(), i);
        cut = at_or_after != cuts.end() ? *at_or_after : cuts.back();
        break;
    }
    if (r.crossing_index && suffix_is_omitted_attempt(e, cut, end))
    {
        ++cut;
        r.advanced_past_omitted_attempt = true;
    }
    settle_cut(e, start, cut, pi, r);
    return r;
}

cut_point_result keep_recent_exchanges(
    std::span<const projected_entry> e,
    std::size_t start,
    std::size_t end,
    cut_point_result r,
    std::int64_t exchanges,
    std::int64_t max_kept_tokens,
    const token_counter& counter
)
{
    // The recovery-suffix rule passed an omitted failed attempt on purpose: its input must go.
    if (exchanges <= 0 || r.chosen_index >= end || r.advanced_past_omitted_attempt)
        return r;
    for (std::size_t i = r.chosen_index; i < end; ++i)
        if (starts_human_turn(e[i]))
            return r;  // the current turn is kept whole
    std::size_t turn = end;
    while (turn > start && !starts_human_turn(e[turn - 1]))
        --turn;
    turn = turn > start ? turn - 1 : start;
    std::vector<std::size_t> assistants;  // exchange starts of the current turn
    for (std::size_t i = turn; i < end; ++i)
        if (is_assistant_entry(e[i]))
            assistants.push_back(i);
    const auto kept = static_cast<std::int64_t>(
        assistants.end() - std::lower_bound(assistants.begin(), assistants.end(), r.chosen_index)
    );
    if (kept >= exchanges)
        return r;
    const std::size_t target = static_cast<std::int64_t>(assistants.size()) >= exchanges
                                   ? assistants[assistants.size() - static_cast<std::size_t>(exchanges)]
                                   : turn;
    // The latest cut the tool rounds allow at or before the target exchange; with a bound, the
    // earliest later cut whose kept range fits it.
    const auto cuts = allowed_cut_points(e, start, end, compat_mode::agentctx);
    auto at = std::upper_bound(cuts.begin(), cuts.end(), target);
    if (at == cuts.begin())
        return r;
    --at;
    if (max_kept_tokens > 0)
    {
        std::vector<std::int64_t> suffix(end - start + 1, 0);  // tokens of [i, end)
        for (std::size_t i = end; i-- > start;)
            suffix[i - start] = suffix[i - start + 1] + entry_tokens(e[i], counter);
        while (at != cuts.end() && *at < r.chosen_index && suffix[*at - start] > max_kept_tokens)
            ++at;
    }
    if (at == cuts.end() || *at >= r.chosen_index)
        return r;
    cut_point_result moved;
    moved.crossing_index = r.crossing_index;
    settle_cut(e, start, *at, false, moved);
    return moved;
}

cut_point_result keep_turn_whole(
    std::span<const projected_entry> e,
    std::size_t start,
    cut_point_result r,
    std::int64_t max_prefix_tokens,
    const token_counter& counter
)
{
    if (!r.is_split_turn || !r.turn_start_index || *r.turn_start_index <= start)
        return r;
    std::int64_t prefix = 0;
    for (std::size_t i = *r.turn_start_index; i < r.first_kept_index && prefix <= max_prefix_tokens; ++i)
        prefix += entry_tokens(e[i], counter);
    if (prefix > max_prefix_tokens)
        return r;
    cut_point_result moved;
    moved.crossing_index = r.crossing_index;
    settle_cut(e, start, *r.turn_start_index, false, moved);
    return moved;
}

std::vector<projected_entry> raw_projected_entries(std::span<const entry_ptr> path)
{
    std::vector<projected_entry> out;
    out.reserve(path.size());
    for (std::size_t i = 0; i < path.size(); ++i)
        out.push_back({path[i], i, nullptr, entry_messages(*path[i])});
    return out;
}

bool is_valid_cut_point(const entry& e)
{
    return e.type != entry_type::compaction && cut_roles(entry_messages(e));
}

bool is_turn_start(const entry& e)
{
    return e.type != entry_type::compaction && turn_roles(entry_messages(e));
}

std::optional<std::size_t> find_turn_start(
    std::span<const entry_ptr> path, std::size_t index, std::size_t start
)
{
    return find_turn_start(raw_projected_entries(path), index, start);
}

std::vector<std::size_t> allowed_cut_points(
    std::span<const entry_ptr> path, std::size_t start, std::size_t end, compat_mode mode
)
{
    return allowed_cut_points(raw_projected_entries(path), start, end, mode);
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
    // Raw entries carry no edits, so the recovery-suffix rule never applies here.
    return find_cut_point(raw_projected_entries(path), start, end, keep_recent_tokens, mode, counter);
}

}  // namespace agentctx::compaction
