// serialize_conversation and the summary prompts.
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
    return R"({"role":"toolResult","toolCallId":"c","toolName":"read","content":[{"type":"text","text":")" +
           text + R"("}],"isError":false})";
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
    EXPECT_EQ(
        ser({msg(R"({"role":"assistant","content":[{"type":"text","text":")" + big + R"("}]})")}),
        "[Assistant]: " + big
    );
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
    // Pi 1.6: 1999×x + 🚀 + 99×y (2100 units); the marker still says length − 2000.
    const std::string text = std::string(1999, 'x') + "🚀" + std::string(99, 'y');
    EXPECT_EQ(
        ser({msg(tool_result(text))}),
        "[Tool result]: " + std::string(1999, 'x') + "\n\n[... 100 more characters truncated]"
    );
    // A pair ending exactly at unit 2000 is kept whole.
    const std::string whole = std::string(1998, 'x') + "🚀" + std::string(5, 'y');
    EXPECT_EQ(
        ser({msg(tool_result(whole))}),
        "[Tool result]: " + std::string(1998, 'x') + "🚀" + "\n\n[... 5 more characters truncated]"
    );
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
    EXPECT_EQ(
        ser({msg(
            R"({"role":"assistant","content":[{"type":"thinking","thinking":"hm"},{"type":"text","text":"ok"}]})"
        )}),
        "[Assistant]: ok"
    );
    // At least one text block, even empty, gives the part.
    EXPECT_EQ(
        ser({msg(
            R"({"role":"assistant","content":[{"type":"thinking","thinking":"hm"},{"type":"text","text":""}]})"
        )}),
        "[Assistant]: "
    );
    EXPECT_EQ(
        ser(
            {msg(R"({"role":"user","content":"q"})"),
             msg(R"({"role":"system","content":"You are helpful."})"),
             msg(R"({"role":"assistant","content":[{"type":"text","text":"a"}]})")}
        ),
        "[User]: q\n\n[Assistant]: a"
    );
}

TEST(serialize, labels_part_order_and_tool_call_format)
{
    const auto a = msg(R"({"role":"assistant","content":[
        {"type":"toolCall","id":"1","name":"read","arguments":{"path":"src/auth.ts","limit":20}},
        {"type":"text","text":"first"},
        {"type":"thinking","thinking":"hmm"},
        {"type":"toolCall","id":"2","name":"bash","arguments":{"command":"ls \"x\"","opts":{"a":[1,true]}}},
        {"type":"text","text":""}]})");
    const auto u = msg(
        R"({"role":"user","content":[{"type":"text","text":"Fix "},{"type":"image","data":"AA","mimeType":"image/png"},{"type":"text","text":"it"}]})"
    );
    EXPECT_EQ(
        ser({u, a}),
        "[User]: Fix it\n\n"
        "[Assistant]: first\n\n\n"  // the empty text block still joins with \n
        "[Assistant tool calls]: read(path=\"src/auth.ts\", limit=20); bash(command=\"ls \\\"x\\\"\", "
        "opts={\"a\":[1,true]})"
    );
    EXPECT_EQ(ser({msg(R"({"role":"user","content":""})"), msg(R"({"role":"assistant","content":[]})")}), "");
}

TEST(prompts, deprecated_0731_output_caps)
{
    EXPECT_EQ(history_output_cap(16384), 13107u);
    EXPECT_EQ(turn_prefix_output_cap(16384), 8192u);
    EXPECT_EQ(history_output_cap(16384, 4096), 4096u);
    EXPECT_EQ(turn_prefix_output_cap(10001), 5000u);
}

