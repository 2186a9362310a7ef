// to_wire_messages: agent messages to OpenAI Chat Completions or Anthropic Messages turns.
#include <agentctx/providers/chat_messages.hpp>

#include <agentctx/compaction/llm_convert.hpp>

#include <boost/json/serialize.hpp>

namespace agentctx::providers {

namespace json = boost::json;
using compaction::message;
using compaction::role;

namespace {

bool sendable(const message& m)
{
    if (m.role == role::assistant)
        return m.stop_reason != compaction::stop_reason::error && m.stop_reason != compaction::stop_reason::aborted;
    return m.role == role::user || m.role == role::tool_result;
}

std::string data_url(const compaction::image_block& i)
{
    return "data:" + i.mime_type + ";base64," + i.data;
}

// Text and image blocks of user or tool-result content (a string content is one text block).
template <class Text, class Image>
void for_each_part(const compaction::content& c, Text&& text, Image&& image)
{
    if (c.is_string)
        return text(c.text);
    for (const auto& b : c.blocks)
    {
        if (const auto* t = std::get_if<compaction::text_block>(&b))
            text(t->text);
        else if (const auto* i = std::get_if<compaction::image_block>(&b))
            image(*i);
    }
}

json::value openai_user_content(const compaction::content& c)
{
    if (c.is_string)
        return json::value(c.text);
    json::array parts;
    for_each_part(
        c, [&](const std::string& t) { parts.push_back(json::object{{"type", "text"}, {"text", t}}); },
        [&](const compaction::image_block& i) {
            parts.push_back(json::object{{"type", "image_url"}, {"image_url", json::object{{"url", data_url(i)}}}});
        });
    return parts;
}

void push_openai(const message& m, json::array& out)
{
    if (m.role == role::user)
        return out.push_back(json::object{{"role", "user"}, {"content", openai_user_content(m.content)}});
    if (m.role == role::tool_result)
        return out.push_back(json::object{{"role", "tool"},
                                          {"tool_call_id", m.tool_call_id},
                                          {"content", compaction::content_text(m.content)}});
    std::string text;
    json::array calls;
    for (const auto& b : m.content.blocks)
    {
        if (const auto* t = std::get_if<compaction::text_block>(&b))
            text += t->text;
        else if (const auto* c = std::get_if<compaction::tool_call_block>(&b))
            calls.push_back(json::object{{"id", c->id},
                                         {"type", "function"},
                                         {"function", json::object{{"name", c->name},
                                                                   {"arguments", json::serialize(c->arguments)}}}});
    }
    json::object a{{"role", "assistant"}, {"content", text.empty() ? json::value(nullptr) : json::value(text)}};
    if (!calls.empty())
        a["tool_calls"] = std::move(calls);
    out.push_back(std::move(a));
}

json::array anthropic_parts(const compaction::content& c)
{
    json::array parts;
    for_each_part(
        c,
        [&](const std::string& t) {
            if (!t.empty())
                parts.push_back(json::object{{"type", "text"}, {"text", t}});
        },
        [&](const compaction::image_block& i) {
            parts.push_back(json::object{
                {"type", "image"},
                {"source", json::object{{"type", "base64"}, {"media_type", i.mime_type}, {"data", i.data}}}});
        });
    return parts;
}

// Appends `blocks` to the last turn when it has `role_name`, else opens a new turn. Tool results
// go before the turn's other blocks: Anthropic wants them first in the user turn.
void append_turn(json::array& out, std::string_view role_name, json::array blocks, bool results_first)
{
    if (blocks.empty())
        return;
    if (!out.empty() && out.back().as_object().at("role").as_string() == role_name)
    {
        auto& content = out.back().as_object()["content"].as_array();
        if (results_first)
        {
            std::size_t at = 0;
            while (at < content.size() && content[at].as_object().at("type").as_string() == "tool_result")
                ++at;
            content.insert(content.begin() + static_cast<std::ptrdiff_t>(at), blocks.begin(), blocks.end());
        }
        else
            content.insert(content.end(), blocks.begin(), blocks.end());
        return;
    }
    out.push_back(json::object{{"role", role_name}, {"content", std::move(blocks)}});
}

void push_anthropic(const message& m, json::array& out)
{
    if (m.role == role::user)
        return append_turn(out, "user", anthropic_parts(m.content), false);
    if (m.role == role::tool_result)
    {
        json::object r{{"type", "tool_result"}, {"tool_use_id", m.tool_call_id}, {"content", anthropic_parts(m.content)}};
        if (m.is_error)
            r["is_error"] = true;
        return append_turn(out, "user", json::array{std::move(r)}, true);
    }
    json::array blocks;
    for (const auto& b : m.content.blocks)
    {
        if (const auto* t = std::get_if<compaction::text_block>(&b); t && !t->text.empty())
            blocks.push_back(json::object{{"type", "text"}, {"text", t->text}});
        else if (const auto* c = std::get_if<compaction::tool_call_block>(&b))
            blocks.push_back(json::object{{"type", "tool_use"}, {"id", c->id}, {"name", c->name}, {"input", c->arguments}});
    }
    append_turn(out, "assistant", std::move(blocks), false);
}

}  // namespace

json::array to_wire_messages(wire_format f, std::span<const compaction::context_message> context)
{
    std::vector<std::shared_ptr<const message>> agent;
    agent.reserve(context.size());
    for (const auto& m : context)
        agent.push_back(m.msg);
    json::array out;
    for (const auto& m : compaction::convert_to_llm(agent))
    {
        if (!sendable(*m))
            continue;
        if (f == wire_format::openai)
            push_openai(*m, out);
        else
            push_anthropic(*m, out);
    }
    return out;
}

}  // namespace agentctx::providers
