// to_wire_messages: agent messages to OpenAI Chat Completions or Anthropic Messages turns.
#include <agentctx/providers/chat_messages.hpp>

#include <agentctx/compaction/call_pairing.hpp>
#include <agentctx/compaction/llm_convert.hpp>
#include <agentctx/compaction/serialize.hpp>
#include "native_compaction.hpp"

#include <boost/json/serialize.hpp>

namespace agentctx::providers {

namespace json = boost::json;
using compaction::message;
using compaction::role;

namespace {

bool sendable(const message& m)
{
    if (m.role == role::assistant)
        return m.stop_reason != compaction::stop_reason::error &&
               m.stop_reason != compaction::stop_reason::aborted;
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
        c,
        [&](const std::string& t) {
            parts.push_back(json::object{{"type", "text"}, {"text", t}});
        },
        [&](const compaction::image_block& i) {
            parts.push_back(json::object{
                {"type", "image_url"}, {"image_url", json::object{{"url", data_url(i)}}}});
        }
    );
    return parts;
}

void push_openai(const message& m, json::array& out)
{
    if (m.role == role::user)
        return out.push_back(json::object{{"role", "user"}, {"content", openai_user_content(m.content)}});
    if (m.role == role::tool_result)
        return out.push_back(json::object{
            {"role", "tool"},
            {"tool_call_id", m.tool_call_id},
            {"content", compaction::content_text(m.content)}});
    std::string text;
    json::array calls;
    for (const auto& b : m.content.blocks)
    {
        if (const auto* t = std::get_if<compaction::text_block>(&b))
            text += t->text;
        else if (const auto* c = std::get_if<compaction::tool_call_block>(&b))
            calls.push_back(json::object{
                {"id", c->id},
                {"type", "function"},
                {"function", json::object{{"name", c->name}, {"arguments", json::serialize(c->arguments)}}}});
    }
    json::object a{
        {"role", "assistant"}, {"content", text.empty() ? json::value(nullptr) : json::value(text)}};
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
        }
    );
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
        json::object r{
            {"type", "tool_result"},
            {"tool_use_id", m.tool_call_id},
            {"content", anthropic_parts(m.content)}};
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
            blocks.push_back(json::object{
                {"type", "tool_use"}, {"id", c->id}, {"name", c->name}, {"input", c->arguments}});
    }
    append_turn(out, "assistant", std::move(blocks), false);
}

// The position in `context` of the summary message `native` stands for (nullopt: not there, or
// the state is another wire format's).
std::optional<std::size_t> replaced_summary(
    wire_format f, std::span<const compaction::context_message> context, const native_replay* native
)
{
    if (!native || native->state.format != f)
        return std::nullopt;
    for (std::size_t i = 0; i < context.size(); ++i)
        if (context[i].msg->role == role::compaction_summary && context[i].entry_id == native->entry_id)
            return i;
    return std::nullopt;
}

// A peer's message as the model reads it: one line first saying who wrote it (agentctx's
// framing; Pi's text has no peers).
std::shared_ptr<const message> with_authorship(const message& m)
{
    auto framed = std::make_shared<message>(m);
    framed->content.blocks.insert(
        framed->content.blocks.begin(), compaction::text_block{compaction::peer_label(m.peer) + "\n"}
    );
    return framed;
}

// Which of `converted` a request carries: sendable messages, and of the tool results only those
// that answer a call the request carries. The results of an `error`/`aborted` assistant's calls
// leave with it, and a result no call of the view can own (no call, or a call answered already)
// is left out: a provider refuses a result whose call it was not sent.
std::vector<bool> carried(const std::vector<std::shared_ptr<const message>>& converted)
{
    std::vector<bool> keep(converted.size());
    std::vector<compaction::pairing_input> in;
    in.reserve(converted.size());
    for (std::size_t i = 0; i < converted.size(); ++i)
    {
        keep[i] = sendable(*converted[i]);
        in.push_back({converted[i].get(), i});
    }
    const auto pairing = compaction::pair_tool_calls(in);
    for (const auto& r : pairing.results)
    {
        using compaction::result_link_kind;
        if (r.kind == result_link_kind::no_call || r.kind == result_link_kind::repeat)
            keep[r.position] = false;
        else if (r.kind == result_link_kind::paired)
            keep[r.position] = keep[pairing.declarations[r.declaration].position];
    }
    return keep;
}

