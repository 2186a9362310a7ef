// A before_compact hook's firstKeptEntryId, checked against the cut-point rules the plan itself follows.
#include "compaction_run.hpp"

#include <agentctx/compaction/cut_point.hpp>
#include <agentctx/compaction/jobs.hpp>
#include <agentctx/compaction/projection.hpp>
#include <agentctx/compaction/required.hpp>
#include <agentctx/runtime/error.hpp>

#include <algorithm>

namespace agentctx::runtime::detail {

using namespace compaction;

namespace {

// Why the cut at projected entry `i` is not one the mode allows (it is not in the allowed list).
std::string why_not_allowed(const projected_entry& p)
{
    const auto& m = *p.messages.front();
    if (m.role == role::tool_result)
        return "is a tool result: its call would be summarized away without it";
    if (!is_valid_cut_point(p))
        return "is not a cut point (a '" + p.source->type_name + "' entry)";
    return "lies inside a tool round: the round's calls and results would be split";
}

}  // namespace

compaction_run::step<void> compaction_run::check_hook_cut(const plan& p, const std::string& first_kept)
{
    // Pi 1.6 takes a hook's cut as it is: `--compat pi` keeps that. The plan's own cut is valid.
    if (cx_.config().compat == compat_mode::pi || first_kept == p.prep.first_kept_entry_id)
        return {};
    const auto refuse = [&first_kept](const std::string& why) {
        return failure{
            make_error_code(errc::hook_invalid_cut),
            "a before_compact hook's firstKeptEntryId '" + first_kept + "' " + why,
            true};
    };
    const auto ctx = build_session_context(p.path);
    const auto& e = ctx.entries;
    const auto start = p.prep.boundary_projected;
    std::optional<std::size_t> k;
    for (std::size_t i = 0; i < e.size() && !k; ++i)
        if (e[i].source->id == first_kept)
            k = i;
    if (!k || *k < start)
    {
        const bool on_path = std::any_of(p.path.begin(), p.path.end(), [&](const entry_ptr& x) {
            return x->id == first_kept;
        });
        return refuse(
            on_path ? "lies before the range this compaction may summarize (the previous compaction's kept "
                      "part starts later)"
                    : "is not an entry of the active path"
        );
    }
    // The cut it stands for: itself, or the next entry the context sees (the plan's own cut
    // looks back over context-invisible entries the same way).
    std::size_t chosen = *k;
    while (chosen < e.size() && e[chosen].messages.empty())
        ++chosen;
    if (chosen == e.size())
        return refuse("keeps no message");
    const auto allowed = allowed_cut_points(e, start, e.size(), cx_.config().compat);
    if (std::find(allowed.begin(), allowed.end(), chosen) == allowed.end())
        return refuse(why_not_allowed(e[chosen]));
    // Required entries hold the cut (hold_cut_before_required): none may be summarized.
    if (!cx_.config().required.empty())
        if (const auto r = first_required(e, start, e.size(), cx_.config().required); r && *k > *r)
            return refuse("lies past required entry '" + e[*r].source->id + "', which is never summarized");
    // Pins the plan keeps are not among those this compaction carries: cutting past one would lose it.
    for (auto i = std::max(start, p.prep.first_kept_projected); i < *k; ++i)
        if (!e[i].messages.empty() && cx_.config().pins.pins(*e[i].source))
            return refuse(
                "lies past pinned entry '" + e[i].source->id + "', which this compaction would not carry"
            );
    // So are the launch exchanges of running jobs the plan keeps (session_config::jobs).
    for (auto i = std::max(start, p.prep.first_kept_projected); i < *k; ++i)
        if (!e[i].messages.empty() && in_running_job(p.prep.running_jobs, e[i].source->id))
            return refuse(
                "lies past entry '" + e[i].source->id +
                "' of a running job's launch, which this compaction would not carry"
            );
    return {};
}

}  // namespace agentctx::runtime::detail
