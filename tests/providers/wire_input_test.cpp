// Provider-format input: round trips through Pi messages back to each wire format, usage, and exact failure
// paths.
#include <agentctx/compaction/entry.hpp>
#include <agentctx/compaction/json_text.hpp>
#include <agentctx/compaction/message.hpp>
#include <agentctx/providers/chat_messages.hpp>
#include <agentctx/providers/wire_input.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "wire_turns.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

using namespace agentctx;
using namespace agentctx::providers;
namespace json = boost::json;

using test::anthropic_turns;
using test::chat_turns;
using test::responses_turns;

namespace {

std::vector<json::object> convert(input_format f, std::string_view items, const wire_input_options& opt = {})
{
    diagnostics diag;
    auto r = from_wire_messages(f, json::parse(items), opt, diag);
    EXPECT_TRUE(r.has_value()) << diag.message;
    return r ? *r : std::vector<json::object>{};
}

// The Pi messages as `message` entries of a session, then as its context holds them.
std::vector<compaction::context_message> context_of(const std::vector<json::object>& pi)
{
    std::vector<compaction::context_message> out;
    std::optional<std::string> parent;
    for (std::size_t i = 0; i < pi.size(); ++i)
    {
        compaction::diagnostics diag;
        const std::string id = "e" + std::to_string(i);
        auto e = compaction::make_message_entry(id, parent, "2026-01-15T09:00:00.000Z", pi[i], diag);
        EXPECT_TRUE(e.has_value()) << diag.message << " in " << compaction::stringify(pi[i]);
        if (!e)
            continue;
        EXPECT_EQ(
            compaction::stringify(e->raw.at("message")), compaction::stringify(pi[i])
        );  // stored as given
        out.push_back({e->message, id});
        parent = id;
    }
    return out;
}

// The failure message of a batch that must be rejected.
std::string failure(input_format f, std::string_view items, const wire_input_options& opt = {})
{
    diagnostics diag;
    const auto r = from_wire_messages(f, json::parse(items), opt, diag);
    EXPECT_FALSE(r.has_value()) << "accepted: " << items;
    if (r)
        return "(accepted)";
    EXPECT_EQ(r.error(), make_error_code(errc::invalid_wire_message));
    return diag.message;
}

std::string str(const json::value& v)
{
    return v.is_string() ? std::string(v.get_string()) : json::serialize(v);
}

json::value parse(std::string_view s)
{
    return json::parse(s);
}

// Pi messages and usage compared as written (key order included; costs are doubles, written as
// JavaScript writes them).
std::string written(const json::value& v)
{
    return compaction::stringify(v);
}

std::string written_text(std::string_view text)
{
    return compaction::stringify(json::parse(text));
}

constexpr std::string_view zero_usage =
    R"({"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0,"totalFromProvider":false}})";

// ---- Chat Completions ----

TEST(WireInputOpenai, RoundTripsParallelCallsImagesAndResults)
{
    const auto pi = convert(input_format::openai, chat_turns);
    ASSERT_EQ(pi.size(), 8u);
    const auto ctx = context_of(pi);
    EXPECT_EQ(json::value(to_wire_messages(wire_format::openai, ctx)), parse(chat_turns));
}

