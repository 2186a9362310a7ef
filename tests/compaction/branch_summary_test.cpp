// Branch summaries against Pi 1.6.0: the collected entries, the budgeted preparation, the request and the
// text.
#include <agentctx/compaction/branch_summary.hpp>
#include <agentctx/compaction/token_estimate.hpp>

#include "file_text.hpp"

#include <gtest/gtest.h>

using namespace agentctx::compaction;

namespace {

// tests/fixtures/pi16_branch.jsonl: u1 a1 r1 a2 u2 | a3 r2 m1(custom_message) b1(branch_summary) a4.
session_log fixture()
{
    load_report report;
    diagnostics diag;
    auto log = session_log::load(
        agentctx::test::read_text(AGENTCTX_FIXTURES_DIR "/pi16_branch.jsonl"), {}, report, diag
    );
    EXPECT_TRUE(log) << diag.message;
    return std::move(*log);
}

std::vector<entry_ptr> entries_of(const session_log& log, const std::vector<std::uint32_t>& idx)
{
    std::vector<entry_ptr> out;
    diagnostics diag;
    for (const auto i : idx)
        out.push_back(log.get(i, diag).value());
    return out;
}

std::vector<std::string> ids_of(const session_log& log, const std::vector<std::uint32_t>& idx)
{
    std::vector<std::string> out;
    for (const auto i : idx)
        out.push_back(log.meta(i).id);
    return out;
}

}  // namespace

// Expected values printed by Pi 1.6.0's collectEntriesForBranchSummary / generateBranchSummary on
// the same file (old leaf a4, target u2; the model's text "## Goal\nB").
TEST(branch_summary, collects_from_the_old_leaf_to_the_common_ancestor_as_pi)
{
    const auto log = fixture();
    const auto to_u2 = branch_entries_to_summarize(log, log.find("a4"), *log.find("u2"));
    EXPECT_EQ(ids_of(log, to_u2), (std::vector<std::string>{"a3", "r2", "m1", "b1", "a4"}));
    const auto to_a1 = branch_entries_to_summarize(log, log.find("a4"), *log.find("a1"));
    EXPECT_EQ(ids_of(log, to_a1).front(), "r1");
    EXPECT_TRUE(branch_entries_to_summarize(log, std::nullopt, *log.find("u2")).empty());
}

TEST(branch_summary, the_conversation_instructions_and_text_are_pis_byte_for_byte)
{
    const auto log = fixture();
    const auto entries = entries_of(log, branch_entries_to_summarize(log, log.find("a4"), *log.find("u2")));
    const auto prep = prepare_branch_entries(entries, 200000 - default_branch_reserve_tokens);
    ASSERT_EQ(prep.messages.size(), 4u);  // the tool result is skipped
    const auto p = branch_summary_prompt(prep.messages, std::nullopt, false, 200000, 64000);
    EXPECT_EQ(p.system_prompt, summarization_system_prompt);  // agentctx's, as for compaction requests
    const std::string conversation = "<conversation>\n[Assistant]: Rewriting the lexer.\n\n[Assistant tool "
                                     "calls]: edit(path=\"src/lexer.ts\", "
                                     "oldText=\"a\", newText=\"b\")\n\n[User]: Lexer tests pass.\n\n[User]: "
                                     "The following is a summary of a branch "
                                     "that this conversation came back from:\n\n<summary>\nEarlier detour "
                                     "touched the docs.</summary>\n\n[Assistant]: "
                                     "Approach B is done.\n</conversation>";
    EXPECT_EQ(p.prompt, conversation + "\n\n" + std::string(branch_summary_instructions));
    EXPECT_EQ(p.max_output_tokens, 64000u);
    const auto text = finish_branch_summary("## Goal\nB", prep.file_ops, compat_mode::pi);
    EXPECT_EQ(
        text.summary,
        "The user explored a different conversation branch before returning here.\nSummary of that "
        "exploration:\n\n"
        "## Goal\nB\n\n<read-files>\ndocs/a.md\n</read-files>\n\n<modified-files>\ndocs/b.md\nsrc/lexer.ts\n"
        "</modified-files>"
    );
    EXPECT_EQ(
        text.details,
        (boost::json::value{{"readFiles", {"docs/a.md"}}, {"modifiedFiles", {"docs/b.md", "src/lexer.ts"}}})
    );
    const auto focused = branch_summary_prompt(prep.messages, std::string("the lexer"), false, 200000, 64000);
    EXPECT_TRUE(
        focused.prompt.ends_with(std::string(branch_summary_instructions) + "\n\nAdditional focus: the lexer")
    );
    const auto replaced =
        branch_summary_prompt(prep.messages, std::string("Only list files."), true, 200000, 64000);
    EXPECT_EQ(replaced.prompt, conversation + "\n\nOnly list files.");
}

TEST(branch_summary, the_budget_walks_newest_first_and_lets_a_summary_in_under_ninety_percent)
{
    const auto log = fixture();
    const auto entries = entries_of(log, branch_entries_to_summarize(log, log.find("a4"), *log.find("u2")));
    const auto all = prepare_branch_entries(entries, 0);
    ASSERT_EQ(all.messages.size(), 4u);
    EXPECT_EQ(all.total_tokens, 37);  // Pi: 19 + 5 + 8 + 5
    // a4 alone: the branch summary does not fit, and the total is not under 90% of the budget.
    const auto a4 = static_cast<std::int64_t>(estimate_tokens(*all.messages[3]));
    const auto tight = prepare_branch_entries(entries, a4);
    ASSERT_EQ(tight.messages.size(), 1u);
    EXPECT_EQ(tight.total_tokens, 5);
    // With 90% of the budget still free the branch summary goes in anyway, then the walk stops.
    const auto b1 = static_cast<std::int64_t>(estimate_tokens(*all.messages[2]));
    const auto roomy = prepare_branch_entries(entries, a4 + b1 - 1);
    ASSERT_EQ(roomy.messages.size(), 2u);
    EXPECT_EQ(roomy.messages[0]->role, role::branch_summary);
    EXPECT_EQ(roomy.total_tokens, 13);  // Pi, with a budget of 12
    // The file lists of the branch's own summaries count even when they do not fit.
    EXPECT_TRUE(tight.file_ops.read.contains("docs/a.md"));
}
