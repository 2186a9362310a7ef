// Snapshot construction from the log, and O(1) extension on append.
#include <agentctx/runtime/snapshot.hpp>

#include <agentctx/compaction/json_text.hpp>
#include <agentctx/compaction/limits.hpp>

#include <algorithm>
#include <string_view>
#include <unordered_map>

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

// One message in context order. `may_anchor`: its entry follows every context_edit and
// compaction on the path (Pi 1.6 trusts no usage that predates them).
void account(snapshot& s, const message& m, std::size_t index, bool may_anchor, const token_counter& counter)
{
    const auto c = static_cast<std::int64_t>(counter.count(m));
    if (m.role != role::system)
        s.total_estimate += c;
    if (has_usage(m))
    {
        if (may_anchor)
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

void set_system(snapshot& s, std::shared_ptr<const message> system, const token_counter& counter)
{
    s.system = std::move(system);
    s.system_tokens = s.system ? static_cast<std::int64_t>(counter.count(*s.system)) : 0;
}

// The native state of the latest compaction among the projected entries, if it passes
// native_problem; a failed one is noted in `dropped`.
std::shared_ptr<const providers::native_replay> native_of(
    const session_context& ctx, std::vector<derived_note>& dropped
)
{
    for (std::size_t i = ctx.entries.size(); i-- > 0;)
    {
        const auto& e = *ctx.entries[i].source;
        if (e.type != entry_type::compaction)
            continue;
        const auto* ours = e.details.is_object() ? e.details.get_object().if_contains("agentctx") : nullptr;
        const auto* native = ours && ours->is_object() ? ours->get_object().if_contains("native") : nullptr;
        if (!native)
            return nullptr;
        if (auto problem = native_problem(e, *native); !problem.empty())
        {
            dropped.push_back({e.id, "native", std::move(problem)});
            return nullptr;
        }
        providers::diagnostics diag;
        auto state = providers::parse_native_state(*native, diag);
        return std::make_shared<const providers::native_replay>(providers::native_replay{
            std::move(*state), e.id});
    }
    return nullptr;
}

// A string member of `o` at `key`, or "".
std::string_view string_at(const boost::json::object* o, std::string_view key)
{
    const auto* v = o ? o->if_contains(key) : nullptr;
    return v && v->is_string() ? std::string_view(v->get_string()) : std::string_view();
}

}  // namespace

std::string native_problem(const entry& c, const boost::json::value& native)
{
    if (const auto bytes = stringify(native).size(); bytes > max_native_state_bytes)
        return "the native state is " + std::to_string(bytes) + " bytes, over the bound of " +
               std::to_string(max_native_state_bytes);
    providers::diagnostics diag;
    auto state = providers::parse_native_state(native, diag);
    if (!state)
        return diag.message;
    const auto* details = c.details.if_object();
    const auto* ours =
        details && details->if_contains("agentctx") ? details->at("agentctx").if_object() : nullptr;
    const auto* evidence = ours && ours->if_contains("evidence") ? ours->at("evidence").if_object() : nullptr;
    const auto* identity = ours && ours->if_contains("identity") ? ours->at("identity").if_object() : nullptr;
    if (string_at(evidence, "method") != "native")
        return "the compaction records no native summary (evidence.method is not \"native\")";
    const std::string_view provider = string_at(identity, "provider");
    const std::string_view state_provider =
        state->format == providers::wire_format::anthropic ? "anthropic" : "openai";
    if (provider.empty() || provider == "hook" || provider == "offline")
        return "the compaction was not written by a provider's summarizer";
    if ((provider == "anthropic" || provider == "openai") && provider != state_provider)
        return "the native state is " + std::string(state_provider) + "'s, the compaction was written by " +
               std::string(provider);
    return {};
}

std::shared_ptr<const snapshot> snapshot_from_context(
    session_context ctx, std::size_t entry_count, const token_counter& counter
)
{
    auto s = std::make_shared<snapshot>();
    s->leaf_id = ctx.leaf_id;
    s->entry_count = entry_count;
    s->thinking_level = ctx.thinking_level;
    s->model = ctx.model;
    s->compacted_at = latest_compaction_time(ctx);
    set_system(*s, ctx.system, counter);
    s->dropped_derived = std::move(ctx.dropped);
    s->native = native_of(ctx, s->dropped_derived);
    std::size_t index = 0;
    for (const auto& p : ctx.entries)
    {
        s->has_edits = s->has_edits || p.source->type == entry_type::context_edit;
        const bool may_anchor = !ctx.last_edit_or_compaction || p.path_index > *ctx.last_edit_or_compaction;
        for (const auto& m : p.messages)
            account(*s, *m, index++, may_anchor, counter);
    }
    s->messages = append_list<context_message>::from(std::move(ctx.messages));
    return s;
}

result<std::shared_ptr<const snapshot>> make_snapshot(
    const session_log& log, const token_counter& counter, diagnostics& diag
)
{
    auto ctx = build_session_context(log, diag);
    if (!ctx)
        return ctx.error();
    return snapshot_from_context(std::move(*ctx), log.size(), counter);
}

std::shared_ptr<const snapshot> extend_snapshot(
    const snapshot& prev, const entry& e, const token_counter& counter
)
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
        if (m->role == role::system)
        {
            const std::shared_ptr<const message> parts[] = {s->system, m};
            set_system(
                *s,
                s->system ? replay_system_messages(parts) : replay_system_messages(std::span(parts + 1, 1)),
                counter
            );
        }
        account(*s, *m, s->messages.size(), true, counter);
        s->messages = s->messages.push_back({std::move(m), e.id});
    }
    return s;
}

