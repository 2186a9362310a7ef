// Recorded compactions scored against the probes of the spans they covered (`agentctx probe`).
#include <agentctx/compaction/recall_score.hpp>

#include <agentctx/compaction/session_log.hpp>

namespace agentctx::compaction {

namespace {

// The messages a compaction at path position `at` covered: the context just before it, from after
// the previous summary up to its first kept entry (all of it when that entry is not in the context).
std::vector<context_message> covered_span(std::span<const entry_ptr> path, std::size_t at, const entry& c)
{
    const auto ctx = build_session_context(path.first(at));
    std::vector<context_message> out;
    for (const auto& m : ctx.messages)
    {
        if (m.entry_id == c.first_kept_entry_id)
            break;
        if (m.msg && m.msg->role != role::compaction_summary)
            out.push_back(m);
    }
    return out;
}

}  // namespace

result<std::vector<compaction_recall>> score_recorded_compactions(
    const session_log& log, diagnostics& diag, const probe_limits& limits
)
{
    auto read = read_active_path(log, diag);
    if (!read)
        return read.error();
    const std::vector<entry_ptr>& path = *read;
    std::vector<compaction_recall> out;
    const entry* previous = nullptr;
    for (std::size_t i = 0; i < path.size(); ++i)
    {
        const auto& c = *path[i];
        if (c.type != entry_type::compaction)
            continue;
        const auto carried =
            previous ? carried_rules(previous->details, previous->summary) : std::vector<std::string>{};
        compaction_recall r;
        r.entry_id = c.id;
        r.probes = extract_probes(covered_span(path, i, c), carried, limits);
        const auto missing = missing_probes(r.probes, c.summary, limits.min_coverage);
        for (const auto& p : r.probes)
            r.kept.push_back(std::find(missing.begin(), missing.end(), p) == missing.end());
        out.push_back(std::move(r));
        previous = &c;
    }
    return out;
}

}  // namespace agentctx::compaction
