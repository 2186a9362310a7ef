// Pi 1.6 projection: selected entries, context edits, per-entry messages, system replay.
#include <agentctx/compaction/projection.hpp>

#include <agentctx/compaction/carried_checks.hpp>
#include <agentctx/compaction/json_text.hpp>
#include <agentctx/compaction/pinned.hpp>

#include <algorithm>
#include <functional>
#include <unordered_map>

namespace agentctx::compaction {

std::shared_ptr<const message> message_of_entry(const entry& e, bool keep_empty_branch_summary)
{
    switch (e.type)
    {
    case entry_type::message:
        return e.message;
    case entry_type::custom_message:
    {
        auto m = std::make_shared<message>();
        m->role = role::custom;
        m->role_name = "custom";
        m->custom_type = e.custom_type;
        m->content = e.content;
        m->display = e.display;
        m->peer = peer_name(e.details);
        m->timestamp = parse_iso_timestamp(e.timestamp).value_or(0);
        return m;
    }
    case entry_type::branch_summary:
    {
        if (e.summary.empty() && !keep_empty_branch_summary)
            return nullptr;
        auto m = std::make_shared<message>();
        m->role = role::branch_summary;
        m->role_name = "branchSummary";
        m->summary = e.summary;
        m->from_id = e.from_id;
        m->timestamp = parse_iso_timestamp(e.timestamp).value_or(0);
        return m;
    }
    default:
        return nullptr;
    }
}

std::shared_ptr<const message> compaction_summary_message(const entry& c)
{
    auto m = std::make_shared<message>();
    m->role = role::compaction_summary;
    m->role_name = "compactionSummary";
    // With pins, agentctx shows the pinned entries themselves, not the block carried for Pi.
    m->summary = pinned_of(c) ? strip_pinned_block(c.summary) : c.summary;
    m->tokens_before = c.tokens_before;
    m->timestamp = parse_iso_timestamp(c.timestamp).value_or(0);
    return m;
}

std::vector<std::shared_ptr<const message>> entry_messages(const entry& e)
{
    if (e.type == entry_type::compaction)
    {
        std::vector<std::shared_ptr<const message>> out;
        if (e.system_message)
            out.push_back(e.system_message);
        out.push_back(compaction_summary_message(e));
        // Pinned entries the compaction covers: verbatim, in their order, after the summary.
        for (auto& m : pinned_messages(e))
            out.push_back(std::move(m));
        return out;
    }
    if (auto m = message_of_entry(e))
        return {std::move(m)};
    return {};
}

std::vector<std::shared_ptr<const message>> project_entry(const entry& e, const entry* edit)
{
    auto msgs = entry_messages(e);
    if (!edit)
        return msgs;
    if (!edit->replacement)
        return {};  // omitted, whatever the entry type
    for (auto& m : msgs)
    {
        const role r = m->role;
        if (r != role::user && r != role::assistant && r != role::tool_result && r != role::custom)
            continue;  // bashExecution, summaries and system messages keep their content
        auto copy = std::make_shared<message>(*m);
        copy->content = *edit->replacement;
        if ((r == role::assistant || r == role::tool_result) && copy->content.is_string)
        {
            copy->content.blocks = {text_block{std::move(copy->content.text)}};
            copy->content.text.clear();
            copy->content.is_string = false;
        }
        m = std::move(copy);
    }
    return msgs;
}

namespace {

// contentText of pi-ai: a string as is, text blocks joined with "\n".
std::string replay_text(const content& c)
{
    if (c.is_string)
        return c.text;
    std::string out;
    bool first = true;
    for (const auto& b : c.blocks)
        if (const auto* t = std::get_if<text_block>(&b))
        {
            if (!first)
                out += '\n';
            out += t->text;
            first = false;
        }
    return out;
}

// An ordered map with Pi's patch rule: an existing name keeps its place, a new one goes last.
template <class V>
struct ordered_patch
{
    std::vector<std::pair<std::string, V>> items;