TEST(WireInputOpenai, PiMessagesCarryCallsResultsAndDefaults)
{
    const auto pi = convert(input_format::openai, chat_turns);
    ASSERT_EQ(pi.size(), 8u);
    EXPECT_EQ(json::value(pi[0]), parse(R"({"role":"user","content":"fix the build"})"));
    EXPECT_EQ(json::value(pi[1]), parse(R"({"role":"user","content":[{"type":"text","text":"this one:"},
        {"type":"image","data":"iVBORw0K","mimeType":"image/png"}]})"));
    EXPECT_EQ(
        written(pi[2]),
        written_text(
            R"({"role":"assistant","content":[{"type":"text","text":"Reading both."},
        {"type":"toolCall","id":"call_1","name":"read","arguments":{"path":"a.cpp"}},
        {"type":"toolCall","id":"call_2","name":"bash","arguments":{"command":"make","timeout":30}}],
        "api":"openai-completions","usage":)" +
            std::string(zero_usage) + R"(,"stopReason":"toolUse"})"
        )
    );
    EXPECT_EQ(json::value(pi[4]), parse(R"({"role":"toolResult","toolCallId":"call_2","toolName":"bash",
        "content":[{"type":"text","text":"error: make failed"}],"isError":false})"));
    EXPECT_EQ(pi[5].at("content").as_array().size(), 1u);  // content null: the call only
    EXPECT_EQ(str(pi[7].at("stopReason")), "stop");
    // Pi's key order for an assistant message.
    EXPECT_EQ(
        compaction::stringify(pi[7]),
        R"({"role":"assistant","content":[{"type":"text","text":"Fixed."}],"api":"openai-completions","usage":)" +
            std::string(zero_usage) + R"(,"stopReason":"stop"})"
    );
}

TEST(WireInputOpenai, UsageStopReasonModelAndTimestampGoToTheLastAssistant)
{
    wire_input_options opt;
    opt.usage = parse(R"({"prompt_tokens":1200,"completion_tokens":80,"total_tokens":1280,
                          "prompt_tokens_details":{"cached_tokens":1000}})");
    opt.stop_reason = "length";
    opt.provider = "openai";
    opt.model = "gpt-5";
    opt.timestamp = 1795168800000.0;
    const auto pi = convert(input_format::openai, chat_turns, opt);
    ASSERT_EQ(pi.size(), 8u);
    EXPECT_EQ(
        compaction::stringify(pi[7]),
        R"({"role":"assistant","content":[{"type":"text","text":"Fixed."}],"api":"openai-completions",)"
        R"("provider":"openai","model":"gpt-5","usage":{"input":200,"output":80,"cacheRead":1000,"cacheWrite":0,)"
        R"("totalTokens":1280,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0,"totalFromProvider":false}},)"
        R"("stopReason":"length","timestamp":1795168800000})"
    );
    EXPECT_EQ(written(pi[2].at("usage")), zero_usage);
    EXPECT_EQ(str(pi[2].at("model")), "gpt-5");
    EXPECT_EQ(pi[0].at("timestamp").as_double(), 1795168800000.0);
    const auto ctx = context_of(pi);
    ASSERT_TRUE(ctx[7].msg->usage);
    EXPECT_EQ(ctx[7].msg->usage->cache_read, 1000);
    EXPECT_EQ(ctx[7].msg->stop_reason, compaction::stop_reason::length);
}

TEST(WireInputOpenai, SystemAndDeveloperMessagesBecomePiSystemMessages)
{
    const auto pi = convert(
        input_format::openai, R"([{"role":"system","content":"You are terse."},
        {"role":"developer","content":[{"type":"text","text":"Use tools."}]},{"role":"user","content":"hi"}])"
    );
    ASSERT_EQ(pi.size(), 3u);
    EXPECT_EQ(json::value(pi[0]), parse(R"({"role":"system","content":"You are terse."})"));
    EXPECT_EQ(
        json::value(pi[1]), parse(R"({"role":"system","content":[{"type":"text","text":"Use tools."}]})")
    );
    const auto ctx = context_of(pi);
    EXPECT_EQ(ctx[0].msg->role, compaction::role::system);
    // The wire view leaves system messages to the request's system prompt.
    EXPECT_EQ(
        json::value(to_wire_messages(wire_format::openai, ctx)), parse(R"([{"role":"user","content":"hi"}])")
    );
}

TEST(WireInputOpenai, ResultOfAnEarlierCallTakesItsNameFromTheCaller)
{
    wire_input_options opt;
    opt.tool_name = [](std::string_view id) {
        return id == "call_old" ? std::string("grep") : std::string();
    };
    const auto pi = convert(
        input_format::openai,
        R"([{"role":"tool","tool_call_id":"call_old","content":"3 hits"},
        {"role":"tool","tool_call_id":"call_unknown","content":"?"}])",
        opt
    );
    ASSERT_EQ(pi.size(), 2u);
    EXPECT_EQ(str(pi[0].at("toolName")), "grep");
    EXPECT_EQ(str(pi[1].at("toolName")), "");
}

