// The offline summarizer: six sections from the transcript, deterministic, within the cap.
#include <agentctx/compaction/json_text.hpp>
#include <agentctx/compaction/llm_convert.hpp>
#include <agentctx/compaction/serialize.hpp>
#include <agentctx/compaction/summary_prompt.hpp>
#include <agentctx/providers/offline_summarizer.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

using namespace agentctx;

namespace {

std::shared_ptr<const compaction::message> msg(std::string_view json)
{
    compaction::diagnostics diag;
    return std::make_shared<const compaction::message>(
        compaction::decode_message(boost::json::parse(json).as_object(), "", diag).value()
    );
}

std::vector<std::shared_ptr<const compaction::message>> transcript()
{
    return {
        msg(R"({"role":"user","content":"Fix the CRLF bug in src/parser.ts. You must never change the public API. I prefer small commits."})"
        ),
        msg(R"({"role":"assistant","content":[{"type":"text","text":"I will read the parser first because the bug is in split()."},{"type":"toolCall","id":"1","name":"read","arguments":{"path":"src/parser.ts"}}]})"
        ),
        msg(R"({"role":"toolResult","toolCallId":"1","toolName":"read","content":[{"type":"text","text":"export function parse(s) { return s.split('\n'); }"}],"isError":false})"
        ),
        msg(R"({"role":"assistant","content":[{"type":"toolCall","id":"2","name":"bash","arguments":{"command":"npm test"}}]})"
        ),
        msg(R"({"role":"toolResult","toolCallId":"2","toolName":"bash","content":[{"type":"text","text":"FAIL tests/parser.test.ts\nError: expected 2 lines, got 1"}],"isError":true})"
        ),
        msg(R"({"role":"user","content":"Now add a regression test for Windows line endings."})"),
        msg(R"({"role":"assistant","content":[{"type":"toolCall","id":"3","name":"write","arguments":{"path":"tests/crlf.test.ts","content":"..."}}]})"
        ),
    };
}

}  // namespace

TEST(offline_summarizer, fills_the_six_sections_from_the_transcript)
{
    const auto prompt =
        compaction::history_summary_prompt(transcript(), std::nullopt, std::string("keep it short"), 13107);
    const auto out = providers::offline_summary(prompt);
    EXPECT_EQ(out.stop, compaction::stop_reason::stop);
    const auto& t = out.text;
    for (const char* s :
         {"## Goal\nFix the CRLF bug in src/parser.ts.\n",
          "## Constraints & Preferences\n- You must never change the public API.",
          "- I prefer small commits.",
          "### Done\n- [x] Inspected 1 file: src/parser.ts",
          "### In Progress\n- [ ] write `tests/crlf.test.ts`",
          "### Blocked\n- `npm test` fails: `FAIL tests/parser.test.ts`",
          "Continue with the latest request: Now add a regression test for Windows line endings.",
          "Focus: keep it short",
          "- File: `src/parser.ts`",
          "- File: `tests/crlf.test.ts`",
          "- Command: `npm test`",
          "- Error: `Error: expected 2 lines, got 1`"})
        EXPECT_NE(t.find(s), std::string::npos) << s << "\n---\n" << t;
    EXPECT_EQ(t.find("## Goal"), 0u);
    EXPECT_LT(t.find("## Key Decisions"), t.find("## Critical Context"));
}

TEST(offline_summarizer, keeps_the_previous_goal_and_done_items)
{
    const std::string previous =
        "## Goal\nShip the parser rewrite.\n\n## Constraints & Preferences\n- Keep Node 18 support.\n\n"
        "## Progress\n### Done\n- [x] Benchmarked the old parser\n\n### In Progress\n- [ ] (none)";
    const auto prompt = compaction::history_summary_prompt(transcript(), previous, std::nullopt, 13107);
    const auto t = providers::offline_summary(prompt).text;
    EXPECT_NE(t.find("## Goal\nShip the parser rewrite."), std::string::npos) << t;
    EXPECT_NE(t.find("- Keep Node 18 support."), std::string::npos);
    EXPECT_NE(
        t.find("- [x] Benchmarked the old parser\n- [x] Inspected 1 file: src/parser.ts"), std::string::npos
    );
}

TEST(offline_summarizer, turn_prefix_sections)
{
    const auto prompt = compaction::turn_prefix_summary_prompt(transcript(), 8192);
    const auto t = providers::offline_summary(prompt).text;
    EXPECT_EQ(t.find("## Original Request\nFix the CRLF bug"), 0u) << t;
    // Pi 1.6's turn-prefix headings.
    EXPECT_NE(t.find("## Progress So Far\n- [x] Inspected 1 file: src/parser.ts"), std::string::npos) << t;
    EXPECT_NE(t.find("## Context Needed to Continue"), std::string::npos);
}

