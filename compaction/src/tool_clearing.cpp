// plan_tool_clearing: the old tool results outside the protected window, replaced by placeholders.
#include <agentctx/compaction/tool_clearing.hpp>

#include <agentctx/compaction/call_pairing.hpp>
#include <agentctx/compaction/json_text.hpp>

#include <algorithm>
#include <map>
#include <set>

namespace agentctx::compaction {

bool clearing_enabled(const clear_tool_results_settings& s, compat_mode mode) noexcept
{
    return mode != compat_mode::pi && s.enabled.value_or(true);
}

std::string clearing_placeholder(
    std::string_view tool,
    std::string_view key,
    std::int64_t chars,
    std::int64_t tokens,
    std::string_view entry_id
)
{
    std::string out(cleared_marker);
    out += ": ";
    out += tool.empty() ? std::string_view("tool") : tool;
    out += "(";
    out += key;
    out += "), " + std::to_string(chars) + " chars (~" + std::to_string(tokens) +
           " tokens); the original is entry ";
    out += entry_id;
    out += "]";
    return out;
}

std::string argument_key(const boost::json::object& arguments)
{
    static constexpr std::string_view keys[] = {
        "path", "file_path", "filePath", "command", "cmd", "url", "pattern", "query"};
    for (const auto key : keys)
    {
        const auto* v = arguments.if_contains(key);
        if (!v || !v->is_string())
            continue;
        std::string value(v->get_string());
        if (value.size() > 120)
        {
            value.resize(117);
            while (!value.empty() && (static_cast<unsigned char>(value.back()) & 0xC0) == 0x80)
                value.pop_back();  // never cut inside a UTF-8 sequence
            if (!value.empty() && static_cast<unsigned char>(value.back()) >= 0xC0)
                value.pop_back();
            value += "...";
        }
        return std::string(key) + ": " + value;
    }
    return {};
}

namespace {

struct call_info
{
    std::size_t assistant = 0;  ///< position of the calling assistant message
    const tool_call_block* call = nullptr;
};

// The call each result answers, by the result's position (pair_tool_calls: within its batch).
std::map<std::size_t, call_info> calls_by_result(std::span<const context_message> ctx)
{
    const auto pairing = pair_tool_calls(ctx);
    std::map<std::size_t, call_info> out;
    for (const auto& r : pairing.results)
        if (r.kind != result_link_kind::no_call)
            out[r.position] = {
                pairing.declarations[r.declaration].position, pairing.declarations[r.declaration].call};
    return out;
}

bool already_cleared(const message& m)
{
    if (m.content.is_string)
        return m.content.text.starts_with(cleared_marker);
    if (m.content.blocks.size() != 1)
        return false;
    const auto* t = std::get_if<text_block>(&m.content.blocks.front());
    return t && t->text.starts_with(cleared_marker);
}

bool listed(const std::vector<std::string>& names, const std::string& name)
{
    return std::find(names.begin(), names.end(), name) != names.end();
}

// Positions of the results the plan may not touch: the running batch and the `keep` newest.
std::set<std::size_t> protected_results(std::span<const context_message> ctx, std::int64_t keep)
{
    std::set<std::size_t> out;
    std::set<std::string> running;
    std::size_t last_assistant = ctx.size();
    for (std::size_t i = ctx.size(); i-- > 0;)
        if (ctx[i].msg->role == role::assistant)
        {
            last_assistant = i;
            break;
        }
    if (last_assistant < ctx.size())
        for (const auto& b : ctx[last_assistant].msg->content.blocks)
            if (const auto* c = std::get_if<tool_call_block>(&b))
                running.insert(c->id);
    std::int64_t newest = 0;
    for (std::size_t i = ctx.size(); i-- > 0;)
    {
        const auto& m = *ctx[i].msg;
        if (m.role != role::tool_result)
            continue;
        if (newest++ < keep || (i > last_assistant && running.count(m.tool_call_id)))
            out.insert(i);
    }
    return out;
}

// The edit that clears the arguments of `calls` in the assistant entry `id`, if any changes.
std::optional<clearing_edit> clear_inputs(
    const std::string& id, const boost::json::array& content, const std::set<std::string>& calls
)
{
    clearing_edit edit{id, {}, 0, true};
    boost::json::array blocks = content;
    for (auto& b : blocks)
    {
        auto* o = b.if_object();
        if (!o || !o->contains("type") || o->at("type") != "toolCall")
            continue;
        const auto* call_id = o->if_contains("id");
        auto* args = o->if_contains("arguments");
        if (!call_id || !call_id->is_string() || !calls.count(std::string(call_id->get_string())) || !args ||
            (args->is_object() && args->get_object().empty()))
            continue;
        edit.tokens += static_cast<std::int64_t>((utf16_length(stringify(*args)) + 3) / 4);
        *args = boost::json::object{};
    }
    if (edit.tokens == 0)
        return std::nullopt;
    edit.replacement = boost::json::object{{"content", std::move(blocks)}};
    return edit;
}

}  // namespace

clearing_plan plan_tool_clearing(const clear_tool_results_settings& s, const clearing_input& in)
{
    clearing_plan plan;
    const auto trigger = s.trigger.of(in.threshold);
    if (in.context_tokens < trigger)
    {
        plan.reason = "under the clearing trigger (" + std::to_string(in.context_tokens) + " < " +
                      std::to_string(trigger) + ")";
        return plan;
    }
    const token_counter& counter = in.counter ? *in.counter : default_token_counter();
    const auto ctx = in.context;
    const auto calls = calls_by_result(ctx);
    const auto kept = protected_results(ctx, s.keep);
    std::map<std::size_t, std::set<std::string>> inputs;  // assistant position -> cleared call ids
    std::vector<std::pair<std::size_t, clearing_edit>> edits;
    for (std::size_t i = 0; i < ctx.size(); ++i)
    {
        const auto& m = *ctx[i].msg;
        if (m.role != role::tool_result || kept.count(i) || listed(s.exclude_tools, m.tool_name) ||
            already_cleared(m) || (in.protected_entry && in.protected_entry(ctx[i].entry_id)))
            continue;
        const auto call = calls.find(i);
        const std::string key =
            call == calls.end() ? std::string() : argument_key(call->second.call->arguments);
        const auto tokens = static_cast<std::int64_t>(counter.count(m));
        const auto chars = static_cast<std::int64_t>(utf16_length(content_text(m.content)));
        const auto text = clearing_placeholder(m.tool_name, key, chars, tokens, ctx[i].entry_id);
        message placeholder = m;
        placeholder.content = content{false, {}, {text_block{text}}};
        const auto freed = tokens - static_cast<std::int64_t>(counter.count(placeholder));
        if (freed <= 0)
            continue;
        boost::json::array blocks{boost::json::object{{"type", "text"}, {"text", text}}};
        edits.push_back(
            {i,
             clearing_edit{
                 ctx[i].entry_id, boost::json::object{{"content", std::move(blocks)}}, freed, false}}
        );
        ++plan.results;
        plan.tokens += freed;
        if (call != calls.end() && (s.clear_all_inputs || listed(s.clear_input_tools, m.tool_name)))
            inputs[call->second.assistant].insert(m.tool_call_id);
    }
    for (const auto& [pos, ids] : inputs)
    {
        const auto* content = in.assistant_content ? in.assistant_content(ctx[pos].entry_id) : nullptr;
        if (!content)
            continue;
        if (auto edit = clear_inputs(ctx[pos].entry_id, *content, ids))
        {
            plan.tokens += edit->tokens;
            edits.push_back({pos, std::move(*edit)});
        }
    }
    if (plan.tokens < s.clear_at_least || edits.empty())
    {
        plan.reason = "clearing would free " + std::to_string(plan.tokens) + " tokens, under clearAtLeast " +
                      std::to_string(s.clear_at_least);
        plan.results = plan.tokens = 0;
        return plan;
    }
    std::stable_sort(edits.begin(), edits.end(), [](const auto& a, const auto& b) {
        return a.first < b.first;
    });
    for (auto& e : edits)
        plan.edits.push_back(std::move(e.second));
    return plan;
}

}  // namespace agentctx::compaction