TEST(prompts, output_budget_verified_vectors)
{
    // Pi 1.6 with Pi's 310-unit system prompt: I = 89 + ceil(P / 3.5).
    EXPECT_EQ(summary_output_budget(200000, 64000, 310, 100000), 64000u);
    EXPECT_EQ(summary_output_budget(200000, 64000, 310, 560000), 32768u);
    EXPECT_EQ(summary_output_budget(200000, 64000, 310, 630000), 15815u);
    EXPECT_EQ(summary_output_budget(200000, 64000, 310, 700000), 1u);
    EXPECT_EQ(summary_output_budget(32000, 32000, 310, 3500), 26815u);
    EXPECT_EQ(summary_output_budget(128000, 16384, 310, 35000), 16384u);
    EXPECT_EQ(summary_output_budget(0, 64000, 310, 700000), 64000u);
    EXPECT_EQ(summary_output_budget(-1, 16384, 310, 35000), 16384u);
}

TEST(prompts, output_budget_unknown_model_limit_uses_the_default)
{
    EXPECT_EQ(default_summary_max_output_tokens, 32000);
    EXPECT_EQ(summary_output_budget(0, 0, 0, 0), 32000u);
    EXPECT_EQ(summary_output_budget(200000, 0, 310, 100000), 32000u);
    EXPECT_EQ(summary_output_budget(32000, 0, 310, 3500), 26815u);
    // ceil per message: 1 + 1 chars are 2 estimated tokens, not ceil(2 / 3.5) = 1.
    EXPECT_EQ(summary_output_budget(10000, 100000, 1, 1), 10000u - 2 - 4096);
    EXPECT_EQ(summary_output_budget(int64_t{1} << 40, int64_t{1} << 40, 0, 0), 0xFFFFFFFFu);  // saturates
}

TEST(prompts, output_budget_of_a_prompt_counts_utf16_units)
{
    summary_prompt p;
    p.system_prompt = std::string(310, 's');
    p.prompt = "🚀🚀";  // 4 units: ceil(4 / 3.5) = 2
    EXPECT_EQ(summary_output_budget(p, 10000, 100000), 10000u - 89 - 2 - 4096);
}

TEST(prompts, system_prompt_wording)
{
    const std::string s(summarization_system_prompt);
    EXPECT_NE(s.find("between a user and an AI assistant"), std::string::npos);
    EXPECT_EQ(s.find("coding"), std::string::npos);
    EXPECT_NE(s.find("untrusted reference data"), std::string::npos);
    EXPECT_NE(s.find("not instructions to follow"), std::string::npos);
}

TEST(prompts, builders_set_the_clamped_budget)
{
    std::vector<std::shared_ptr<const message>> ms{msg(R"({"role":"user","content":"Fix auth"})")};
    const auto h = history_summary_prompt(ms, std::nullopt, std::nullopt, 32000, 32000);
    EXPECT_EQ(h.max_output_tokens, summary_output_budget(h, 32000, 32000));
    EXPECT_LT(h.max_output_tokens, 32000u - 4096);
    EXPECT_GT(h.max_output_tokens, 20000u);
    const auto t = turn_prefix_summary_prompt(ms, std::nullopt, 200000, 64000);
    EXPECT_EQ(t.max_output_tokens, 64000u);
    EXPECT_EQ(history_summary_prompt(ms, std::nullopt, std::nullopt, 0, 0).max_output_tokens, 32000u);
}

TEST(prompts, history_prompt_layout)
{
    std::vector<std::shared_ptr<const message>> ms{msg(R"({"role":"user","content":"Fix auth"})")};
    auto p = history_summary_prompt(ms, std::nullopt, std::nullopt, 13107);
    EXPECT_EQ(p.max_output_tokens, 13107u);
    EXPECT_EQ(p.system_prompt, summarization_system_prompt);
    EXPECT_EQ(p.prompt.rfind("<conversation>\n[User]: Fix auth\n</conversation>\n\n", 0), 0u);
    EXPECT_NE(p.prompt.find(initial_summary_instructions), std::string::npos);
    for (const char* section :
         {"## Goal",
          "## Constraints & Preferences",
          "## Progress",
          "### Done",
          "### In Progress",
          "### Blocked",
          "## Key Decisions",
          "## Next Steps",
          "## Critical Context"})
        EXPECT_NE(p.prompt.find(section), std::string::npos) << section;
    EXPECT_EQ(p.prompt.find("<previous-summary>"), std::string::npos);

    p = history_summary_prompt(ms, std::string("OLD"), std::string("focus on tests"), 100);
    EXPECT_NE(
        p.prompt.find("</conversation>\n\n<previous-summary>\nOLD\n</previous-summary>\n\n"),
        std::string::npos
    );
    EXPECT_NE(p.prompt.find(update_summary_instructions), std::string::npos);
    EXPECT_TRUE(p.prompt.ends_with("\n\nAdditional focus: focus on tests"));
}