TEST(WireInputOpenai, MalformedItemsFailTheBatchWithTheFieldPath)
{
    const auto f = input_format::openai;
    EXPECT_EQ(
        failure(f, R"([{"role":"user","content":"a"},{"role":"assistant","content":null,"tool_calls":[
        {"id":"c","type":"function","function":{"name":"read","arguments":"{\"path\":"}}]}])"),
        "messages[1].tool_calls[0].function.arguments: not valid JSON"
    );
    EXPECT_EQ(
        failure(
            f, R"([{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"r","arguments":"[1]"}}]}])"
        ),
        "messages[0].tool_calls[0].function.arguments: not a JSON object"
    );
    EXPECT_EQ(
        failure(f, R"([{"role":"assistant","tool_calls":[{"id":"c","function":{"arguments":"{}"}}]}])"),
        "messages[0].tool_calls[0].function.name: required field is missing"
    );
    EXPECT_EQ(
        failure(f, R"([{"role":"assistant","tool_calls":[{"id":"c","type":"custom","custom":{}}]}])"),
        "messages[0].tool_calls[0].type: unsupported tool call type 'custom'"
    );
    EXPECT_EQ(
        failure(f, R"([{"role":"function","name":"f","content":"x"}])"),
        "messages[0].role: unsupported role 'function'"
    );
    EXPECT_EQ(
        failure(
            f,
            R"([{"role":"user","content":[{"type":"text","text":"a"},{"type":"input_audio","input_audio":{}}]}])"
        ),
        "messages[0].content[1].type: unsupported content part 'input_audio'"
    );
    EXPECT_EQ(
        failure(
            f, R"([{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}])"
        ),
        "messages[0].content[0].image_url.url: only base64 data: URLs are accepted (images are not fetched)"
    );
    EXPECT_EQ(
        failure(f, R"([{"role":"tool","content":"x"}])"),
        "messages[0].tool_call_id: required field is missing"
    );
    EXPECT_EQ(
        failure(f, R"([{"role":"user","content":7}])"),
        "messages[0].content: expected a string, an array or null"
    );
    EXPECT_EQ(
        failure(f, R"([{"role":"user","content":"a"},{"role":"user","content":"b"},3])"),
        "messages[2]: expected an object, got a number"
    );
    EXPECT_EQ(failure(f, R"({"role":"user","content":"a"})"), "messages: expected an array");
    wire_input_options opt;
    opt.usage = parse(R"({"prompt_tokens":1})");
    EXPECT_EQ(
        failure(f, R"([{"role":"user","content":"a"}])", opt),
        "usage: the batch has no assistant message to attach it to"
    );
    opt.usage = parse("[1]");
    EXPECT_EQ(failure(f, R"([{"role":"assistant","content":"a"}])", opt), "usage: expected an object");
}

// ---- Responses ----

constexpr std::string_view responses_reasoning =
    R"({"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"Read both."},{"type":"summary_text","text":"Then build."}],"encrypted_content":"gAAAA"})";

TEST(WireInputResponses, RoundTripsParallelCallsImagesAndOutputs)
{
    const auto pi = convert(input_format::responses, responses_turns);
    ASSERT_EQ(pi.size(), 6u);  // one assistant message holds the text and both calls
    EXPECT_EQ(json::value(to_responses_input(context_of(pi))), parse(responses_turns));
}

TEST(WireInputResponses, ReasoningIsKeptAsAThinkingBlockWithTheWholeItem)
{
    auto items = parse(responses_turns).as_array();
    items.insert(items.begin() + 1, parse(responses_reasoning));
    const auto pi = convert(input_format::responses, json::serialize(items));
    ASSERT_EQ(pi.size(), 6u);
    const auto& content = pi[1].at("content").as_array();
    ASSERT_EQ(content.size(), 4u);
    EXPECT_EQ(
        content[0],
        parse(
            R"({"type":"thinking","thinking":"Read both.\n\nThen build.","thinkingSignature":)" +
            json::serialize(json::value(std::string(responses_reasoning))) + "}"
        )
    );
    EXPECT_EQ(str(content[3].at("id")), "call_2");
    // Thinking is not sent back; the rest round-trips.
    EXPECT_EQ(json::value(to_responses_input(context_of(pi))), parse(responses_turns));
}

