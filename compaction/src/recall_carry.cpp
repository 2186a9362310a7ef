// The verbatim rules part of a new checkpoint without the rules its span revoked.
#include <agentctx/compaction/recall_carry.hpp>

#include <algorithm>
#include <vector>

namespace agentctx::compaction {

std::size_t drop_revoked_rules(std::string& summary, std::span<const recall_probe> probes)
{
    std::vector<std::string> revoked;
    for (const auto& p : probes)
        if (p.kind == probe_kind::rule && !p.overrides.empty())
            revoked.push_back("- " + p.overrides);
    const auto heading = summary.find(verbatim_rules_heading);
    if (revoked.empty() || heading == std::string::npos || (heading > 0 && summary[heading - 1] != '\n'))
        return 0;
    auto end = summary.find("\n## ", heading + verbatim_rules_heading.size());
    if (end == std::string::npos)
        end = summary.size();
    std::size_t removed = 0;
    for (std::size_t pos = summary.find('\n', heading); pos != std::string::npos && pos < end;)
    {
        const auto next = summary.find('\n', pos + 1);
        const auto line_end = std::min(next == std::string::npos ? summary.size() : next, end);
        const std::string_view line(summary.data() + pos + 1, line_end - pos - 1);
        if (std::find(revoked.begin(), revoked.end(), line) != revoked.end())
        {
            summary.erase(pos, line_end - pos);  // the line with the `\n` before it
            end -= line_end - pos;
            ++removed;
            continue;
        }
        pos = next;
    }
    return removed;
}

}  // namespace agentctx::compaction
