// prepare_compaction (Pi 1.6): projected range, cut, summarized/prefix/kept split, file ops.
#include <agentctx/compaction/prepare.hpp>

#include <agentctx/compaction/summary_prompt.hpp>

#include <algorithm>
#include <set>

namespace agentctx::compaction {

namespace {

// Pi 1.6: projected messages without system messages; compactions contribute nothing,
// nor do pinned entries (they are kept verbatim).
void collect(
    std::span<const projected_entry> e,
    std::size_t from,
    std::size_t to,
    const std::set<std::string>& pinned,
    std::vector<context_message>& out
)
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

bool is_user_prompt(const projected_entry& p)
{
    return p.source->type == entry_type::message && p.source->message &&
           p.source->message->role == role::user && !p.messages.empty();
}

// What stays verbatim beside the summary. `excluded` is never summarized (pinned entries, older
// reminder snapshots, the current instruction); `now_history` is a previously carried instruction
// that a newer prompt has replaced: it is summarized with the range (before it).
struct verbatim_plan
{
    std::set<std::string> excluded;
    std::vector<context_message> now_history;
};

// The previous compaction's carried entries, then the range's pinned ones and (agentctx) the
// current instruction when the cut passes it, in path order, into `out`.
// `keep_instruction`: agentctx carries the latest prompt when the cut passes it (see prepare.hpp).
verbatim_plan collect_verbatim(
    std::span<const projected_entry> e,
    std::optional<std::size_t> prev,
    std::size_t from,
    std::size_t to,
    const pin_policy* pins,
    const std::vector<running_job>& jobs,
    bool keep_instruction,
    std::int64_t max_instruction,
    const token_counter& counter,
    boost::json::array& out
)
{
    verbatim_plan plan;
    const auto pinned = [&](const entry& src) { return pins && pins->pins(src); };
    const auto running = [&](const entry& src) { return in_running_job(jobs, src.id); };
    std::optional<std::size_t> last_prompt;
    for (std::size_t i = from; i < e.size(); ++i)
        if (is_user_prompt(e[i]))
            last_prompt = i;
    // A prompt larger than the kept budget is too large to keep: it is summarized as before.
    const bool carry_prompt =
        keep_instruction && last_prompt && last_prompt < to &&
        static_cast<std::int64_t>(counter.count(*e[*last_prompt].messages.front())) <= max_instruction;
    if (prev)
        if (const auto* carried = pinned_of(*e[*prev].source))
            for (auto& c : carried_entries(*carried))
            {
                // A carried job launch stays carried while the job runs; once it completed, it
                // is ordinary history, summarized with the range (before it).
                const bool exchange = c.msg->role == role::assistant || c.msg->role == role::tool_result;
                if (exchange && !running(c.source))
                {
                    plan.now_history.push_back({c.msg, c.source.id});
                    continue;
                }
                const bool instruction =
                    c.source.type == entry_type::message && !exchange && !pinned(c.source);
                if (instruction && last_prompt)
                    plan.now_history.push_back({c.msg, c.source.id});
                else if (plan.excluded.insert(c.source.id).second)
                    out.push_back(*c.raw);
            }
    for (std::size_t i = from; i < to; ++i)
    {
        const entry& src = *e[i].source;
        const bool instruction = carry_prompt && last_prompt == i;
        if (!e[i].messages.empty() && (pinned(src) || instruction || running(src)) &&
            plan.excluded.insert(src.id).second)
            out.push_back(src.raw);
    }
    if (!pins || pins->snapshot_types.empty())
        return plan;
    // Reminder snapshots replace each other: only the latest stays, and
    // none when a newer one is already in the kept range. The older ones remain in history.
    std::set<std::string> newer;
    for (std::size_t i = to; i < e.size(); ++i)
        if (e[i].source->type == entry_type::custom_message && pinned(*e[i].source))
            newer.insert(e[i].source->custom_type);
    for (std::size_t k = out.size(); k-- > 0;)
    {
        const auto& o = out[k].as_object();
        const auto* type = o.if_contains("type");
        const auto* custom = o.if_contains("customType");
        const auto* id = o.if_contains("id");
        if (!type || *type != "custom_message" || !custom || !custom->is_string() || !id || !id->is_string())
            continue;
        const std::string ct(custom->get_string());
        const bool by_type = std::find(pins->snapshot_types.begin(), pins->snapshot_types.end(), ct) !=
                             pins->snapshot_types.end();
        const bool by_id = std::find(pins->ids.begin(), pins->ids.end(), id->get_string()) != pins->ids.end();
        if (by_type && !by_id && !newer.insert(ct).second)
            out.erase(out.begin() + static_cast<std::ptrdiff_t>(k));
    }
    return plan;
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
// The range after the previous compaction; returns that compaction's index when it contributes.
std::optional<std::size_t> place_range(
    const session_context& ctx, std::size_t path_size, compaction_preparation& p
)
{
    const auto& e = ctx.entries;
    // The previous compaction is the first projected entry when it contributes messages.
    std::optional<std::size_t> prev;
    for (std::size_t i = 0; i < e.size() && !prev; ++i)
        if (e[i].source->type == entry_type::compaction && !e[i].messages.empty())
            prev = i;
    p.boundary_projected = prev ? *prev + 1 : 0;
    if (prev)
        p.previous_summary = strip_running_jobs_block(strip_pinned_block(e[*prev].source->summary));
    p.boundary_start = p.boundary_projected < e.size() ? e[p.boundary_projected].path_index : path_size;
    return prev;
}

// The chosen cut's fields in the preparation.
result<void> record_cut(
    const std::vector<projected_entry>& e,
    const cut_point_result& cut,
    compaction_preparation& p,
    diagnostics& diag
)
{
    p.first_kept_projected = cut.first_kept_index;
    if (p.first_kept_projected >= e.size())
    {
        diag.message = "the range after the previous compaction is empty";
        return errc::nothing_to_compact;
    }
    p.first_kept_index = e[p.first_kept_projected].path_index;
    p.first_kept_entry_id = e[p.first_kept_projected].source->id;
    p.is_split_turn = cut.is_split_turn;
    p.turn_start_index = cut.turn_start_index;
    p.crossing_index = cut.crossing_index;
    p.advanced_past_omitted_attempt = cut.advanced_past_omitted_attempt;
    return {};
}

// plan_options::keep_from: the cut exactly there, when the rules allow a cut there at all.
result<void> place_exact_cut(
    const std::vector<projected_entry>& e,
    const plan_options& opts,
    compaction_preparation& p,
    diagnostics& diag
)
{
    const std::size_t start = p.boundary_projected;
    const std::size_t end = e.size();
    const auto refuse = [&](const std::string& why) -> result<void> {
        diag.message = "entry '" + *opts.keep_from + "' " + why;
        return errc::boundary_unavailable;
    };
    std::optional<std::size_t> k;
    for (std::size_t i = start; i < end && !k; ++i)
        if (e[i].source->id == *opts.keep_from)
            k = i;
    if (!k)
        return refuse("is not an entry of the range after the previous compaction's kept part");
    std::size_t chosen = *k;
    while (chosen < end && e[chosen].messages.empty())
        ++chosen;  // the next entry the context sees, as a hook's cut
    if (chosen == end)
        return refuse("keeps no message");
    const auto allowed = allowed_cut_points(e, start, end, opts.mode);
    if (std::find(allowed.begin(), allowed.end(), chosen) == allowed.end())
        return refuse(
            e[chosen].messages.front()->role == role::tool_result
                ? "is a tool result: its call would be summarized without it"
                : "is not a cut point, or lies inside a tool round"
        );
    cut_point_result cut;
    settle_cut(e, start, chosen, opts.mode == compat_mode::pi, cut);
    if (opts.required)
    {
        auto held = cut;
        diagnostics ignored;
        if (!hold_cut_before_required(e, start, end, *opts.required, opts.mode, held, ignored) ||
            held.first_kept_index != cut.first_kept_index)
            return refuse("lies past a required entry, which is never summarized");
    }
    return record_cut(e, cut, p, diag);
}

// The cut: Pi 1.6's, then (agentctx) the recent exchanges of the current turn kept.
result<void> place_cut(
    const std::vector<projected_entry>& e,
    const compaction_settings& settings,
    const plan_options& opts,
    const token_counter& counter,
    compaction_preparation& p,
    diagnostics& diag
)
{
    if (opts.keep_from)
        return place_exact_cut(e, opts, p, diag);
    const std::size_t end = e.size();
    auto cut = find_cut_point(e, p.boundary_projected, end, settings.keep_recent_tokens, opts.mode, counter);
    if (!cut)
    {
        diag.message = "no cut point in the range keeps tool calls with their results";
        return cut.error();
    }
    if (opts.mode != compat_mode::pi)
    {
        const std::int64_t bound =
            opts.context_window > 0
                ? std::max<std::int64_t>(1, (opts.context_window - settings.reserve_tokens) / 2)
                : 0;
        *cut = keep_recent_exchanges(
            e, p.boundary_projected, end, *cut, settings.keep_recent_exchanges, bound, counter
        );
        if (opts.whole_turn_tokens > 0)
            *cut = keep_turn_whole(e, p.boundary_projected, *cut, opts.whole_turn_tokens, counter);
    }
    if (opts.required)
        if (auto held =
                hold_cut_before_required(e, p.boundary_projected, end, *opts.required, opts.mode, *cut, diag);
            !held)
        {
            if (opts.shortfall)
                *opts.shortfall = measure_shortfall(e, p.boundary_projected, *opts.required, counter);
            return held.error();
        }
    if (opts.mode != compat_mode::pi && opts.context_window > 0 && opts.reserve_summary_room)
    {
        // Pi's summary cap, at most half the allowance: a window whose reserve leaves less room
        // than the cap still compacts when the summary is short.
        const std::int64_t allowance = opts.context_window - settings.reserve_tokens;
        const std::int64_t summary = std::min<std::int64_t>(
            history_output_cap(settings.reserve_tokens, opts.model_max_tokens), allowance / 2
        );
        if (auto room = reserve_summary_room(
                e,
                p.boundary_projected,
                end,
                opts.required,
                allowance,
                summary,
                counter,
                *cut,
                opts.shortfall,
                diag
            );
            !room)
            return room.error();
    }
    return record_cut(e, *cut, p, diag);
}

// What is summarized, what becomes the split turn's prefix, and what stays verbatim.
void split_messages(
    const std::vector<projected_entry>& e,
    std::optional<std::size_t> prev,
    const compaction_settings& settings,
    const plan_options& opts,
    const token_counter& counter,
    compaction_preparation& p
)
{
    // agentctx keeps the current instruction verbatim, unless the recovery-suffix rule passed
    // the failed attempt that this very prompt produced.
    const bool keep_instruction = opts.mode != compat_mode::pi && !p.advanced_past_omitted_attempt;
    auto verbatim = collect_verbatim(
        e,
        prev,
        p.boundary_projected,
        p.first_kept_projected,
        opts.pins,
        p.running_jobs,
        keep_instruction,
        settings.keep_recent_tokens,
        counter,
        p.pinned
    );
    const std::size_t history_end = p.is_split_turn ? *p.turn_start_index : p.first_kept_projected;
    p.messages_to_summarize = std::move(verbatim.now_history);
    collect(e, p.boundary_projected, history_end, verbatim.excluded, p.messages_to_summarize);
    if (p.is_split_turn)
        collect(e, *p.turn_start_index, p.first_kept_projected, verbatim.excluded, p.turn_prefix_messages);
    if (p.is_split_turn && p.turn_prefix_messages.empty())
    {
        // The turn's prefix was only its prompt, now kept verbatim: an ordinary cut.
        p.is_split_turn = false;
        p.turn_start_index.reset();
    }
}

// The file lists: carried from the previous compaction, then what the summarized part touched.
void gather_file_ops(
    const std::vector<projected_entry>& e, std::optional<std::size_t> prev, compaction_preparation& p
)
{
    if (prev && !e[*prev].source->from_hook)
        seed_file_ops(e[*prev].source->details, p.file_ops);
    for (const auto& m : p.messages_to_summarize)
        extract_file_ops(*m.msg, p.file_ops);
    for (const auto& m : p.turn_prefix_messages)
        extract_file_ops(*m.msg, p.file_ops);
}

result<compaction_preparation> prepare_projected(
    const session_context& ctx,
    std::size_t path_size,
    const compaction_settings& settings,
    const plan_options& opts,
    diagnostics& diag
)
{
    const token_counter& counter = opts.counter ? *opts.counter : default_token_counter();
    const auto& e = ctx.entries;
    compaction_preparation p;
    const auto prev = place_range(ctx, path_size, p);
    // Results that pair with no call, or answer one twice, are reported, never a reason not to
    // compact: a session that holds them (a file written before the server refused them) would
    // otherwise grow into a real overflow. No cut separates a call from its results (the tool
    // rounds), and the wire views leave out a result no call owns.
    if (opts.mode != compat_mode::pi)
        p.transcript_issues =
            validate_transcript(std::span<const projected_entry>(e), p.boundary_projected, e.size());
    p.tokens_before = estimate_projected_context_tokens(ctx, counter).tokens;
    if (opts.mode != compat_mode::pi && opts.jobs)
        p.running_jobs = find_running_jobs(e, *opts.jobs);
    if (auto placed = place_cut(e, settings, opts, counter, p, diag); !placed)
        return placed.error();
    split_messages(e, prev, settings, opts, counter, p);
    if (p.messages_to_summarize.empty() && p.turn_prefix_messages.empty())
    {
        // Pi 1.6 returns undefined here: "Nothing to compact (session too small)".
        diag.message = "nothing lies before the cut (keepRecentTokens " +
                       std::to_string(settings.keep_recent_tokens) + " keeps the whole range)";
        return errc::nothing_to_compact;
    }
    gather_file_ops(e, prev, p);
    if (opts.mode != compat_mode::pi)
        p.file_bounds = file_list_bounds{};
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

namespace {

// prepare_compaction over a log: the active path is checked to be plannable before anything is
// materialized; the context is `active_context`, else built from the log.
result<compaction_preparation> prepare_over_log(
    const session_log& log,
    const session_context* active_context,
    const compaction_settings& settings,
    const plan_options& opts,
    diagnostics& diag
)
{
    const auto indices = log.active_path();
    if (auto ok = check_path(
            indices.size(), indices.empty() ? entry_type::unknown : log.meta(indices.back()).type, diag
        );
        !ok)
        return ok.error();
    if (active_context)
        return prepare_projected(*active_context, indices.size(), settings, opts, diag);
    // The index-backed projection materializes only the selected entries (the previous
    // compaction, its kept region and what follows), not a stand-in per path entry.
    auto ctx = build_session_context(log, diag);
    if (!ctx)
        return ctx.error();
    return prepare_projected(*ctx, indices.size(), settings, opts, diag);
}

}  // namespace

result<compaction_preparation> prepare_compaction(
    const session_log& log, const compaction_settings& settings, const plan_options& opts, diagnostics& diag
)
{
    return prepare_over_log(log, nullptr, settings, opts, diag);
}

result<compaction_preparation> prepare_compaction(
    const session_log& log,
    const session_context& active_context,
    const compaction_settings& settings,
    const plan_options& opts,
    diagnostics& diag
)
{
    return prepare_over_log(log, &active_context, settings, opts, diag);
}

}  // namespace agentctx::compaction
