// prepare_compaction (Pi 1.6 delta §6): projected range, cut, summarized/prefix/kept split, file ops.
#include <agentctx/compaction/prepare.hpp>

#include <set>

namespace agentctx::compaction {

namespace {

// Delta §6 step 9: projected messages without system messages; compactions contribute nothing,
// nor do pinned entries (they are kept verbatim).
void collect(std::span<const projected_entry> e, std::size_t from, std::size_t to, const std::set<std::string>& pinned,
             std::vector<context_message>& out)
{
    for (std::size_t i = from; i < to; ++i)
    {
        if (e[i].source->type == entry_type::compaction || pinned.contains(e[i].source->id))
            continue;
        for (const auto& m : e[i].messages)
            if (m->role != role::system)
                out.push_back({m, e[i].source->id});
    }
}

// The pinned entries before the cut: the previous compaction's, then the range's newly pinned
// (visible) ones. Returns their ids.
std::set<std::string> collect_pinned(std::span<const projected_entry> e, std::optional<std::size_t> prev,
                                     std::size_t from, std::size_t to, const pin_policy* pins, boost::json::array& out)
{
    std::set<std::string> ids;
    if (prev)
        if (const auto* carried = pinned_of(*e[*prev].source))
            for (const auto& v : *carried)
            {
                const auto* id = v.is_object() ? v.get_object().if_contains("id") : nullptr;
                if (id && id->is_string() && ids.insert(std::string(id->get_string())).second)
                    out.push_back(v);
            }
    if (!pins || pins->empty())
        return ids;
    for (std::size_t i = from; i < to; ++i)
    {
        const entry& src = *e[i].source;
        if (!e[i].messages.empty() && pins->pins(src) && ids.insert(src.id).second)
            out.push_back(src.raw);
    }
    return ids;
}

std::string transcript_message(const std::vector<transcript_issue>& issues)
{
    std::string msg = "the transcript's tool calls and results do not pair up:";
    for (const auto& is : issues)
        msg += std::string(" ") + to_string(is.kind) + " (entry " + is.entry_id + ", call " + is.tool_call_id + ");";
    return msg;
}

}  // namespace

namespace {

// The checks that come before projecting: `last` is the type of the path's last entry.
result<void> check_path(std::size_t path_size, entry_type last, diagnostics& diag)
{
    if (path_size == 0)
    {
        diag.message = "the session has no entries";
        return errc::nothing_to_compact;
    }
    if (last == entry_type::compaction)
    {
        diag.message = "the last entry is already a compaction";
        return errc::already_compacted;
    }
    return {};
}

// The plan over the projection of a path of `path_size` entries (the same whichever way the
// projection was built: only projected entries and their messages are read).
result<compaction_preparation> prepare_projected(
    const session_context& ctx,
    std::size_t path_size,
    const compaction_settings& settings,
    const plan_options& opts,
    diagnostics& diag
)
{
    const token_counter& counter = opts.counter ? *opts.counter : default_token_counter();
    const bool pi = opts.mode == compat_mode::pi;
    const auto& e = ctx.entries;
    compaction_preparation p;

    // The previous compaction is the first projected entry when it contributes messages.
    std::optional<std::size_t> prev;
    for (std::size_t i = 0; i < e.size() && !prev; ++i)
        if (e[i].source->type == entry_type::compaction && !e[i].messages.empty())
            prev = i;
    p.boundary_projected = prev ? *prev + 1 : 0;
    if (prev)
        p.previous_summary = strip_pinned_block(e[*prev].source->summary);
    const std::size_t end = e.size();
    p.boundary_start = p.boundary_projected < end ? e[p.boundary_projected].path_index : path_size;

    if (!pi)
    {
        const auto issues = validate_transcript(std::span<const projected_entry>(e), p.boundary_projected, end);
        if (!issues.empty())
        {
            diag.message = transcript_message(issues);
            return errc::transcript_invalid;
        }
    }

    p.tokens_before = estimate_projected_context_tokens(ctx, counter).tokens;

    auto cut = find_cut_point(e, p.boundary_projected, end, settings.keep_recent_tokens, opts.mode, counter);
    if (!cut)
    {
        diag.message = "no cut point in the range keeps tool calls with their results";
        return cut.error();
    }
    p.first_kept_projected = cut->first_kept_index;
    if (p.first_kept_projected >= end)
    {
        diag.message = "the range after the previous compaction is empty";
        return errc::nothing_to_compact;
    }
    p.first_kept_index = e[p.first_kept_projected].path_index;
    p.first_kept_entry_id = e[p.first_kept_projected].source->id;
    p.is_split_turn = cut->is_split_turn;
    p.turn_start_index = cut->turn_start_index;
    p.crossing_index = cut->crossing_index;
    p.advanced_past_omitted_attempt = cut->advanced_past_omitted_attempt;

    const auto pinned = collect_pinned(e, prev, p.boundary_projected, p.first_kept_projected, opts.pins, p.pinned);
    const std::size_t history_end = p.is_split_turn ? *p.turn_start_index : p.first_kept_projected;
    collect(e, p.boundary_projected, history_end, pinned, p.messages_to_summarize);
    if (p.is_split_turn)
        collect(e, *p.turn_start_index, p.first_kept_projected, pinned, p.turn_prefix_messages);

    if (p.messages_to_summarize.empty() && p.turn_prefix_messages.empty())
    {
        // Pi 1.6 returns undefined here (#4811): "Nothing to compact (session too small)".
        diag.message = "nothing lies before the cut (keepRecentTokens " + std::to_string(settings.keep_recent_tokens) +
                       " keeps the whole range)";
        return errc::nothing_to_compact;
    }

    if (prev && !e[*prev].source->from_hook)
        seed_file_ops(e[*prev].source->details, p.file_ops);
    for (const auto& m : p.messages_to_summarize)
        extract_file_ops(*m.msg, p.file_ops);
    for (const auto& m : p.turn_prefix_messages)
        extract_file_ops(*m.msg, p.file_ops);
    return p;
}

}  // namespace

result<compaction_preparation> prepare_compaction(
    std::span<const entry_ptr> path,
    const compaction_settings& settings,
    const plan_options& opts,
    diagnostics& diag
)
{
    if (auto ok = check_path(path.size(), path.empty() ? entry_type::unknown : path.back()->type, diag); !ok)
        return ok.error();
    return prepare_projected(build_session_context(path), path.size(), settings, opts, diag);
}

result<planning_path> load_planning_path(const session_log& log, diagnostics& diag)
{
    const auto indices = log.active_path();
    planning_path pp;
    pp.entries.reserve(indices.size());
    // The previous compaction and its kept entry. The compaction itself is materialized: on a
    // v1/v2 file only the migrated entry knows its firstKeptEntryId.
    std::optional<std::size_t> prev;
    for (std::size_t k = indices.size(); k-- > 0;)
        if (log.meta(indices[k]).type == entry_type::compaction)
        {
            prev = k;
            break;
        }
    pp.needed_from = 0;
    if (prev)
    {
        auto c = log.get(indices[*prev], diag);
        if (!c)
            return c.error();
        pp.needed_from = *prev;
        for (std::size_t k = 0; k < *prev; ++k)
            if (log.meta(indices[k]).id == (*c)->first_kept_entry_id)
            {
                pp.needed_from = k;
                break;
            }
    }
    for (std::size_t k = 0; k < indices.size(); ++k)
    {
        const entry_meta& m = log.meta(indices[k]);
        // Context edits are few and may target entries anywhere: always materialize them.
        if (k >= pp.needed_from || m.type == entry_type::context_edit)
        {
            auto e = log.get(indices[k], diag);
            if (!e)
                return e.error();
            pp.entries.push_back(std::move(*e));
            continue;
        }
        auto stub = make_stand_in(m);
        if (m.parent >= 0)
            stub->parent_id = log.meta(static_cast<std::size_t>(m.parent)).id;
        pp.entries.push_back(std::move(stub));
    }
    return pp;
}

result<compaction_preparation> prepare_compaction(
    const session_log& log,
    const compaction_settings& settings,
    const plan_options& opts,
    diagnostics& diag
)
{
    // The index-backed projection materializes only the selected entries (the previous
    // compaction, its kept region and what follows), not a stand-in per path entry.
    const auto indices = log.active_path();
    if (auto ok = check_path(indices.size(), indices.empty() ? entry_type::unknown : log.meta(indices.back()).type, diag);
        !ok)
        return ok.error();
    auto ctx = build_session_context(log, diag);
    if (!ctx)
        return ctx.error();
    return prepare_projected(*ctx, indices.size(), settings, opts, diag);
}

}  // namespace agentctx::compaction