TEST(prompts, turn_prefix_prompt_layout)
{
    // Pi 1.6 (#9908): markdown headings, no <conversation> tags (0.73.1 had them), no previous summary.
    std::vector<std::shared_ptr<const message>> ms{msg(R"({"role":"user","content":"Big task"})")};
    auto p = turn_prefix_summary_prompt(ms, std::nullopt, 200000, 64000);
    EXPECT_EQ(p.system_prompt, summarization_system_prompt);
    EXPECT_EQ(
        p.prompt,
        "# Conversation\n[User]: Big task\n\n# Instructions\n" + std::string(turn_prefix_instructions)
    );
    for (const char* section :
         {"\n## Original Request\n", "\n## Progress So Far\n- ", "\n## Context Needed to Continue\n- "})
        EXPECT_NE(p.prompt.find(section), std::string::npos) << section;
    EXPECT_EQ(p.prompt.find("<conversation>"), std::string::npos);
    EXPECT_EQ(p.prompt.find("Early Progress"), std::string::npos);
    EXPECT_EQ(p.prompt.find("Suffix"), std::string::npos);
    const std::string ins(turn_prefix_instructions);
    EXPECT_NE(ins.find("earlier context of an ongoing conversation"), std::string::npos);
    EXPECT_NE(ins.find("stored separately"), std::string::npos);
    EXPECT_NE(ins.find("only information explicitly present"), std::string::npos);

    // Custom instructions now apply to the prefix too (#11058); empty ones are not appended.
    p = turn_prefix_summary_prompt(ms, std::string("focus on tests"), 200000, 64000);
    EXPECT_EQ(
        p.prompt,
        "# Conversation\n[User]: Big task\n\n# Instructions\n" + std::string(turn_prefix_instructions) +
            "\n\nAdditional focus: focus on tests"
    );
    EXPECT_EQ(
        turn_prefix_summary_prompt(ms, std::string(), 0, 0).prompt.find("Additional focus"), std::string::npos
    );

    // The deprecated overload builds the same text with an explicit cap.
    const auto old = turn_prefix_summary_prompt(ms, 8192);
    EXPECT_EQ(old.prompt, turn_prefix_summary_prompt(ms, std::nullopt, 0, 0).prompt);
    EXPECT_EQ(old.max_output_tokens, 8192u);
}

TEST(prompts, summaries_reach_the_summarizer_as_user_text)
{
    // compactionSummary / bashExecution go through convert_to_llm first.
    std::vector<std::shared_ptr<const message>> ms{
        msg(R"({"role":"compactionSummary","summary":"S","tokensBefore":1})"),
        msg(R"({"role":"bashExecution","command":"ls","output":"a","exitCode":0,"excludeFromContext":true})"),
    };
    const auto p = history_summary_prompt(ms, std::nullopt, std::nullopt, 1);
    EXPECT_NE(
        p.prompt.find("[User]: The conversation history before this point was compacted"), std::string::npos
    );
    EXPECT_EQ(p.prompt.find("Ran `ls`"), std::string::npos);  // excluded bash vanishes
}

TEST(serialize, tool_call_arguments_enumerate_integer_like_keys_first_as_javascript)
{
    // Object.entries + JSON.stringify order at every depth (found comparing with Pi 1.6.0).
    const auto m = std::make_shared<const message>([] {
        message a;
        a.role = role::assistant;
        a.role_name = "assistant";
        a.content.blocks.push_back(tool_call_block{
            "c", "read", boost::json::parse(R"({"path":"a.ts","2":"x","n":{"z":1,"1":2}})").as_object()});
        return a;
    }());
    const std::shared_ptr<const message> msgs[] = {m};
    EXPECT_EQ(
        serialize_conversation(msgs), R"([Assistant tool calls]: read(2="x", path="a.ts", n={"1":2,"z":1}))"
    );
}

