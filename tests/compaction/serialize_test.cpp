// serialize_conversation (spec §7.1) and the summary prompts (§7.2–§7.3).
#include <agentctx/compaction/json_text.hpp>
#include <agentctx/compaction/serialize.hpp>
#include <agentctx/compaction/summary_prompt.hpp>

#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

using namespace agentctx::compaction;

namespace {

std::shared_ptr<const message> msg(std::string_view json)
{
    diagnostics diag;
    auto m = decode_message(boost::json::parse(json).as_object(), "", diag);
    EXPECT_TRUE(m) << diag.message;
    return std::make_shared<const message>(m ? *m : message{});
}

std::string ser(std::initializer_list<std::shared_ptr<const message>> ms)
{
    std::vector<std::shared_ptr<const message>> v(ms);
    return serialize_conversation(v);
}

std::string tool_result(const std::string& text)
{
    return R"({"role":"toolResult","toolCallId":"c","toolName":"read","content":[{"type":"text","text":")" + text +
           R"("}],"isError":false})";
}

}  // namespace

TEST(serialize, long_tool_results_are_truncated_with_a_marker)
{
    const std::string out = ser({msg(tool_result(std::string(5000, 'x')))});
    EXPECT_EQ(out, "[Tool result]: " + std::string(2000, 'x') + "\n\n[... 3000 more characters truncated]");
}

TEST(serialize, short_tool_results_and_user_assistant_texts_are_never_truncated)
{
    const std::string t(1500, 'y');
    EXPECT_EQ(ser({msg(tool_result(t))}), "[Tool result]: " + t);
    const std::string big(5000, 'z');
    EXPECT_EQ(ser({msg(R"({"role":"user","content":")" + big + R"("})")}), "[User]: " + big);
    EXPECT_EQ(ser({msg(R"({"role":"assistant","content":[{"type":"text","text":")" + big + R"("}]})")}), "[Assistant]: " + big);
}

TEST(serialize, truncation_counts_utf16_units_and_never_splits_a_pair)
{
    // 1999 x then 🚀 (2 units) then 9 more: 2010 units; the cut at 2000 would split the pair, so
    // the head is 1999 units (Pi 1.6 sliceHead; 0.73.1 left a lone surrogate, U+FFFD in UTF-8).
    const std::string text = std::string(1999, 'x') + "🚀" + std::string(9, 'x');
    const std::string out = ser({msg(tool_result(text))});
    EXPECT_EQ(out, "[Tool result]: " + std::string(1999, 'x') + "\n\n[... 10 more characters truncated]");
}

TEST(serialize, surrogate_safe_cut_verified_vector)
{
    // delta §7.1: 1999×x + 🚀 + 99×y (2100 units); the marker still says length − 2000.
    const std::string text = std::string(1999, 'x') + "🚀" + std::string(99, 'y');
    EXPECT_EQ(ser({msg(tool_result(text))}), "[Tool result]: " + std::string(1999, 'x') + "\n\n[... 100 more characters truncated]");
    // A pair ending exactly at unit 2000 is kept whole.
    const std::string whole = std::string(1998, 'x') + "🚀" + std::string(5, 'y');
    EXPECT_EQ(ser({msg(tool_result(whole))}), "[Tool result]: " + std::string(1998, 'x') + "🚀" + "\n\n[... 5 more characters truncated]");
}

TEST(serialize, slice_head_primitive)
{
    EXPECT_EQ(utf16_slice_head("a🚀b", 1), "a");
    EXPECT_EQ(utf16_slice_head("a🚀b", 2), "a");
    EXPECT_EQ(utf16_slice_head("a🚀b", 3), "a🚀");
    EXPECT_EQ(utf16_slice_head("a🚀b", 9), "a🚀b");
    EXPECT_EQ(utf16_slice_head("é€", 1), "é");
}

TEST(serialize, thinking_is_omitted_and_system_messages_ignored)
{
    EXPECT_EQ(ser({msg(R"({"role":"assistant","content":[{"type":"thinking","thinking":"hm"}]})")}), "");
    EXPECT_EQ(ser({msg(R"({"role":"assistant","content":[{"type":"thinking","thinking":"hm"},{"type":"text","text":"ok"}]})")}),
              "[Assistant]: ok");
    // At least one text block, even empty, gives the part.
    EXPECT_EQ(ser({msg(R"({"role":"assistant","content":[{"type":"thinking","thinking":"hm"},{"type":"text","text":""}]})")}),
              "[Assistant]: ");
    EXPECT_EQ(ser({msg(R"({"role":"user","content":"q"})"), msg(R"({"role":"system","content":"You are helpful."})"),
                   msg(R"({"role":"assistant","content":[{"type":"text","text":"a"}]})")}),
              "[User]: q\n\n[Assistant]: a");
}