bool is_reminder_snapshot(const pin_policy& pins, const message& m)
{
    return m.role == role::custom &&
           std::find(pins.snapshot_types.begin(), pins.snapshot_types.end(), m.custom_type) !=
               pins.snapshot_types.end();
}

namespace {

// For each message, the index of the newer snapshot of its key that replaces it (nullopt: it stays).
std::vector<std::optional<std::size_t>> replaced_by(const snapshot& s, const pin_policy& pins)
{
    std::vector<std::optional<std::size_t>> out(s.messages.size());
    std::unordered_map<std::string_view, std::size_t> newer;  // key -> the newest later snapshot
    for (std::size_t i = s.messages.size(); i-- > 0;)
    {
        const auto& c = s.messages[i];
        if (!is_reminder_snapshot(pins, *c.msg))
            continue;
        const auto it = newer.find(c.msg->custom_type);
        const bool by_id = std::find(pins.ids.begin(), pins.ids.end(), c.entry_id) != pins.ids.end();
        if (it != newer.end() && !by_id)
            out[i] = it->second;
        newer[c.msg->custom_type] = i;
    }
    return out;
}

}  // namespace

std::shared_ptr<const snapshot> without_replaced_snapshots(
    const snapshot& s, const pin_policy& pins, const token_counter& counter
)
{
    if (pins.snapshot_types.empty())
        return nullptr;
    const auto replaced = replaced_by(s, pins);
    if (std::none_of(replaced.begin(), replaced.end(), [](const auto& r) { return r.has_value(); }))
        return nullptr;
    auto out = std::make_shared<snapshot>(s);
    std::vector<context_message> kept;
    kept.reserve(s.messages.size());
    std::size_t dropped_before_anchor = 0;
    for (std::size_t i = 0; i < s.messages.size(); ++i)
    {
        if (!replaced[i])
        {
            kept.push_back(s.messages[i]);
            continue;
        }
        const auto c = static_cast<std::int64_t>(counter.count(*s.messages[i].msg));
        out->total_estimate -= c;
        if (!s.usage_index)
            continue;
        if (i > *s.usage_index)
            out->trailing_tokens -= c;
        else
        {
            ++dropped_before_anchor;
            // The anchor's request carried it when its replacement came only later.
            if (*replaced[i] > *s.usage_index)
                out->usage_tokens = std::max<std::int64_t>(0, out->usage_tokens - c);
        }
    }
    if (s.usage_index)
        out->usage_index = *s.usage_index - dropped_before_anchor;
    out->messages = append_list<context_message>::from(std::move(kept));
    return out;
}

}  // namespace agentctx::runtime