    void set(const std::string& k, V v)
    {
        for (auto& [name, value] : items)
            if (name == k)
            {
                value = std::move(v);
                return;
            }
        items.emplace_back(k, std::move(v));
    }
    void erase(const std::string& k)
    {
        std::erase_if(items, [&](const auto& kv) { return kv.first == k; });
    }
};

template <class Range, class Get>
std::shared_ptr<const message> replay(const Range& messages, Get get)
{
    std::shared_ptr<message> out;
    std::vector<std::string> texts;
    ordered_patch<std::string> sections;
    ordered_patch<boost::json::object> tools;
    for (const auto& item : messages)
    {
        const message& m = get(item);
        if (m.role != role::system)
            continue;
        if (!out)
        {
            out = std::make_shared<message>();
            out->role = role::system;
            out->role_name = "system";
            out->timestamp = m.timestamp;
        }
        if (auto t = replay_text(m.content); !t.empty())
            texts.push_back(std::move(t));
        for (const auto& s : m.sections)
        {
            if (s.value)
                sections.set(s.name, *s.value);
            else
                sections.erase(s.name);
        }
        for (const auto& name : m.tools_removed)
            tools.erase(name);
        if (m.tools_added)
            for (const auto& t : *m.tools_added)
                tools.set(std::string(t.at("name").get_string()), t);
    }
    if (!out)
        return nullptr;
    out->content.is_string = true;
    for (std::size_t i = 0; i < texts.size(); ++i)
        out->content.text += (i ? "\n\n" : "") + texts[i];
    for (auto& [name, value] : sections.items)
        out->sections.push_back({name, std::move(value)});
    out->has_sections = !out->sections.empty();
    if (!tools.items.empty())
    {
        out->tools_added.emplace();
        for (auto& [name, t] : tools.items)
            out->tools_added->push_back(std::move(t));
    }
    return out;
}

}  // namespace

std::shared_ptr<const message> replay_system_messages(std::span<const context_message> messages)
{
    return replay(messages, [](const context_message& c) -> const message& { return *c.msg; });
}

std::shared_ptr<const message> replay_system_messages(std::span<const std::shared_ptr<const message>> messages
)
{
    return replay(messages, [](const std::shared_ptr<const message>& m) -> const message& { return *m; });
}

boost::json::object system_message_json(const message& m)
{
    boost::json::object o;
    o["role"] = "system";
    o["content"] = m.content.is_string ? m.content.text : content_text(m.content);
    if (!m.sections.empty())
    {
        // JavaScript enumerates integer-like keys first: write them first so stringify agrees.
        boost::json::object all;
        for (const auto& s : m.sections)
            all[s.name] = s.value ? boost::json::value(*s.value) : boost::json::value(nullptr);
        boost::json::object sections;
        for (const auto k : js_key_order(all))
            sections[k] = all.at(k);
        o["sections"] = std::move(sections);
    }
    if (m.tools_added && !m.tools_added->empty())
    {
        boost::json::array tools;
        for (const auto& t : *m.tools_added)
            tools.push_back(t);
        o["toolsAdded"] = std::move(tools);
    }
    if (m.timestamp == static_cast<double>(static_cast<std::int64_t>(m.timestamp)))
        o["timestamp"] = static_cast<std::int64_t>(m.timestamp);
    else
        o["timestamp"] = m.timestamp;
    return o;
}

std::optional<boost::json::object> system_checkpoint(
    const session_context& ctx, std::string_view entry_timestamp
)
{
    return system_checkpoint(ctx.system, entry_timestamp);
}

std::optional<boost::json::object> system_checkpoint(
    const std::shared_ptr<const message>& system, std::string_view entry_timestamp
)
{
    if (!system)
        return std::nullopt;
    message m = *system;
    m.timestamp = parse_iso_timestamp(entry_timestamp).value_or(0);
    return system_message_json(m);
}

namespace {

using materialize_fn = std::function<result<entry_ptr>(std::size_t path_pos)>;

// Entries whose content the projection reads; the others are represented by index data.
bool needs_materializing(entry_type t)
{
    return t == entry_type::message || t == entry_type::custom_message || t == entry_type::branch_summary ||
           t == entry_type::compaction || t == entry_type::context_edit;
}

// Where on a path the last of each thing that projection tracks is.
struct path_facts
{
    std::optional<std::size_t> compaction, thinking, model, last_edit_or_compaction;

