// What holds the cut: required entries (the policy, its settings, the cut that never passes one) and the
// summary's room.
#include <agentctx/compaction/required.hpp>

#include "settings_strings.hpp"

#include <algorithm>

namespace agentctx::compaction {

bool required_policy::requires_entry(const entry& e) const
{
    if (empty())
        return false;
    if (std::find(ids.begin(), ids.end(), e.id) != ids.end())
        return true;
    if (e.type == entry_type::custom_message &&
        std::find(custom_types.begin(), custom_types.end(), e.custom_type) != custom_types.end())
        return true;
    return predicate && predicate(e);
}

result<required_policy> parse_required_settings(const boost::json::object& settings, diagnostics& diag)
{
    required_policy out;
    const auto* section = settings.if_contains("required");
    if (!section)
        return out;
    if (!section->is_object())
    {
        diag.field = "required";
        diag.message = "settings: field 'required': expected an object";
        return errc::invalid_settings;
    }
    if (auto r = detail::read_settings_strings(
            section->get_object(), "required", "customTypes", out.custom_types, diag
        );
        !r)
        return r.error();
    if (auto r = detail::read_settings_strings(section->get_object(), "required", "ids", out.ids, diag); !r)
        return r.error();
    return out;
}

std::optional<std::size_t> first_required(
    std::span<const projected_entry> entries,
    std::size_t start,
    std::size_t end,
    const required_policy& policy
)
{
    if (policy.empty())
        return std::nullopt;
    for (std::size_t i = start; i < end; ++i)
        if (entries[i].source && policy.requires_entry(*entries[i].source))
            return i;
    return std::nullopt;
}

namespace {

// A shortfall's positions and entry ids: the range that could be summarized starts at `start`,
// and what must stay starts at `held`.
budget_shortfall located_shortfall(
    std::span<const projected_entry> entries, std::size_t start, std::size_t held
)
{
    budget_shortfall b;
    b.boundary_position = start;
    b.required_position = held;
    if (start < entries.size() && entries[start].source)
        b.boundary_entry_id = entries[start].source->id;
    if (held < entries.size() && entries[held].source)
        b.required_entry_id = entries[held].source->id;
    return b;
}

// Tokens of [i, end) for every i in [start, end], as the cut's walk counts them.
std::vector<std::int64_t> suffix_tokens(
    std::span<const projected_entry> entries, std::size_t start, std::size_t end, const token_counter& counter
)
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

}  // namespace

budget_shortfall measure_shortfall(
    std::span<const projected_entry> entries,
    std::size_t start,
    const required_policy& policy,
    const token_counter& counter
)
{
    const auto req = first_required(entries, start, entries.size(), policy).value_or(start);
    budget_shortfall out = located_shortfall(entries, start, req);
    for (std::size_t i = 0; i < entries.size(); ++i)
        for (const auto& m : entries[i].messages)
        {
            const auto n = static_cast<std::int64_t>(counter.count(*m));
            out.input_tokens += n;
            out.required_tokens += i >= req ? n : 0;
        }
    return out;
}

result<void> hold_cut_before_required(
    std::span<const projected_entry> entries,
    std::size_t start,
    std::size_t end,
    const required_policy& policy,
    compat_mode mode,
    cut_point_result& r,
    diagnostics& diag
)
{
    const auto req = first_required(entries, start, end, policy);
    if (!req || *req >= r.first_kept_index)
        return {};
    const auto cuts = allowed_cut_points(entries, start, *req + 1, mode);
    const auto latest = std::find_if(cuts.rbegin(), cuts.rend(), [&](std::size_t c) { return c > start; });
    if (latest == cuts.rend())
    {
        diag.field = entries[*req].source->id;
        diag.message =
            "required entry " + entries[*req].source->id +
            " is the oldest entry that could be summarized: no cut lies before it, so the required "
            "context cannot be made smaller";
        return errc::budget_exceeded;
    }
    cut_point_result held;
    held.crossing_index = r.crossing_index;
    settle_cut(entries, start, *latest, mode == compat_mode::pi, held);
    r = held;
    return {};
}

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
)
{
    // A keepRecentTokens that covers the whole range keeps it all: nothing to compact, as before.
    if (allowance <= 0 || !r.crossing_index || r.chosen_index >= end || r.chosen_index < start)
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
    {
        *shortfall = located_shortfall(entries, start, at);
        shortfall->input_tokens = suffix[0];
        shortfall->required_tokens = kept(at);
        shortfall->summary_tokens = summary_tokens;
        shortfall->allowance = allowance;
    }
    diag.field = at < entries.size() && entries[at].source ? entries[at].source->id : std::string();
    diag.message = "the smallest part the cut can keep (from entry " + diag.field + ", ~" +
                   std::to_string(kept(at)) + " tokens) and the summary's budget of " +
                   std::to_string(summary_tokens) + " tokens do not fit the allowance of " +
                   std::to_string(allowance) + " tokens";
    return errc::budget_exceeded;
}

}  // namespace agentctx::compaction
