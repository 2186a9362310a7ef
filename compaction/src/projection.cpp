// build_session_context: latest compaction -> summary, kept entries, later entries (spec §2).
#include <agentctx/compaction/projection.hpp>

#include <functional>

namespace agentctx::compaction {

std::shared_ptr<const message> message_of_entry(const entry& e, bool keep_empty_branch_summary)
{
    switch (e.type)
    {
    case entry_type::message: return e.message;
    case entry_type::custom_message:
    {
        auto m = std::make_shared<message>();
        m->role = role::custom;
        m->role_name = "custom";
        m->custom_type = e.custom_type;
        m->content = e.content;
        m->display = e.display;
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
    default: return nullptr;
    }
}

std::shared_ptr<const message> compaction_summary_message(const entry& c)
{
    auto m = std::make_shared<message>();
    m->role = role::compaction_summary;
    m->role_name = "compactionSummary";
    m->summary = c.summary;
    m->tokens_before = c.tokens_before;
    m->timestamp = parse_iso_timestamp(c.timestamp).value_or(0);
    return m;
}

namespace {

using materialize_fn = std::function<result<entry_ptr>(std::size_t path_pos)>;

bool emits(const entry_meta& m)
{
    return m.type == entry_type::message || m.type == entry_type::custom_message ||
           m.type == entry_type::branch_summary;
}

// The one implementation of §2 over index data; entries are materialized only when emitted.
result<session_context> project(const std::vector<const entry_meta*>& path, const materialize_fn& get)
{
    session_context ctx;
    if (path.empty())
        return ctx;
    ctx.leaf_id = path.back()->id;
    std::optional<std::size_t> compaction;
    for (std::size_t i = 0; i < path.size(); ++i)
    {
        const entry_meta& m = *path[i];
        if (m.type == entry_type::thinking_level_change)
            ctx.thinking_level = m.thinking_level;
        else if (m.type == entry_type::model_change ||
                 (m.type == entry_type::message && m.message_role == role::assistant))
            ctx.model = model_ref{m.provider, m.model};
        else if (m.type == entry_type::compaction)
            compaction = i;
    }
    boost::system::error_code failure;
    auto emit = [&](std::size_t i) -> bool {
        if (!emits(*path[i]))
            return true;
        auto e = get(i);
        if (!e)
        {
            failure = e.error();
            return false;
        }
        if (auto msg = message_of_entry(**e))
            ctx.messages.push_back({std::move(msg), (*e)->id});
        return true;
    };
    std::size_t begin = 0;
    if (compaction)
    {
        auto c = get(*compaction);
        if (!c)
            return c.error();
        ctx.messages.push_back({compaction_summary_message(**c), (*c)->id});
        begin = *compaction;  // nothing before the compaction unless firstKeptEntryId is found
        for (std::size_t i = 0; i < *compaction; ++i)
            if (path[i]->id == (*c)->first_kept_entry_id)
            {
                begin = i;
                break;
            }
        for (std::size_t i = begin; i < *compaction; ++i)
            if (!emit(i))
                return failure;
        begin = *compaction + 1;
    }
    for (std::size_t i = begin; i < path.size(); ++i)
        if (!emit(i))
            return failure;
    return ctx;
}

}  // namespace

result<session_context> build_session_context(const session_log& log, diagnostics& diag)
{
    return build_session_context(log, log.leaf(), diag);
}

result<session_context> build_session_context(
    const session_log& log,
    std::optional<std::size_t> leaf,
    diagnostics& diag
)
{
    const auto indices = log.path_to(leaf);
    std::vector<const entry_meta*> path;
    path.reserve(indices.size());
    for (auto i : indices)
        path.push_back(&log.meta(i));
    return project(path, [&](std::size_t pos) { return log.get(indices[pos], diag); });
}

session_context build_session_context(std::span<const entry_ptr> path)
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
    return project(ptrs, [&](std::size_t pos) -> result<entry_ptr> { return path[pos]; }).value();
}

}  // namespace agentctx::compaction