    // Of one entry, at position `i`; later positions win.
    void see(std::size_t i, entry_type type, bool assistant_message)
    {
        if (type == entry_type::thinking_level_change)
            thinking = i;
        else if (type == entry_type::model_change || assistant_message)
            model = i;
        if (type == entry_type::compaction)
            compaction = i;
        if (type == entry_type::compaction || type == entry_type::context_edit)
            last_edit_or_compaction = i;
    }
};

path_facts facts_of(const std::vector<const entry_meta*>& path)
{
    path_facts f;
    for (std::size_t i = 0; i < path.size(); ++i)
        f.see(
            i, path[i]->type, path[i]->type == entry_type::message && path[i]->message_role == role::assistant
        );
    return f;
}

// The same from the log's packed kinds: a byte per entry instead of an entry_meta.
path_facts facts_of(const session_log& log, const std::vector<std::uint32_t>& indices)
{
    path_facts f;
    for (std::size_t i = 0; i < indices.size(); ++i)
        f.see(i, log.type_of(indices[i]), log.is_assistant_message(indices[i]));
    return f;
}

// Pi 1.6 entry selection and edits over index data; entries are materialized only where content matters.
// `unique_ids`: no id is on the path twice (a log's path), so the compaction's first kept entry
// is searched from the compaction back, not from the root (Pi's order; the same entry then).
// The messages of the projected compaction `c` whose carried entries failed their check: its
// summary whole (the pinned block included, as Pi shows it), without the carried entries.
std::vector<std::shared_ptr<const message>> portable_compaction_messages(const entry& c, const entry* edit)
{
    if (edit && !edit->replacement)
        return {};
    std::vector<std::shared_ptr<const message>> out;
    if (c.system_message)
        out.push_back(c.system_message);
    auto m = std::make_shared<message>(*compaction_summary_message(c));
    m->summary = c.summary;
    out.push_back(std::move(m));
    return out;
}

// Checks the carried entries of the compaction at path position `at`, whose covered prefix is
// path[0, covered_end). Empty when there are none or they pass.
std::string carried_problem(
    const entry& c,
    const std::vector<const entry_meta*>& path,
    std::size_t covered_end,
    const materialize_fn& covered_get
)
{
    const auto* pinned = pinned_of(c);
    if (!pinned || !covered_get)
        return {};
    return check_carried(
        *pinned,
        covered_prefix{
            covered_end, [&](std::size_t k) -> std::string_view { return path[k]->id; }, covered_get}
    );
}

// The positions of the path a projection reads: [C], the kept entries before it (no system
// messages), the rest. `latest` is C materialized; `covered_end` the end of its covered prefix.
struct selected_range
{
    std::vector<std::size_t> positions;
    entry_ptr latest;
    std::size_t covered_end = 0;
};

result<selected_range> select_range(
    const std::vector<const entry_meta*>& path,
    std::optional<std::size_t> compaction,
    bool unique_ids,
    const materialize_fn& get
)
{
    selected_range r;
    r.positions.reserve(path.size());
    std::size_t after = 0;
    if (compaction)
    {
        auto c = get(*compaction);
        if (!c)
            return c.error();
        r.latest = *c;
        r.positions.push_back(*compaction);
        std::size_t begin = *compaction;  // retain-none and dangling ids keep nothing
        for (std::size_t k = 0; k < *compaction; ++k)
        {
            const std::size_t i = unique_ids ? *compaction - 1 - k : k;
            if (path[i]->id == r.latest->first_kept_entry_id)
            {
                begin = i;
                break;
            }
        }
        r.covered_end = begin;
        for (std::size_t i = begin; i < *compaction; ++i)
            if (!(path[i]->type == entry_type::message && path[i]->message_role == role::system))
                r.positions.push_back(i);
        after = *compaction + 1;
    }
    for (std::size_t i = after; i < path.size(); ++i)
        r.positions.push_back(i);
    return r;
}

// The latest context edit per target id.
using edit_map = std::unordered_map<std::string_view, entry_ptr>;

// The selected entries into ctx.entries; the latest edit per target inside the range wins.
result<edit_map> materialize(
    const std::vector<const entry_meta*>& path,
    const selected_range& range,
    std::optional<std::size_t> compaction,
    const materialize_fn& get,
    session_context& ctx
)
{
    ctx.entries.reserve(range.positions.size());
    edit_map edits;
    for (const std::size_t i : range.positions)
    {
        entry_ptr e;
        if (range.latest && i == *compaction)
            e = range.latest;
        else if (needs_materializing(path[i]->type))
        {
            auto r = get(i);
            if (!r)
                return r.error();
            e = std::move(*r);
        }
        else
            e = make_stand_in(*path[i]);
        if (e->type == entry_type::context_edit)
            edits[e->target_id] = e;
        ctx.entries.push_back({std::move(e), i, nullptr, {}});
    }
    return edits;
}

// The messages of each projected entry; an older compaction inside the kept range contributes nothing.
void project_messages(
    const std::vector<const entry_meta*>& path,
    const edit_map& edits,
    std::size_t covered_end,
    const materialize_fn& covered_get,
    session_context& ctx
)
{
    for (std::size_t k = 0; k < ctx.entries.size(); ++k)
    {
        projected_entry& p = ctx.entries[k];
        if (p.source->type == entry_type::compaction && k > 0)
            continue;
        if (const auto it = edits.find(p.source->id); it != edits.end())
            p.edit = it->second;
        std::string problem;
        if (p.source->type == entry_type::compaction)
            problem = carried_problem(*p.source, path, covered_end, covered_get);
        if (!problem.empty())
        {
            ctx.dropped.push_back({p.source->id, "pinned", std::move(problem)});
            p.messages = portable_compaction_messages(*p.source, p.edit.get());
        }
        else
            p.messages = project_entry(*p.source, p.edit.get());
        for (const auto& m : p.messages)
            ctx.messages.push_back({m, p.source->id});
    }
}

result<session_context> project(
    const std::vector<const entry_meta*>& path,
    const path_facts& facts,
    bool unique_ids,
    const materialize_fn& get,
    const materialize_fn& covered_get
)
{
    session_context ctx;
    if (path.empty())
        return ctx;
    ctx.leaf_id = path.back()->id;
    ctx.last_edit_or_compaction = facts.last_edit_or_compaction;
    if (facts.thinking)
        ctx.thinking_level = path[*facts.thinking]->thinking_level;
    if (facts.model)
        ctx.model = model_ref{path[*facts.model]->provider, path[*facts.model]->model};
    auto range = select_range(path, facts.compaction, unique_ids, get);
    if (!range)
        return range.error();
    auto edits = materialize(path, *range, facts.compaction, get, ctx);
    if (!edits)
        return edits.error();
    project_messages(path, *edits, range->covered_end, covered_get, ctx);
    ctx.system = replay_system_messages(ctx.messages);
    return ctx;
}

}  // namespace

result<session_context> build_session_context(const session_log& log, diagnostics& diag)
{
    return build_session_context(log, log.leaf(), diag);
}

result<session_context> build_session_context(
    const session_log& log, std::optional<std::size_t> leaf, diagnostics& diag
)
{
    const auto indices = log.path_to(leaf);
    std::vector<const entry_meta*> path;
    path.reserve(indices.size());
    for (auto i : indices)
        path.push_back(&log.meta(i));
    const materialize_fn get = [&](std::size_t pos) { return log.get(indices[pos], diag); };
    return project(path, facts_of(log, indices), true, get, get);
}

session_context build_session_context(std::span<const entry_ptr> path, const session_log* log)
{
    std::vector<entry_meta> metas;
    metas.reserve(path.size());
    for (const auto& e : path)
        metas.push_back(make_meta(e));
    std::vector<const entry_meta*> ptrs;
    ptrs.reserve(metas.size());
    for (const auto& m : metas)
        ptrs.push_back(&m);
    // Materialized entries cannot fail to materialize.
    const materialize_fn get = [&](std::size_t pos) -> result<entry_ptr> { return path[pos]; };
    // Covered entries for the carried-entry check: a stand-in has no JSON to compare; read it
    // from the log. Without a log, a path with stand-ins (the planner's) is not checked here:
    // the projections a session shows and replays are.
    const bool stand_ins =
        std::any_of(path.begin(), path.end(), [](const entry_ptr& e) { return e->raw.empty(); });
    materialize_fn covered_get;
    if (log || !stand_ins)
        covered_get = [&](std::size_t pos) -> result<entry_ptr> {
            if (!path[pos]->raw.empty())
                return path[pos];
            diagnostics diag;
            const auto i = log ? log->find(path[pos]->id) : std::nullopt;
            if (!i)
                return errc::entry_not_found;
            return log->get(*i, diag);
        };
    auto ctx = project(ptrs, facts_of(ptrs), false, get, covered_get).value();
    // Stand-ins are only needed for index-backed paths: use the real entries.
    for (auto& p : ctx.entries)
        p.source = path[p.path_index];
    return ctx;
}

}  // namespace agentctx::compaction