// convert_to_llm over `context`, sendable messages only.
std::vector<std::shared_ptr<const message>> llm_messages(
    std::span<const compaction::context_message> context, compaction::summary_framing framing
)
{
    std::vector<std::shared_ptr<const message>> agent;
    agent.reserve(context.size());
    for (const auto& m : context)
        agent.push_back(m.msg);
    auto converted = compaction::convert_to_llm(agent, framing);
    const auto keep = carried(converted);
    std::vector<std::shared_ptr<const message>> out;
    for (std::size_t i = 0; i < converted.size(); ++i)
        if (auto& m = converted[i]; keep[i])
            out.push_back(
                m->peer.empty() || framing == compaction::summary_framing::pi ? std::move(m)
                                                                              : with_authorship(*m)
            );
    return out;
}

json::array responses_user_content(const compaction::content& c)
{
    json::array parts;
    for_each_part(
        c,
        [&](const std::string& t) {
            parts.push_back(json::object{{"type", "input_text"}, {"text", t}});
        },
        [&](const compaction::image_block& i) {
            parts.push_back(json::object{{"type", "input_image"}, {"image_url", data_url(i)}});
        }
    );
    return parts;
}

void push_responses(const message& m, json::array& out)
{
    if (m.role == role::user)
        return out.push_back(json::object{{"role", "user"}, {"content", responses_user_content(m.content)}});
    if (m.role == role::tool_result)
        return out.push_back(json::object{
            {"type", "function_call_output"},
            {"call_id", m.tool_call_id},
            {"output", compaction::content_text(m.content)}});
    std::string text;
    for (const auto& b : m.content.blocks)
        if (const auto* t = std::get_if<compaction::text_block>(&b))
            text += t->text;
    if (!text.empty())
        out.push_back(json::object{
            {"type", "message"},
            {"role", "assistant"},
            {"content", json::array{json::object{{"type", "output_text"}, {"text", text}}}}});
    for (const auto& b : m.content.blocks)
        if (const auto* c = std::get_if<compaction::tool_call_block>(&b))
            out.push_back(json::object{
                {"type", "function_call"},
                {"call_id", c->id},
                {"name", c->name},
                {"arguments", json::serialize(c->arguments)}});
}

}  // namespace

json::array to_wire_messages(wire_format f, std::span<const compaction::context_message> context)
{
    return to_wire_messages(f, context, nullptr);
}

json::array to_wire_messages(
    wire_format f,
    std::span<const compaction::context_message> context,
    const native_replay* native,
    compaction::summary_framing framing
)
{
    json::array out;
    // OpenAI's compact output belongs to the Responses API (to_responses_input): Chat Completions
    // gets the portable summary.
    const auto at = f == wire_format::anthropic ? replaced_summary(f, context, native) : std::nullopt;
    const auto push = [&](std::span<const compaction::context_message> part) {
        for (const auto& m : llm_messages(part, framing))
            f == wire_format::openai ? push_openai(*m, out) : push_anthropic(*m, out);
    };
    if (!at)
    {
        push(context);
        return out;
    }
    // Anthropic ignores everything before the compaction block; the summary leads the context anyway.
    push(context.first(*at));
    append_turn(out, "assistant", json::array{native->state.item}, false);
    push(context.subspan(*at + 1));
    return out;
}

json::array to_responses_input(
    std::span<const compaction::context_message> context,
    const native_replay* native,
    compaction::summary_framing framing
)
{
    json::array out;
    const auto at = replaced_summary(wire_format::openai, context, native);
    const auto push = [&](std::span<const compaction::context_message> part) {
        for (const auto& m : llm_messages(part, framing))
            push_responses(*m, out);
    };
    if (!at)
    {
        push(context);
        return out;
    }
    push(context.first(*at));
    for (const auto& item : native->state.item.as_array())
        out.push_back(item);
    push(context.subspan(*at + 1));
    return out;
}

json::array inline_context_management(std::int64_t threshold)
{
    json::object management{{"type", "compaction"}};
    if (threshold > 0)
        management["compact_threshold"] = threshold;
    return json::array{std::move(management)};
}

json::object compaction_trigger_item()
{
    return json::object{{"type", "compaction_trigger"}};
}

}  // namespace agentctx::providers