TEST(WireInputResponses, TextAfterCallsOpensTheNextAssistantMessage)
{
    const auto pi = convert(input_format::responses, R"([
      {"type":"function_call","call_id":"c1","name":"ls","arguments":""},
      {"type":"message","role":"assistant","content":[{"type":"output_text","text":"Listed."}]},
      {"type":"message","role":"assistant","content":"More."}])");
    ASSERT_EQ(pi.size(), 3u);
    EXPECT_EQ(
        json::value(pi[0].at("content")),
        parse(R"([{"type":"toolCall","id":"c1","name":"ls","arguments":{}}])")
    );
    EXPECT_EQ(str(pi[0].at("stopReason")), "toolUse");
    EXPECT_EQ(json::value(pi[1].at("content")), parse(R"([{"type":"text","text":"Listed."}])"));
    EXPECT_EQ(json::value(pi[2].at("content")), parse(R"([{"type":"text","text":"More."}])"));
}

TEST(WireInputResponses, UsageAndStatusAreTheResponsesSpelling)
{
    wire_input_options opt;
    opt.usage =
        parse(R"({"input_tokens":5000,"input_tokens_details":{"cached_tokens":4096},"output_tokens":300,
                          "output_tokens_details":{"reasoning_tokens":100},"total_tokens":5300})");
    opt.stop_reason = "incomplete";
    const auto pi = convert(input_format::responses, responses_turns, opt);
    ASSERT_EQ(pi.size(), 6u);
    EXPECT_EQ(
        written(pi[4].at("usage")),
        written_text(R"({"input":904,"output":300,"cacheRead":4096,"cacheWrite":0,"totalTokens":5300,
                        "cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0,"totalFromProvider":false}})"
        )
    );
    EXPECT_EQ(str(pi[4].at("stopReason")), "length");
    EXPECT_EQ(str(pi[4].at("api")), "openai-responses");
    EXPECT_EQ(written(pi[1].at("usage")), zero_usage);
}