TEST(offline_summarizer, stays_within_the_output_cap_and_is_deterministic)
{
    auto msgs = transcript();
    for (int i = 0; i < 200; ++i)
        msgs.push_back(
            msg(R"({"role":"user","content":"You must always check src/file)" + std::to_string(i) +
                R"(.ts before editing."})")
        );
    for (std::uint32_t cap : {40u, 200u, 2000u})
    {
        const auto prompt = compaction::history_summary_prompt(msgs, std::nullopt, std::nullopt, cap);
        const auto a = providers::offline_summary(prompt);
        const auto b = providers::offline_summary(prompt);
        EXPECT_EQ(a.text, b.text);
        EXPECT_LE((compaction::utf16_length(a.text) + 3) / 4, cap) << cap;
        EXPECT_FALSE(a.text.empty());
    }
}

TEST(offline_summarizer, completes_through_the_executor_and_names_itself)
{
    boost::asio::io_context ioc;
    providers::offline_summarizer s(ioc.get_executor());
    EXPECT_EQ(s.name(), "offline");
    bool done = false;
    s.async_summarize(
        compaction::history_summary_prompt(transcript(), std::nullopt, std::nullopt, 500),
        [&](boost::system::error_code ec, compaction::summary_output out) {
            EXPECT_FALSE(ec);
            EXPECT_NE(out.text.find("## Goal"), std::string::npos);
            done = true;
        }
    );
    EXPECT_FALSE(done);  // never inline
    ioc.run();
    EXPECT_TRUE(done);
}

TEST(offline_summarizer, reads_the_markdown_turn_prefix_form_with_its_new_headings)
{
    const auto msgs = transcript();
    compaction::summary_prompt prompt;
    prompt.prompt =
        "# Conversation\n" +
        compaction::serialize_conversation(compaction::convert_to_llm(msgs, compaction::summary_framing::pi)
        ) +
        "\n\n# Instructions\nSummarize the first part of the turn:\n\n## Original Request\n[…]\n\n"
        "## Progress So Far\n- […]\n\n## Context Needed to Continue\n- […]\n";
    prompt.max_output_tokens = 4000;
    const auto t = providers::offline_summary(prompt).text;
    EXPECT_EQ(t.find("## Original Request\nFix the CRLF bug in src/parser.ts."), 0u) << t;
    EXPECT_NE(t.find("## Progress So Far\n- [x] Inspected 1 file: src/parser.ts"), std::string::npos) << t;
    EXPECT_NE(
        t.find("## Context Needed to Continue\n- Error: `Error: expected 2 lines, got 1`"), std::string::npos
    ) << t;
    EXPECT_EQ(t.find("Early Progress"), std::string::npos);
}

TEST(offline_summarizer, decodes_tool_call_arguments_instead_of_copying_escapes)
{
    const std::vector<std::shared_ptr<const compaction::message>> msgs{
        msg(R"({"role":"user","content":"Count the TODO markers in the sources."})"),
        msg(R"({"role":"assistant","content":[{"type":"toolCall","id":"1","name":"bash","arguments":{"command":"rg -c \"TODO\" src\n| sort","timeout":30}}]})"
        ),
        msg(R"({"role":"toolResult","toolCallId":"1","toolName":"bash","content":[{"type":"text","text":"src/a.ts:2"}],"isError":false})"
        ),
        msg(R"({"role":"assistant","content":[{"type":"toolCall","id":"2","name":"bash","arguments":{"command":"make check TARGET=\"unit tests\""}}]})"
        ),
        msg(R"({"role":"toolResult","toolCallId":"2","toolName":"bash","content":[{"type":"text","text":"error: no rule to make target \"unit tests\""}],"isError":true})"
        ),
    };
    const auto t =
        providers::offline_summary(compaction::history_summary_prompt(msgs, std::nullopt, std::nullopt, 4000))
            .text;
    EXPECT_NE(t.find("- Command: `make check TARGET=\"unit tests\"`"), std::string::npos) << t;
    EXPECT_NE(t.find("- [x] Ran 1 read-only probe\n"), std::string::npos) << t;  // rg | sort only reads
    EXPECT_EQ(t.find("Command: `rg"), std::string::npos) << t;
    EXPECT_EQ(t.find("\\n"), std::string::npos) << t;
    EXPECT_EQ(t.find("\\\""), std::string::npos) << t;
}

TEST(offline_summarizer, an_empty_transcript_keeps_the_previous_checkpoint)
{
    const std::string previous =
        "## Goal\nShip the parser rewrite.\n\n## Constraints & Preferences\n- Keep Node 18 support.";
    const auto t =
        providers::offline_summary(compaction::history_summary_prompt({}, previous, std::nullopt, 2000)).text;
    EXPECT_EQ(t.find("## Goal\nShip the parser rewrite.\n"), 0u) << t;
    EXPECT_NE(t.find("- Keep Node 18 support."), std::string::npos) << t;
}
