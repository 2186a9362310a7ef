// Snapshot construction from the log, and O(1) extension on append.
#include <agentctx/runtime/snapshot.hpp>

namespace agentctx::runtime {

using namespace agentctx::compaction;

std::shared_ptr<const message> snapshot::last_assistant() const
{
    for (std::size_t i = messages.size(); i-- > 0;)
        if (messages[i].msg->role == role::assistant)
            return messages[i].msg;
    return nullptr;
}

namespace {

void account(snapshot& s, const message& m, std::size_t index, const token_counter& counter)
{
    const auto c = static_cast<std::int64_t>(counter.count(m));
    s.total_estimate += c;
    if (has_usage(m))
    {
        if (!s.compacted_at || m.timestamp > *s.compacted_at)
        {
            s.usage_index = index;
            s.usage_tokens = calculate_context_tokens(*m.usage);
            s.trailing_tokens = 0;
        }
        else
            s.usage_index.reset();  // the newest usage is stale: estimate everything
        return;
    }
    if (s.usage_index)
        s.trailing_tokens += c;
}

}  // namespace

std::shared_ptr<const snapshot> snapshot_from_context(session_context ctx, std::size_t entry_count, const token_counter& counter)
{
    auto s = std::make_shared<snapshot>();
    s->leaf_id = ctx.leaf_id;
    s->entry_count = entry_count;
    s->thinking_level = ctx.thinking_level;
    s->model = ctx.model;
    s->compacted_at = latest_compaction_time(ctx);
    for (std::size_t i = 0; i < ctx.messages.size(); ++i)
        account(*s, *ctx.messages[i].msg, i, counter);
    s->messages = append_list<context_message>::from(std::move(ctx.messages));
    return s;
}

result<std::shared_ptr<const snapshot>> make_snapshot(const session_log& log, const token_counter& counter, diagnostics& diag)
{
    auto ctx = build_session_context(log, diag);
    if (!ctx)
        return ctx.error();
    return snapshot_from_context(std::move(*ctx), log.size(), counter);
}

std::shared_ptr<const snapshot> extend_snapshot(const snapshot& prev, const entry& e, const token_counter& counter)
{
    auto s = std::make_shared<snapshot>(prev);
    s->leaf_id = e.id;
    s->entry_count = prev.entry_count + 1;
    if (e.type == entry_type::thinking_level_change)
        s->thinking_level = e.thinking_level;
    else if (e.type == entry_type::model_change)
        s->model = model_ref{e.provider, e.model_id};
    else if (e.type == entry_type::message && e.message && e.message->role == role::assistant)
        s->model = model_ref{e.message->provider, e.message->model};
    if (auto m = message_of_entry(e))
    {
        account(*s, *m, s->messages.size(), counter);
        s->messages = s->messages.push_back({std::move(m), e.id});
    }
    return s;
}

}  // namespace agentctx::runtime
