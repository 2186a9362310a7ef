// prepare_compaction: range after the previous compaction, cut, summarized/prefix/kept split, file ops.
#include <agentctx/compaction/prepare.hpp>

namespace agentctx::compaction {

namespace {

std::optional<std::size_t> last_compaction(std::span<const entry_ptr> path)
{
    for (std::size_t i = path.size(); i-- > 0;)
        if (path[i]->type == entry_type::compaction)
            return i;
    return std::nullopt;
}

// Start of the planned range (0.73.1): the previous compaction's kept entry, else the entry after it.
std::size_t boundary_start_of(std::span<const entry_ptr> path, std::optional<std::size_t> prev)
{
    if (!prev)
        return 0;
    const std::string& kept = path[*prev]->first_kept_entry_id;
    for (std::size_t i = 0; i < *prev; ++i)
        if (path[i]->id == kept)
            return i;
    return *prev + 1;
}

void collect(std::span<const entry_ptr> path, std::size_t from, std::size_t to, std::vector<context_message>& out)
{
    for (std::size_t i = from; i < to; ++i)
        if (auto m = message_of_entry(*path[i], true))  // empty branch summaries too (§6.9)
            out.push_back({std::move(m), path[i]->id});
}

}  // namespace

result<compaction_preparation> prepare_compaction(
    std::span<const entry_ptr> path,
    const compaction_settings& settings,
    const plan_options& opts,
    diagnostics& diag
)
{
    const token_counter& counter = opts.counter ? *opts.counter : default_token_counter();
    const bool pi = opts.mode == compat_mode::pi;
    if (path.empty())
    {
        diag.message = "the session has no entries";
        return errc::nothing_to_compact;
    }
    if (path.back()->type == entry_type::compaction)
    {
        diag.message = "the last entry is already a compaction";
        return errc::already_compacted;
    }
    compaction_preparation p;
    const auto prev = last_compaction(path);
    p.boundary_start = boundary_start_of(path, prev);
    if (prev)
        p.previous_summary = path[*prev]->summary;
    const std::size_t end = path.size();

    if (!pi)
    {
        const auto issues = validate_transcript(path, p.boundary_start, end);
        if (!issues.empty())
        {
            diag.message = "the transcript's tool calls and results do not pair up:";
            for (const auto& is : issues)
                diag.message += std::string(" ") + to_string(is.kind) + " (entry " + is.entry_id + ", call " +
                                is.tool_call_id + ");";
            return errc::transcript_invalid;
        }
    }

    const session_context ctx = build_session_context(path);
    p.tokens_before =
        estimate_context_tokens(ctx.messages, counter, pi ? std::nullopt : latest_compaction_time(ctx)).tokens;

    auto cut = find_cut_point(path, p.boundary_start, end, settings.keep_recent_tokens, opts.mode, counter);
    if (!cut)
    {
        diag.message = "no cut point in the range keeps tool calls with their results";
        return cut.error();
    }
    p.first_kept_index = cut->first_kept_index;
    p.first_kept_entry_id = path[p.first_kept_index]->id;
    p.is_split_turn = cut->is_split_turn;
    p.turn_start_index = cut->turn_start_index;
    p.crossing_index = cut->crossing_index;

    const std::size_t history_end = p.is_split_turn ? *p.turn_start_index : p.first_kept_index;
    collect(path, p.boundary_start, history_end, p.messages_to_summarize);
    if (p.is_split_turn)
        collect(path, *p.turn_start_index, p.first_kept_index, p.turn_prefix_messages);

    if (prev && !path[*prev]->from_hook)
        seed_file_ops(path[*prev]->details, p.file_ops);
    for (const auto& m : p.messages_to_summarize)
        extract_file_ops(*m.msg, p.file_ops);
    for (const auto& m : p.turn_prefix_messages)
        extract_file_ops(*m.msg, p.file_ops);

    if (!pi && p.messages_to_summarize.empty() && p.turn_prefix_messages.empty())
    {
        diag.message = "nothing lies before the cut (keepRecentTokens " + std::to_string(settings.keep_recent_tokens) +
                       " keeps the whole range)";
        return errc::nothing_to_compact;
    }
    return p;
}

result<planning_path> load_planning_path(const session_log& log, diagnostics& diag)
{
    const auto indices = log.active_path();
    planning_path pp;
    pp.entries.reserve(indices.size());
    // Find the previous compaction and its kept entry from the index alone.
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
        pp.needed_from = *prev;
        const std::string& kept = log.meta(indices[*prev]).first_kept_entry_id;
        for (std::size_t k = 0; k < *prev; ++k)
            if (log.meta(indices[k]).id == kept)
            {
                pp.needed_from = k;
                break;
            }
    }
    for (std::size_t k = 0; k < indices.size(); ++k)
    {
        if (k >= pp.needed_from)
        {
            auto e = log.get(indices[k], diag);
            if (!e)
                return e.error();
            pp.entries.push_back(std::move(*e));
            continue;
        }
        const entry_meta& m = log.meta(indices[k]);
        auto stub = std::make_shared<entry>();
        stub->type = m.type;
        stub->id = m.id;
        if (m.parent >= 0)
            stub->parent_id = log.meta(static_cast<std::size_t>(m.parent)).id;
        stub->first_kept_entry_id = m.first_kept_entry_id;
        // Enough for projection to track the model and thinking level across stand-ins.
        stub->thinking_level = m.thinking_level;
        if (m.type == entry_type::model_change)
        {
            stub->provider = m.provider;
            stub->model_id = m.model;
        }
        else if (m.type == entry_type::message && m.message_role == role::assistant)
        {
            auto msg = std::make_shared<message>();
            msg->role = role::assistant;
            msg->role_name = "assistant";
            msg->provider = m.provider;
            msg->model = m.model;
            stub->message = std::move(msg);
        }
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
    auto pp = load_planning_path(log, diag);
    if (!pp)
        return pp.error();
    return prepare_compaction(pp->entries, settings, opts, diag);
}

}  // namespace agentctx::compaction
