// The offline checkpoint of the bundled demo sessions: a real goal, no escape debris, no cut words.
#include <agentctx/compaction/projection.hpp>
#include <agentctx/compaction/session_log.hpp>
#include <agentctx/compaction/summary_prompt.hpp>
#include <agentctx/providers/offline_summarizer.hpp>

#include "checkpoint_score.hpp"

#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <set>
#include <sstream>

using namespace agentctx;

namespace {

using messages = std::vector<std::shared_ptr<const compaction::message>>;

// Every message entry on the active path, in order (the whole history, not the projection).
messages history_of(const std::string& name)
{
    std::ifstream f(std::string(AGENTCTX_EXAMPLES_DIR) + "/sessions/" + name, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    compaction::load_report report;
    compaction::diagnostics diag;
    auto log = compaction::session_log::load(ss.str(), {}, report, diag);
    EXPECT_TRUE(log.has_value()) << name << ": " << diag.message;
    messages out;
    if (!log)
        return out;
    for (auto i : log->active_path())
        if (auto e = log->get(i, diag); e && (*e)->message)
            out.push_back((*e)->message);
    return out;
}

// Runs of letters and digits (bytes >= 0x80 count as letters).
std::set<std::string> words_of(std::string_view s)
{
    std::set<std::string> out;
    std::string cur;
    for (char c : s)
    {
        if (std::isalnum(static_cast<unsigned char>(c)) || static_cast<unsigned char>(c) >= 0x80)
            cur += c;
        else if (!cur.empty())
        {
            out.insert(cur);
            cur.clear();
        }
    }
    if (!cur.empty())
        out.insert(cur);
    return out;
}

// A cut word shows up as a word that is neither in the prompt nor in the checkpoint's own wording.
void expect_whole_words(const std::string& checkpoint, const std::string& prompt)
{
    const auto known = words_of(prompt);
    const auto own = words_of(
        "Goal Constraints Preferences Progress Done In Blocked Key Decisions Next Steps Critical "
        "Context Original Request Early Suffix So Far Needed to Continue none nothing completed yet "
        "Inspected file files and more Edited Wrote passes fails Ran Tried it failed the approach was "
        "changed Fix blocker with latest request targets Reverted Planned Focus Error Command File Ask user "
        "for next task "
        "not stated in summarized messages kept text read only probe probes redacted x"
    );
    for (const auto& w : words_of(checkpoint))
    {
        const bool number = std::all_of(w.begin(), w.end(), [](char c) {
            return std::isdigit(static_cast<unsigned char>(c));
        });
        EXPECT_TRUE(number || known.count(w) || own.count(w)) << "cut or invented word: " << w << "\n---\n"
                                                              << checkpoint;
    }
}

void expect_readable(const std::string& checkpoint, const std::string& prompt)
{
    EXPECT_EQ(checkpoint.find("\\n"), std::string::npos) << checkpoint;
    EXPECT_EQ(checkpoint.find("\\\""), std::string::npos) << checkpoint;
    expect_whole_words(checkpoint, prompt);
}

}  // namespace

TEST(bundled_checkpoint, csv_session_history_gives_a_readable_checkpoint)
{
    const auto history = history_of("csv-export-fix.jsonl");
    ASSERT_GT(history.size(), 100u);
    const auto prompt = compaction::history_summary_prompt(history, std::nullopt, std::nullopt, 13107);
    const auto text = providers::offline_summary(prompt).text;
    expect_readable(text, prompt.prompt);
    const auto goal = test::section_text(text, "## Goal");
    EXPECT_NE(goal.find("The CSV export in src/export/csv.ts drops rows"), std::string::npos) << text;
    EXPECT_EQ(goal.find("/mode"), std::string::npos) << text;
    const test::checkpoint_facts facts{
        {{"constraints", "Keep the public exportCsv() signature unchanged"},
         {"constraints", "keep the tokenizer in its own file"},
         {"decisions", "state-machine tokenizer instead of a regex"},
         {"decisions", "delete the old loop rather than keep it"},
         {"done", "Wrote `src/export/tokenize.ts`"},
         {"done", "`npm run lint` passes"},
         {"blockers", "npm test -- tests/export/csv.test.ts"},
         {"unfinished", "CHANGELOG entry"},
         {"unfinished", "walk the text with the tokenizer"},
         {"errors", "to have a length of 2 but got 3"}},
        {{"done", "grep -n"}, {"decisions", "returns two rows instead of three"}}};
    const auto s = test::score_checkpoint(text, facts);
    EXPECT_TRUE(s.missing.empty()) << ::testing::PrintToString(s.missing) << "\n---\n" << text;
    EXPECT_TRUE(s.forbidden_found.empty()) << ::testing::PrintToString(s.forbidden_found) << "\n---\n"
                                           << text;
}

TEST(bundled_checkpoint, every_bundled_session_in_every_prompt_form)
{
    for (const char* name : {"csv-export-fix.jsonl", "pi16-task.jsonl"})
    {
        const auto history = history_of(name);
        ASSERT_FALSE(history.empty()) << name;
        for (const auto& prompt :
             {compaction::history_summary_prompt(
                  history, std::nullopt, std::string("keep the build commands"), 2000
              ),
              compaction::turn_prefix_summary_prompt(history, 1000)})
        {
            const auto text = providers::offline_summary(prompt).text;
            expect_readable(text, prompt.prompt);
            const auto goal =
                test::section_text(text, "## Goal") + test::section_text(text, "## Original Request");
            EXPECT_FALSE(goal.empty() || goal.front() == '/' || goal.find(' ') == std::string::npos)
                << name << "\n"
                << text;
            EXPECT_LE((text.size() + 3) / 4, prompt.max_output_tokens * 2u) << name;  // bytes >= UTF-16 units
        }
    }
}