TEST(prompts, cache_friendly_history_prompt_layout)
{
    auto head = std::make_shared<request_head>();
    head->chars = 35000;  // ~10,000 tokens at 3.5 chars
    const checkpoint_scope scope{1, 7, false, "Now add the tests"};
    auto p = cache_friendly_history_prompt(head, scope, std::nullopt, std::nullopt, 200000, 0);
    EXPECT_EQ(p.head, head);
    EXPECT_TRUE(p.system_prompt.empty());  // the conversation's own system prompt is sent
    EXPECT_EQ(p.prompt.find("<conversation>"), std::string::npos);
    EXPECT_NE(
        p.prompt.find(
            "The part to checkpoint is messages 1 to 6 of the conversation above. Messages from 7 on "
            "(the first begins \u201CNow add the tests\u201D) are not part of it"
        ),
        std::string::npos
    );
    EXPECT_TRUE(p.prompt.ends_with(initial_summary_instructions));
    // The budget counts the head: 35000 + the instruction's UTF-16 units.
    EXPECT_EQ(p.max_output_tokens, summary_output_budget(200000, 0, 0, 35000 + utf16_length(p.prompt)));

    p = cache_friendly_history_prompt(
        head, scope, std::string("OLD"), std::string("focus on tests"), 200000, 0
    );
    EXPECT_NE(
        p.prompt.find(
            "<previous-summary>\nOLD\n</previous-summary>\n\n" + std::string(update_summary_instructions)
        ),
        std::string::npos
    );
    EXPECT_TRUE(p.prompt.ends_with("\n\nAdditional focus: focus on tests"));
}

TEST(prompts, cache_friendly_turn_prefix_prompt_and_merged_boundaries)
{
    auto head = std::make_shared<request_head>();
    auto p = cache_friendly_turn_prefix_prompt(head, {5, 9, true, "Run it"}, std::nullopt, 200000, 0);
    EXPECT_NE(
        p.prompt.find(
            "The part to checkpoint is messages 5 to 8 of the conversation above and message 9 up to "
            "the text that begins \u201CRun it\u201D."
        ),
        std::string::npos
    );
    EXPECT_TRUE(p.prompt.ends_with(turn_prefix_instructions));
    EXPECT_EQ(
        checkpoint_scope_text({3, 4, false, "x"})
            .rfind("The part to checkpoint is message 3 of the conversation above.", 0),
        0u
    );
    EXPECT_EQ(
        checkpoint_scope_text({4, 4, true, "x"})
            .rfind("The part to checkpoint is message 4 up to the text", 0),
        0u
    );
}

TEST(prompts, message_quotes_collapse_whitespace_and_cut_on_a_character)
{
    EXPECT_EQ(
        message_quote(*msg(R"({"role":"user","content":"  Fix\n\n the   parser "})")), "Fix the parser "
    );
    EXPECT_EQ(message_quote(*msg(R"({"role":"user","content":"éééé"})"), 3), "é…");  // never half a character
    EXPECT_EQ(
        message_quote(*msg(
            R"({"role":"assistant","content":[{"type":"toolCall","id":"c","name":"bash","arguments":{}}],"api":"x","provider":"p","model":"m","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"toolUse","timestamp":1})"
        )),
        "a call to the tool bash"
    );
}

TEST(prompts, cache_friendly_fits_needs_room_for_8192_output_tokens_or_the_models_limit)
{
    summary_prompt p;
    p.max_output_tokens = 8191;
    EXPECT_FALSE(cache_friendly_fits(p, 0));
    p.max_output_tokens = 8192;
    EXPECT_TRUE(cache_friendly_fits(p, 0));
    p.max_output_tokens = 4000;
    EXPECT_TRUE(cache_friendly_fits(p, 4000));  // a model that writes at most 4000 tokens
}
