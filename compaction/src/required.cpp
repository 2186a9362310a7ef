// Required entries: the policy, its settings, and the cut that never passes one.
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
    if (auto r = detail::read_settings_strings(section->get_object(), "required", "customTypes", out.custom_types, diag); !r)
        return r.error();
    if (auto r = detail::read_settings_strings(section->get_object(), "required", "ids", out.ids, diag); !r)
        return r.error();
    return out;
}

std::optional<std::size_t> first_required(std::span<const projected_entry> entries, std::size_t start,
                                          std::size_t end, const required_policy& policy)
{
    if (policy.empty())
        return std::nullopt;
    for (std::size_t i = start; i < end; ++i)
        if (entries[i].source && policy.requires_entry(*entries[i].source))
            return i;
    return std::nullopt;
}

budget_shortfall measure_shortfall(std::span<const projected_entry> entries, std::size_t start,
                                   const required_policy& policy, const token_counter& counter)
{
    budget_shortfall out;
    const auto req = first_required(entries, start, entries.size(), policy).value_or(start);
    out.boundary_position = start;
    out.required_position = req;
    if (start < entries.size() && entries[start].source)
        out.boundary_entry_id = entries[start].source->id;
    if (req < entries.size() && entries[req].source)
        out.required_entry_id = entries[req].source->id;
    for (std::size_t i = 0; i < entries.size(); ++i)
        for (const auto& m : entries[i].messages)
        {
            const auto n = static_cast<std::int64_t>(counter.count(*m));
            out.input_tokens += n;
            out.required_tokens += i >= req ? n : 0;
        }
    return out;
}

result<void> hold_cut_before_required(std::span<const projected_entry> entries, std::size_t start, std::size_t end,
                                      const required_policy& policy, compat_mode mode, cut_point_result& r,
                                      diagnostics& diag)
{
    const auto req = first_required(entries, start, end, policy);
    if (!req || *req >= r.first_kept_index)
        return {};
    const auto cuts = allowed_cut_points(entries, start, *req + 1, mode);
    const auto latest = std::find_if(cuts.rbegin(), cuts.rend(), [&](std::size_t c) { return c > start; });
    if (latest == cuts.rend())
    {
        diag.field = entries[*req].source->id;
        diag.message = "required entry " + entries[*req].source->id +
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

}  // namespace agentctx::compaction
