// Checkpoint quality: the offline summarizer keeps the facts of hand-written sessions, and no forbidden ones.
#include "checkpoint_score.hpp"
#include "quality_transcripts.hpp"

#include <agentctx/compaction/json_text.hpp>
#include <agentctx/compaction/summary_prompt.hpp>
#include <agentctx/providers/offline_summarizer.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>

using namespace agentctx;

namespace {

std::string checkpoint_for(const test::quality_case& c)
{
    const auto prompt =
        compaction::history_summary_prompt(c.transcript.messages, c.previous_summary, std::nullopt, c.cap);
    return providers::offline_summary(prompt).text;
}

std::string report(const std::map<std::string, std::pair<int, int>>& recall)
{
    std::string line = "[ quality ]";
    for (const char* cls :
         {"goal",
          "constraints",
          "decisions",
          "done",
          "unfinished",
          "blockers",
          "paths",
          "commands",
          "errors"})
        if (auto it = recall.find(cls); it != recall.end())
            line += std::string(" ") + cls + " " + std::to_string(it->second.first) + "/" +
                    std::to_string(it->second.second);
    return line;
}

}  // namespace

TEST(offline_quality, every_case_keeps_its_facts_and_no_forbidden_ones)
{
    std::map<std::string, std::pair<int, int>> total;
    int forbidden = 0;
    const auto cases = test::quality_cases();
    ASSERT_GE(cases.size(), 8u);
    for (const auto& c : cases)
    {
        const auto text = checkpoint_for(c);
        const auto s = test::score_checkpoint(text, c.facts);
        if (std::getenv("AGENTCTX_SHOW_CHECKPOINTS"))
            std::cout << "=== " << c.name << "\n" << text << "\n";
        for (const auto& [cls, r] : s.recall)
        {
            total[cls].first += r.first;
            total[cls].second += r.second;
        }
        forbidden += static_cast<int>(s.forbidden_found.size());
        for (const auto& m : s.missing)
            ADD_FAILURE() << c.name << ": missing " << m << "\n---\n" << text;
        for (const auto& f : s.forbidden_found)
            ADD_FAILURE() << c.name << ": forbidden " << f << "\n---\n" << text;
        EXPECT_LE((compaction::utf16_length(text) + 3) / 4, c.cap) << c.name;
    }
    std::cout << report(total) << " forbidden " << forbidden << "\n";
}

TEST(offline_quality, a_recorded_model_reply_is_scored_the_same_way)
{
    const test::checkpoint_facts facts{
        {{"goal", "capacity is zero"}, {"blockers", "ctest"}, {"paths", "src/cache/lru.cpp"}},
        {{"all", "sk-"}}};
    const std::string reply =
        "## Goal\nFix the crash when capacity is zero.\n\n## Progress\n### Done\n- [x] Guarded put()\n\n"
        "### Blocked\n- (none)\n\n## Critical Context\n- src/cache/lru.cpp\n- key sk-live-123";
    const auto s = test::score_checkpoint(reply, facts);
    EXPECT_EQ(s.recall.at("goal"), std::make_pair(1, 1));
    EXPECT_EQ(s.recall.at("blockers"), std::make_pair(0, 1));
    EXPECT_EQ(s.recall.at("paths"), std::make_pair(1, 1));
    ASSERT_EQ(s.forbidden_found.size(), 1u);
    EXPECT_EQ(s.missing, std::vector<std::string>{"blockers: ctest"});
}

TEST(offline_quality, checkpoints_never_cut_a_word_when_trimmed)
{
    for (const auto& c : test::quality_cases())
        for (std::uint32_t cap : {60u, 150u, 300u})
        {
            const auto prompt = compaction::history_summary_prompt(
                c.transcript.messages, c.previous_summary, std::nullopt, cap
            );
            const auto text = providers::offline_summary(prompt).text;
            EXPECT_LE((compaction::utf16_length(text) + 3) / 4, cap) << c.name;
            EXPECT_TRUE(compaction::is_valid_utf8(text)) << c.name;
            EXPECT_EQ(text.find("## Goal\n"), 0u) << c.name << "\n" << text;
        }
}

TEST(offline_quality, a_thousand_round_session_stays_readable_and_within_the_cap)
{
    test::convo c;
    c.user("Make the nightly import job in jobs/import.py idempotent. Never delete rows from the audit table."
    );
    std::string output;
    for (int l = 0; l < 40; ++l)
        output += "line " + std::to_string(l) + ": processed batch without error count=0 failed=0\n";
    for (int i = 0; i < 1000; ++i)
    {
        const auto f = "jobs/step" + std::to_string(i % 50) + ".py";
        if (i % 10 == 9)
            c.run(
                "bash",
                {{"command", "pytest tests/test_import.py -q -k step" + std::to_string(i)}},
                i == 999 ? "E   AssertionError: duplicate row 42\n1 failed" : "3 passed",
                i == 999
            );
        else
            c.run(i % 3 ? "read" : "edit", {{"path", f}, {"oldText", "a\n\"b\""}, {"newText", "c"}}, output);
    }
    const auto prompt = compaction::history_summary_prompt(c.messages, std::nullopt, std::nullopt, 3000);
    const auto text = providers::offline_summary(prompt).text;
    EXPECT_LE((compaction::utf16_length(text) + 3) / 4, 3000u);
    EXPECT_EQ(text.find("## Goal\nMake the nightly import job in jobs/import.py idempotent.\n"), 0u) << text;
    EXPECT_NE(text.find("- Never delete rows from the audit table."), std::string::npos) << text;
    EXPECT_NE(text.find("fails: `E AssertionError: duplicate row 42`"), std::string::npos) << text;
    EXPECT_EQ(text.find("\\n"), std::string::npos) << text;
}