TEST(WireInputResponses, MalformedItemsFailTheBatchWithTheFieldPath)
{
    const auto f = input_format::responses;
    EXPECT_EQ(
        failure(f, R"([{"role":"user","content":"a"},{"type":"web_search_call","id":"ws_1"}])"),
        "input[1].type: unsupported item type 'web_search_call'"
    );
    EXPECT_EQ(
        failure(f, R"([{"type":"function_call","call_id":"c","name":"r","arguments":"{oops"}])"),
        "input[0].arguments: not valid JSON"
    );
    EXPECT_EQ(
        failure(f, R"([{"type":"function_call","name":"r","arguments":"{}"}])"),
        "input[0].call_id: required field is missing"
    );
    EXPECT_EQ(
        failure(f, R"([{"type":"reasoning","id":"rs"}])"), "input[0].summary: required field is missing"
    );
    EXPECT_EQ(
        failure(f, R"([{"type":"reasoning","summary":[{"type":"summary_text"}]}])"),
        "input[0].summary[0].text: required field is missing"
    );
    EXPECT_EQ(
        failure(f, R"([{"role":"user","content":[{"type":"input_file","file_id":"f"}]}])"),
        "input[0].content[0].type: unsupported content part 'input_file'"
    );
    EXPECT_EQ(
        failure(
            f,
            R"([{"role":"assistant","content":[{"type":"input_image","image_url":"data:image/png;base64,AA"}]}])"
        ),
        "input[0].content[0].type: unsupported content part 'input_image'"
    );
    EXPECT_EQ(
        failure(f, R"([{"type":"function_call_output","call_id":"c","output":{"text":"x"}}])"),
        "input[0].output: expected a string or an array"
    );
    EXPECT_EQ(failure(f, R"([{"role":"tool","content":"x"}])"), "input[0].role: unsupported role 'tool'");
    EXPECT_EQ(
        failure(f, R"([{"role":"user","content":[{"type":"input_image","image_url":"data:;base64,AA"}]}])"),
        "input[0].content[0].image_url: only base64 data: URLs are accepted (images are not fetched)"
    );
}

// ---- Anthropic ----

TEST(WireInputAnthropic, RoundTripsParallelCallsImagesAndToolErrors)
{
    const auto pi = convert(input_format::anthropic, anthropic_turns);
    ASSERT_EQ(pi.size(), 6u);
    EXPECT_EQ(json::value(pi[3]), parse(R"({"role":"toolResult","toolCallId":"toolu_2","toolName":"bash",
        "content":[{"type":"text","text":"error: make failed"}],"isError":true})"));
    EXPECT_EQ(
        json::value(pi[4]),
        parse(R"({"role":"user","content":[{"type":"text","text":"and keep the tests green"}]})")
    );
    const auto ctx = context_of(pi);
    EXPECT_TRUE(ctx[3].msg->is_error);
    EXPECT_EQ(json::value(to_wire_messages(wire_format::anthropic, ctx)), parse(anthropic_turns));
}

TEST(WireInputAnthropic, ThinkingKeepsItsSignatureAndRedactedThinkingItsData)
{
    auto turns = parse(anthropic_turns).as_array();
    auto& blocks = turns[1].as_object()["content"].as_array();
    blocks.insert(blocks.begin(), parse(R"({"type":"redacted_thinking","data":"EmwKAhgB"})"));
    blocks.insert(
        blocks.begin(),
        parse(R"({"type":"thinking","thinking":"Check both files.","signature":"ErUBCkYIAx"})")
    );
    const auto pi = convert(input_format::anthropic, json::serialize(turns));
    ASSERT_EQ(pi.size(), 6u);
    const auto& content = pi[1].at("content").as_array();
    ASSERT_EQ(content.size(), 5u);
    EXPECT_EQ(
        content[0],
        parse(R"({"type":"thinking","thinking":"Check both files.","thinkingSignature":"ErUBCkYIAx"})")
    );
    EXPECT_EQ(
        content[1],
        parse(
            R"({"type":"thinking","thinking":"[Reasoning redacted]","thinkingSignature":"EmwKAhgB","redacted":true})"
        )
    );
    const auto ctx = context_of(pi);
    EXPECT_TRUE(std::get<compaction::thinking_block>(ctx[1].msg->content.blocks[1]).redacted);
    EXPECT_EQ(json::value(to_wire_messages(wire_format::anthropic, ctx)), parse(anthropic_turns));
}

TEST(WireInputAnthropic, StringContentAndAnthropicUsage)
{
    wire_input_options opt;
    opt.usage = parse(
        R"({"input_tokens":50,"output_tokens":20,"cache_read_input_tokens":1000,"cache_creation_input_tokens":200})"
    );
    opt.stop_reason = "end_turn";
    opt.provider = "anthropic";
    const auto pi = convert(
        input_format::anthropic,
        R"([{"role":"user","content":"hi"},
        {"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"ls","input":{}}]}])",
        opt
    );
    ASSERT_EQ(pi.size(), 2u);
    EXPECT_EQ(json::value(pi[0]), parse(R"({"role":"user","content":"hi"})"));
    EXPECT_EQ(
        written(pi[1].at("usage")),
        written_text(R"({"input":50,"output":20,"cacheRead":1000,"cacheWrite":200,"totalTokens":1270,
                        "cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0,"totalFromProvider":false}})"
        )
    );
    // end_turn with a call still means the model waits for its result.
    EXPECT_EQ(str(pi[1].at("stopReason")), "toolUse");
    EXPECT_EQ(str(pi[1].at("provider")), "anthropic");
    EXPECT_EQ(str(pi[1].at("api")), "anthropic-messages");
    opt.stop_reason = "max_tokens";
    const auto cut = convert(input_format::anthropic, R"([{"role":"assistant","content":"partial"}])", opt);
    ASSERT_EQ(cut.size(), 1u);
    EXPECT_EQ(json::value(cut[0].at("content")), parse(R"([{"type":"text","text":"partial"}])"));
    EXPECT_EQ(str(cut[0].at("stopReason")), "length");
}

TEST(WireInputAnthropic, StringAndMissingToolResultContent)
{
    const auto pi = convert(input_format::anthropic, R"([
        {"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"ls","input":{}},{"type":"tool_use","id":"t2","name":"rm","input":{}}]},
        {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a b"},
                                  {"type":"tool_result","tool_use_id":"t2","is_error":true}]}])");
    ASSERT_EQ(pi.size(), 3u);
    EXPECT_EQ(json::value(pi[1]), parse(R"({"role":"toolResult","toolCallId":"t1","toolName":"ls",
        "content":[{"type":"text","text":"a b"}],"isError":false})"));
    EXPECT_EQ(
        json::value(pi[2]),
        parse(R"({"role":"toolResult","toolCallId":"t2","toolName":"rm","content":[],"isError":true})")
    );
    EXPECT_EQ(
        json::value(to_wire_messages(wire_format::anthropic, context_of(pi))[1]),
        parse(
            R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"a b"}]},
                        {"type":"tool_result","tool_use_id":"t2","content":[],"is_error":true}]})"
        )
    );
}

