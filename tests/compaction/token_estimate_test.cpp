// estimate_tokens: chars/4 rounded up, per-role rules, UTF-16 lengths.
#include <agentctx/compaction/message.hpp>
#include <agentctx/compaction/token_estimate.hpp>

#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

using namespace agentctx::compaction;

namespace {

message msg(std::string_view json)
{
    diagnostics diag;
    auto m = decode_message(boost::json::parse(json).as_object(), "message", diag);
    EXPECT_TRUE(m.has_value()) << diag.message;
    return m ? *m : message{};
}

}  // namespace

TEST(token_estimate, user_string_rounds_up)
{
    EXPECT_EQ(estimate_tokens(msg(R"({"role":"user","content":"abcde"})")), 2u);  // ceil(5/4)
    EXPECT_EQ(estimate_tokens(msg(R"({"role":"user","content":"abcd"})")), 1u);
    EXPECT_EQ(estimate_tokens(msg(R"({"role":"user","content":""})")), 0u);
}

TEST(token_estimate, user_and_tool_result_images_count_4800_as_pi_1_6)
{
    // Pi 1.6: user [text "abcd", image] -> 1201 (0.73.1: 1); user [image] -> 1200.
    const auto user = msg(
        R"({"role":"user","content":[{"type":"text","text":"abcd"},{"type":"image","data":"AAAA","mimeType":"image/png"}]})"
    );
    EXPECT_EQ(estimate_tokens(user), 1201u);
    const auto image_only =
        msg(R"({"role":"user","content":[{"type":"image","data":"AAAA","mimeType":"image/png"}]})");
    EXPECT_EQ(estimate_tokens(image_only), 1200u);
    const auto tool = msg(
        R"({"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"abcd"},{"type":"image","data":"AAAA","mimeType":"image/png"}],"isError":false})"
    );
    EXPECT_EQ(estimate_chars(tool), 4804u);
    EXPECT_EQ(estimate_tokens(tool), 1201u);
    const auto custom = msg(
        R"({"role":"custom","customType":"x","content":[{"type":"image","data":"AA","mimeType":"image/png"}],"display":true})"
    );
    EXPECT_EQ(estimate_chars(custom), 4800u);
}

TEST(token_estimate, assistant_counts_text_thinking_and_tool_calls_as_name_plus_json)
{
    // {"path":"a","offset":1} is 23 characters; "read" adds 4.
    const auto a = msg(
        R"({"role":"assistant","content":[{"type":"toolCall","id":"c","name":"read","arguments":{"path":"a","offset":1}}]})"
    );
    EXPECT_EQ(estimate_chars(a), 27u);
    EXPECT_EQ(estimate_tokens(a), 7u);
    const auto b = msg(
        R"({"role":"assistant","content":[{"type":"thinking","thinking":"hmm","redacted":true},{"type":"text","text":"ok"}]})"
    );
    EXPECT_EQ(estimate_chars(b), 5u);
}

TEST(token_estimate, lengths_are_utf16_units)
{
    // 🚀 is 2 units, each CJK character 1, é 1: "🚀日本語é" = 6 units -> 2 tokens.
    EXPECT_EQ(estimate_chars(msg(R"({"role":"user","content":"🚀日本語é"})")), 6u);
    EXPECT_EQ(estimate_tokens(msg(R"({"role":"user","content":"🚀日本語é"})")), 2u);
    // Tool-call arguments are measured after JSON.stringify, which keeps non-ASCII raw.
    const auto a = msg(
        R"({"role":"assistant","content":[{"type":"toolCall","id":"c","name":"r","arguments":{"p":"🚀"}}]})"
    );
    EXPECT_EQ(estimate_chars(a), 1u + 10u);  // r + {"p":"🚀"} (8 ASCII + 2 units)
}

TEST(token_estimate, bash_and_summaries)
{
    EXPECT_EQ(
        estimate_chars(msg(
            R"({"role":"bashExecution","command":"ls","output":"a b","exitCode":0,"cancelled":false,"truncated":false,"excludeFromContext":true})"
        )),
        5u
    );
    EXPECT_EQ(
        estimate_chars(msg(R"({"role":"compactionSummary","summary":"12345678","tokensBefore":5})")), 8u
    );
    EXPECT_EQ(estimate_chars(msg(R"({"role":"branchSummary","summary":"123","fromId":"x"})")), 3u);
    EXPECT_EQ(estimate_chars(msg(R"({"role":"somethingNew","content":"ignored"})")), 0u);
}

TEST(token_estimate, system_messages_count_content_sections_and_tools_json)
{
    // Pi 1.6: ceil((4 + 5 + 51) / 4) = 15; {content:"", toolsAdded:[]} -> 1 ("[]").
    const auto s = msg(
        R"({"role":"system","content":"abcd","sections":{"a":"12345","b":null,"c":""},"toolsAdded":[{"name":"read","description":"d","parameters":{}}],"timestamp":1})"
    );
    EXPECT_EQ(estimate_tokens(s), 15u);
    const auto empty = msg(R"({"role":"system","content":"","toolsAdded":[],"timestamp":1})");
    EXPECT_EQ(estimate_tokens(empty), 1u);
    const auto removed_only =
        msg(R"({"role":"system","content":"","toolsRemoved":[{"name":"write"}],"timestamp":1})");
    EXPECT_EQ(estimate_tokens(removed_only), 0u);
}
