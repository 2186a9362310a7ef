// Carried-entry checks: bounds, covered ids, and byte-for-byte equality up to redaction markers.
#include <agentctx/compaction/carried_checks.hpp>

#include <agentctx/compaction/json_text.hpp>
#include <agentctx/compaction/limits.hpp>

#include <unordered_map>
#include <unordered_set>

namespace agentctx::compaction {

namespace {

constexpr std::string_view marker_open = "[REDACTED:";

// `carried` read as literal text with wildcards (each marker: one or more bytes). A marker-free
// string must be equal; otherwise the literals must appear in order, the first at the start and
// the last at the end. Leftmost matching of the middle literals is exact for such patterns.
bool string_matches(std::string_view carried, std::string_view covered)
{
    if (carried.find(marker_open) == std::string_view::npos)
        return carried == covered;
    std::vector<std::string_view> literals;
    std::size_t pos = 0;
    while (true)
    {
        const auto m = carried.find(marker_open, pos);
        const auto end = m == std::string_view::npos ? std::string_view::npos : carried.find(']', m);
        if (m == std::string_view::npos || end == std::string_view::npos)
        {
            literals.push_back(carried.substr(pos));
            break;
        }
        literals.push_back(carried.substr(pos, m - pos));
        pos = end + 1;
    }
    const std::string_view first = literals.front(), last = literals.back();
    if (!covered.starts_with(first) || covered.size() < first.size() + last.size() + 1 ||
        !covered.ends_with(last))
        return false;
    std::size_t at = first.size();
    const std::size_t stop = covered.size() - last.size();
    for (std::size_t k = 1; k + 1 < literals.size(); ++k)
    {
        const auto found = covered.substr(0, stop).find(literals[k], at + 1);  // the marker hides >= 1 byte
        if (found == std::string_view::npos)
            return false;
        at = found + literals[k].size();
    }
    return at < stop;  // the last marker hides >= 1 byte too
}

}  // namespace

bool matches_covered(const boost::json::value& carried, const boost::json::value& covered)
{
    if (carried.kind() != covered.kind())
        return carried.is_number() && covered.is_number() && stringify(carried) == stringify(covered);
    if (const auto* s = carried.if_string())
        return string_matches(*s, covered.get_string());
    if (const auto* a = carried.if_array())
    {
        const auto& b = covered.get_array();
        if (a->size() != b.size())
            return false;
        for (std::size_t i = 0; i < a->size(); ++i)
            if (!matches_covered((*a)[i], b[i]))
                return false;
        return true;
    }
    if (const auto* o = carried.if_object())
    {
        const auto& b = covered.get_object();
        if (o->size() != b.size())
            return false;
        for (auto x = o->begin(), y = b.begin(); x != o->end(); ++x, ++y)
            if (x->key() != y->key() || !matches_covered(x->value(), y->value()))
                return false;
        return true;
    }
    return stringify(carried) == stringify(covered);
}

std::string check_carried(const boost::json::array& pinned, const covered_prefix& covered)
{
    if (pinned.size() > max_carried_entries)
        return std::to_string(pinned.size()) + " carried entries, over the bound of " +
               std::to_string(max_carried_entries);
    std::size_t bytes = 0;
    for (const auto& v : pinned)
        if ((bytes += stringify(v).size()) > max_carried_bytes)
            return "the carried entries are over the bound of " + std::to_string(max_carried_bytes) +
                   " bytes";
    std::unordered_map<std::string_view, std::size_t> position;
    position.reserve(covered.size);
    for (std::size_t k = 0; k < covered.size; ++k)
        position.emplace(covered.id_at(k), k);
    std::unordered_set<std::string_view> seen;
    for (std::size_t i = 0; i < pinned.size(); ++i)
    {
        const auto* o = pinned[i].if_object();
        const auto* id = o ? o->if_contains("id") : nullptr;
        if (!id || !id->is_string())
            return "carried entry " + std::to_string(i) + " has no string id";
        const std::string_view name = id->get_string();
        const auto it = position.find(name);
        if (it == position.end())
            return "carried entry '" + std::string(name) + "' is not a covered entry";
        if (!seen.insert(name).second)
            return "carried entry '" + std::string(name) + "' is carried twice";
        diagnostics diag;
        auto e = covered.entry_at(it->second);
        if (!e)
            return "covered entry '" + std::string(name) + "' cannot be read: " + diag.message;
        if (!matches_covered(pinned[i], boost::json::value((*e)->raw)))
            return "carried entry '" + std::string(name) + "' differs from the covered entry";
    }
    return {};
}

}  // namespace agentctx::compaction