TEST(serialize, labels_part_order_and_tool_call_format)
{
    const auto a = msg(R"({"role":"assistant","content":[
        {"type":"toolCall","id":"1","name":"read","arguments":{"path":"src/auth.ts","limit":20}},
        {"type":"text","text":"first"},
        {"type":"thinking","thinking":"hmm"},
        {"type":"toolCall","id":"2","name":"bash","arguments":{"command":"ls \"x\"","opts":{"a":[1,true]}}},
        {"type":"text","text":""}]})");
    const auto u = msg(R"({"role":"user","content":[{"type":"text","text":"Fix "},{"type":"image","data":"AA","mimeType":"image/png"},{"type":"text","text":"it"}]})");
    EXPECT_EQ(ser({u, a}),
              "[User]: Fix it\n\n"
              "[Assistant]: first\n\n\n"  // the empty text block still joins with \n
              "[Assistant tool calls]: read(path=\"src/auth.ts\", limit=20); bash(command=\"ls \\\"x\\\"\", opts={\"a\":[1,true]})");
    EXPECT_EQ(ser({msg(R"({"role":"user","content":""})"), msg(R"({"role":"assistant","content":[]})")}), "");
}

TEST(prompts, output_caps)
{
    EXPECT_EQ(history_output_cap(16384), 13107u);
    EXPECT_EQ(turn_prefix_output_cap(16384), 8192u);
    EXPECT_EQ(history_output_cap(16384, 4096), 4096u);
    EXPECT_EQ(turn_prefix_output_cap(10001), 5000u);
}

TEST(prompts, history_prompt_layout)
{
    std::vector<std::shared_ptr<const message>> ms{msg(R"({"role":"user","content":"Fix auth"})")};
    auto p = history_summary_prompt(ms, std::nullopt, std::nullopt, 13107);
    EXPECT_EQ(p.max_output_tokens, 13107u);
    EXPECT_EQ(p.system_prompt, summarization_system_prompt);
    EXPECT_EQ(p.prompt.rfind("<conversation>\n[User]: Fix auth\n</conversation>\n\n", 0), 0u);
    EXPECT_NE(p.prompt.find(initial_summary_instructions), std::string::npos);
    for (const char* section : {"## Goal", "## Constraints & Preferences", "## Progress", "### Done",
                                "### In Progress", "### Blocked", "## Key Decisions", "## Next Steps",
                                "## Critical Context"})
        EXPECT_NE(p.prompt.find(section), std::string::npos) << section;
    EXPECT_EQ(p.prompt.find("<previous-summary>"), std::string::npos);

    p = history_summary_prompt(ms, std::string("OLD"), std::string("focus on tests"), 100);
    EXPECT_NE(p.prompt.find("</conversation>\n\n<previous-summary>\nOLD\n</previous-summary>\n\n"), std::string::npos);
    EXPECT_NE(p.prompt.find(update_summary_instructions), std::string::npos);
    EXPECT_TRUE(p.prompt.ends_with("\n\nAdditional focus: focus on tests"));
}

TEST(prompts, turn_prefix_prompt_layout)
{
    std::vector<std::shared_ptr<const message>> ms{msg(R"({"role":"user","content":"Big task"})")};
    const auto p = turn_prefix_summary_prompt(ms, 8192);
    EXPECT_EQ(p.prompt, "<conversation>\n[User]: Big task\n</conversation>\n\n" + std::string(turn_prefix_instructions));
    for (const char* section : {"## Original Request", "## Early Progress", "## Context for Suffix"})
        EXPECT_NE(p.prompt.find(section), std::string::npos);
}

TEST(prompts, summaries_reach_the_summarizer_as_user_text)
{
    // compactionSummary / bashExecution go through convert_to_llm first.
    std::vector<std::shared_ptr<const message>> ms{
        msg(R"({"role":"compactionSummary","summary":"S","tokensBefore":1})"),
        msg(R"({"role":"bashExecution","command":"ls","output":"a","exitCode":0,"excludeFromContext":true})"),
    };
    const auto p = history_summary_prompt(ms, std::nullopt, std::nullopt, 1);
    EXPECT_NE(p.prompt.find("[User]: The conversation history before this point was compacted"), std::string::npos);
    EXPECT_EQ(p.prompt.find("Ran `ls`"), std::string::npos);  // excluded bash vanishes
}