TEST(WireInputAnthropic, MalformedItemsFailTheBatchWithTheFieldPath)
{
    const auto f = input_format::anthropic;
    EXPECT_EQ(
        failure(
            f, R"([{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"r","input":"{}"}]}])"
        ),
        "messages[0].content[0].input: expected an object, got a string"
    );
    EXPECT_EQ(
        failure(
            f,
            R"([{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://x/y.png"}}]}])"
        ),
        "messages[0].content[0].source.type: only base64 image sources are accepted (images are not fetched)"
    );
    EXPECT_EQ(
        failure(
            f,
            R"([{"role":"user","content":"a"},{"role":"user","content":[{"type":"document","source":{}}]}])"
        ),
        "messages[1].content[0].type: unsupported content block 'document'"
    );
    EXPECT_EQ(
        failure(
            f,
            R"([{"role":"assistant","content":[{"type":"server_tool_use","id":"s","name":"web_search","input":{}}]}])"
        ),
        "messages[0].content[0].type: unsupported content block 'server_tool_use'"
    );
    EXPECT_EQ(
        failure(f, R"([{"role":"system","content":"x"}])"), "messages[0].role: unsupported role 'system'"
    );
    EXPECT_EQ(
        failure(
            f, R"([{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","is_error":"yes"}]}])"
        ),
        "messages[0].content[0].is_error: expected a boolean, got a string"
    );
    EXPECT_EQ(
        failure(
            f,
            R"([{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"tool_use"}]}]}])"
        ),
        "messages[0].content[0].content[0].type: unsupported content block 'tool_use'"
    );
    EXPECT_EQ(
        failure(f, R"([{"role":"assistant","content":[{"type":"thinking","signature":"s"}]}])"),
        "messages[0].content[0].thinking: required field is missing"
    );
    EXPECT_EQ(failure(f, R"([{"role":"user"}])"), "messages[0].content: required field is missing");
}

TEST(WireInput, FormatNames)
{
    for (const auto f : {input_format::openai, input_format::responses, input_format::anthropic})
        EXPECT_EQ(input_format_from_string(to_string(f)), f);
    EXPECT_EQ(input_format_from_string("gemini"), std::nullopt);
}

}  // namespace

// ---- Values a client cannot send ----

