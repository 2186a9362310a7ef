// The cost model's prompt cache over Anthropic Messages and Chat Completions request bodies.
#include "prompt_cache_model.hpp"

#include <agentctx/compaction/json_text.hpp>

#include <boost/json/array.hpp>

#include <algorithm>

namespace agentctx::test {

namespace json = boost::json;

namespace {

std::int64_t tokens_of(const std::string& key)
{
    return static_cast<std::int64_t>((key.size() + 3) / 4);
}

// A block without its breakpoint, tagged with where it sits.
std::string block_key(const std::string& tag, json::value block, bool& breakpoint)
{
    if (block.is_object())
        breakpoint = block.get_object().erase("cache_control") > 0;
    return tag + "\n" + compaction::stringify(block);
}

json::array blocks_of(const json::value* v)
{
    if (!v || v->is_null())
        return {};
    if (v->is_string())
        return v->get_string().empty()
                   ? json::array{}
                   : json::array{json::object{{"type", "text"}, {"text", v->get_string()}}};
    return v->is_array() ? v->get_array() : json::array{};
}

}  // namespace

prompt_cache_model::billed prompt_cache_model::anthropic(const json::object& body, double t)
{
    std::vector<part> parts;
    std::size_t cacheable = 0;
    const auto add = [&](const std::string& tag, const json::value& block) {
        bool breakpoint = false;
        auto key = block_key(tag, block, breakpoint);
        parts.push_back({key, tokens_of(key)});
        if (breakpoint)
            cacheable = parts.size();
    };
    for (const auto& b : blocks_of(body.if_contains("system")))
        add("system", b);
    if (const auto* tools = body.if_contains("tools"); tools && tools->is_array())
        for (const auto& tool : tools->get_array())
            add("tool", tool);
    if (const auto* messages = body.if_contains("messages"); messages && messages->is_array())
        for (const auto& m : messages->get_array())
        {
            const auto& o = m.get_object();
            for (const auto& b : blocks_of(o.if_contains("content")))
                add(std::string(o.at("role").get_string()), b);
        }
    return apply(parts, cacheable, "anthropic", t);
}

prompt_cache_model::billed prompt_cache_model::openai(const json::object& body, double t)
{
    std::vector<part> parts;
    if (const auto* tools = body.if_contains("tools"); tools && tools->is_array())
        for (const auto& tool : tools->get_array())
        {
            auto key = "tool\n" + compaction::stringify(tool);
            parts.push_back({key, tokens_of(key)});
        }
    if (const auto* messages = body.if_contains("messages"); messages && messages->is_array())
        for (const auto& m : messages->get_array())
        {
            auto key = compaction::stringify(m);
            parts.push_back({key, tokens_of(key)});
        }
    std::string space = "openai";
    if (const auto* k = body.if_contains("prompt_cache_key"); k && k->is_string())
        space += ":" + std::string(k->get_string());
    return apply(parts, parts.size(), space, t);
}

prompt_cache_model::billed prompt_cache_model::apply(
    const std::vector<part>& parts, std::size_t cacheable, const std::string& space, double t
)
{
    std::lock_guard lock(mu_);
    billed b;
    for (const auto& p : parts)
        b.input += p.tokens;
    std::int64_t cacheable_tokens = 0;
    for (std::size_t i = 0; i < cacheable; ++i)
        cacheable_tokens += parts[i].tokens;
    // The longest unexpired prefix, in whole parts, within the cacheable part.
    std::int64_t best = 0;
    std::vector<entry*> served;
    for (auto& e : entries_)
    {
        if (e.space != space || e.expires < t)
            continue;
        std::int64_t shared = 0;
        for (std::size_t i = 0; i < std::min({e.keys.size(), cacheable}) && e.keys[i] == parts[i].key; ++i)
            shared += e.tokens[i];
        if (shared > best)
        {
            best = shared;
            served.clear();
        }
        if (shared == best && shared > 0)
            served.push_back(&e);
    }
    if (best < min_prefix_)
        best = 0;
    b.read = best;
    if (cacheable == 0)
        return b;
    b.written = cacheable_tokens - best;
    for (auto* e : served)
        if (best > 0)
            e->expires = t + ttl_;
    entry fresh{space, {}, {}, t + ttl_};
    for (std::size_t i = 0; i < cacheable; ++i)
    {
        fresh.keys.push_back(parts[i].key);
        fresh.tokens.push_back(parts[i].tokens);
    }
    entries_.push_back(std::move(fresh));
    return b;
}

std::string prompt_cache_model::anthropic_reply(
    const billed& b, const std::string& text, const std::string& stop, bool tool_use
)
{
    json::array content{json::object{{"type", "text"}, {"text", text}}};
    if (tool_use)
        content.push_back(json::object{
            {"type", "tool_use"},
            {"id", "toolu_1"},
            {"name", "read"},
            {"input", json::object{{"path", "a.txt"}}}});
    return compaction::stringify(json::object{
        {"id", "msg_cache"},
        {"type", "message"},
        {"role", "assistant"},
        {"model", "claude-test"},
        {"content", std::move(content)},
        {"stop_reason", stop},
        {"usage",
         json::object{
             {"input_tokens", b.uncached()},
             {"output_tokens", 300},
             {"cache_read_input_tokens", b.read},
             {"cache_creation_input_tokens", b.written}}},
    });
}

std::string prompt_cache_model::openai_reply(
    const billed& b, const std::string& text, const std::string& finish
)
{
    return compaction::stringify(json::object{
        {"id", "chatcmpl-cache"},
        {"object", "chat.completion"},
        {"model", "gpt-test"},
        {"choices",
         json::array{json::object{
             {"index", 0},
             {"message", json::object{{"role", "assistant"}, {"content", text}}},
             {"finish_reason", finish}}}},
        {"usage",
         json::object{
             {"prompt_tokens", b.input},
             {"completion_tokens", 300},
             {"total_tokens", b.input + 300},
             {"prompt_tokens_details", json::object{{"cached_tokens", b.read}}}}},
    });
}

}  // namespace agentctx::test
