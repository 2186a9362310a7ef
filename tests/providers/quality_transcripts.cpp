// Hand-written transcripts for checkpoint-quality tests, each with the facts a checkpoint must keep.
#include "quality_transcripts.hpp"

#include <agentctx/compaction/error.hpp>

#include <boost/json/array.hpp>

#include <stdexcept>

namespace agentctx::test {

namespace json = boost::json;

namespace {

std::shared_ptr<const compaction::message> decode(const json::object& o)
{
    compaction::diagnostics diag;
    auto m = compaction::decode_message(o, "", diag);
    if (!m)
        throw std::runtime_error("bad test message: " + diag.message);
    return std::make_shared<const compaction::message>(std::move(*m));
}

json::object assistant(json::array content, const char* stop)
{
    return {{"role", "assistant"}, {"content", std::move(content)}, {"stopReason", stop}};
}

}  // namespace

void convo::add(json::object m)
{
    messages.push_back(decode(m));
    objects.push_back(std::move(m));
}

std::string convo::next_id()
{
    return "call_" + std::to_string(++ids_);
}

convo& convo::user(std::string_view text)
{
    add(json::object{{"role", "user"}, {"content", text}});
    return *this;
}

convo& convo::say(std::string_view text)
{
    add(assistant({json::object{{"type", "text"}, {"text", text}}}, "stop"));
    return *this;
}

convo& convo::call(std::string_view name, json::object args, std::string_view text)
{
    json::array content;
    if (!text.empty())
        content.push_back(json::object{{"type", "text"}, {"text", text}});
    content.push_back(json::object{
        {"type", "toolCall"}, {"id", next_id()}, {"name", name}, {"arguments", std::move(args)}});
    add(assistant(std::move(content), "toolUse"));
    return *this;
}

convo& convo::run(
    std::string_view name, json::object args, std::string_view result, bool error, std::string_view text
)
{
    call(name, std::move(args), text);
    add(json::object{
        {"role", "toolResult"},
        {"toolCallId", "call_" + std::to_string(ids_)},
        {"toolName", name},
        {"content", json::array{json::object{{"type", "text"}, {"text", result}}}},
        {"isError", error}});
    return *this;
}

}  // namespace agentctx::test