TEST(WireInputValues, usage_numbers_arguments_out_of_range_and_malformed_images_are_refused_with_their_paths)
{
    wire_input_options opt;
    opt.usage = json::parse(R"({"input_tokens":10,"output_tokens":-1})");
    EXPECT_EQ(
        failure(input_format::anthropic, R"([{"role":"assistant","content":"a"}])", opt),
        "usage.output_tokens: a token count must be a whole number from 0 to 1000000000000"
    );
    opt.usage = json::parse(R"({"prompt_tokens":10,"prompt_tokens_details":{"cached_tokens":1e13}})");
    EXPECT_EQ(
        failure(input_format::openai, R"([{"role":"assistant","content":"a"}])", opt),
        "usage.prompt_tokens_details.cached_tokens: a token count must be a whole number from 0 to "
        "1000000000000"
    );
    diagnostics diag;
    EXPECT_TRUE(
        check_wire_usage(json::parse(R"({"prompt_tokens":1000000000000,"cost":0.25})").as_object(), diag)
    );
    EXPECT_EQ(
        failure(
            input_format::openai,
            R"([{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\":{\"b\":[1e400]}}"}}]}])"
        ),
        "messages[0].tool_calls[0].function.arguments: a.b[0]: a number out of the range of a double"
    );
    EXPECT_EQ(
        failure(
            input_format::responses,
            R"([{"role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,a*b="}]}])"
        ),
        "input[0].content[0].image_url: not base64 image data"
    );
    EXPECT_EQ(
        failure(
            input_format::anthropic,
            R"([{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"a"}}]}])"
        ),
        "messages[0].content[0].source.data: not base64 image data"
    );
}

// An appended Responses reply with the provider's compaction item (OpenAI inline compaction): the
// item comes back verbatim beside the messages, and only the form that asks for it accepts it.
TEST(WireInputResponses, AReplysCompactionItemIsReturnedVerbatimBesideItsMessages)
{
    const auto f = input_format::responses;
    const auto reply =
        json::parse(R"([{"type":"reasoning","id":"rs_1","summary":[]},)"
                    R"({"type":"compaction","id":"cmp_1","encrypted_content":"ENC"},)"
                    R"({"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok"}]}])"
        );
    diagnostics diag;
    wire_id_paths paths;
    std::optional<wire_compaction_item> item;
    auto pi = from_wire_messages(f, reply, {}, diag, paths, item);
    ASSERT_TRUE(pi.has_value()) << diag.message;
    ASSERT_TRUE(item.has_value());
    EXPECT_EQ(item->item, reply.at(1).as_object());
    EXPECT_EQ(item->path, "input[1]");
    // The reasoning before it is one assistant message; the answer after it opens the next one.
    ASSERT_EQ(pi->size(), 2u);
    EXPECT_EQ(item->messages_before, 1u);
    EXPECT_EQ(pi->at(1).at("content").at(0).at("text"), "ok");

    // Without the out-parameter the item type stays unsupported (it would be dropped otherwise).
    EXPECT_EQ(failure(f, json::serialize(reply)), "input[1].type: unsupported item type 'compaction'");
}

TEST(WireInputResponses, AMalformedCompactionItemFailsTheBatchWithItsPath)
{
    const auto refused = [](std::string_view items) {
        diagnostics diag;
        wire_id_paths paths;
        std::optional<wire_compaction_item> item;
        EXPECT_FALSE(from_wire_messages(input_format::responses, json::parse(items), {}, diag, paths, item));
        EXPECT_FALSE(item.has_value());
        return diag.message;
    };
    const std::string answer = R"({"role":"assistant","content":"ok"})";
    EXPECT_EQ(
        refused(R"([{"type":"compaction"},)" + answer + "]"),
        "input[0].encrypted_content: required field is missing"
    );
    EXPECT_EQ(
        refused(R"([{"type":"compaction","encrypted_content":""},)" + answer + "]"),
        "input[0].encrypted_content: must not be empty"
    );
    EXPECT_EQ(
        refused(
            R"([{"type":"compaction","encrypted_content":"A"},{"type":"compaction","encrypted_content":"B"},)" +
            answer + "]"
        ),
        "input[1].type: a second compaction item (at most one per batch; the first is input[0])"
    );
    EXPECT_EQ(
        refused(R"([{"role":"user","content":"q"},{"type":"compaction","encrypted_content":"A"}])"),
        "input[1]: a compaction item must be followed by the reply's messages"
    );
}
