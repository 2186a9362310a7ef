// Summary validation and assembly: every rejection has its code; the split-turn merge is exact.
#include <agentctx/compaction/summary.hpp>

#include <agentctx/compaction/json_text.hpp>

#include "session_text.hpp"

#include <gtest/gtest.h>

using namespace agentctx::compaction;
using agentctx::test::session_text;
using agentctx::test::tokens;

namespace {


errc check(summary_output out, std::uint32_t cap = 100)
{
    diagnostics diag;
    auto r = check_summary_output(out, cap, diag);
    return r ? errc{} : static_cast<errc>(r.error().value());
}

}  // namespace

TEST(summary, rejections)
{
    EXPECT_EQ(check({"## Goal\nok", stop_reason::stop}), errc{});
    EXPECT_EQ(check({"## Goal\ncut off mid-wo", stop_reason::length}), errc::summary_truncated);
    EXPECT_EQ(check({"", stop_reason::error, "HTTP 500"}), errc::summary_failed);
    EXPECT_EQ(check({"partial", stop_reason::aborted}), errc::summary_aborted);
    EXPECT_EQ(check({"", stop_reason::stop}), errc::summary_empty);
    EXPECT_EQ(check({" \n\t ", stop_reason::stop}), errc::summary_empty);
    EXPECT_EQ(check({tokens(101), stop_reason::stop}, 100), errc::summary_too_long);
    EXPECT_EQ(check({tokens(100), stop_reason::stop}, 100), errc{});
}

TEST(summary, split_turn_merge_text)
{
    EXPECT_EQ(merge_split_turn(std::string("H"), "P"), "H\n\n---\n\n**Turn Context (split turn):**\n\nP");
    EXPECT_EQ(merge_split_turn(std::nullopt, "P"), "No prior history.\n\n---\n\n**Turn Context (split turn):**\n\nP");
}

TEST(summary, assembly_appends_file_blocks_and_details)
{
    session_text s;
    s.user("u1", tokens(100)).assistant("a1", tokens(100)).user("u2", tokens(10)).assistant("a2", tokens(10));
    const auto path = s.path();
    compaction_preparation prep;
    prep.first_kept_index = 2;
    prep.first_kept_entry_id = "u2";
    prep.tokens_before = 220;
    prep.file_ops.read = {"r.ts"};
    prep.file_ops.edited = {"e.ts"};
    diagnostics diag;
    const auto r = assemble_compaction(path, prep, std::string("SUMMARY"), std::nullopt, 200000, compaction_settings{}, diag).value();
    EXPECT_EQ(r.summary, "SUMMARY\n\n<read-files>\nr.ts\n</read-files>\n\n<modified-files>\ne.ts\n</modified-files>");
    EXPECT_EQ(stringify(r.details), R"({"readFiles":["r.ts"],"modifiedFiles":["e.ts"]})");
    EXPECT_EQ(r.first_kept_entry_id, "u2");
    EXPECT_EQ(r.tokens_before, 220);
    // summary (83 chars -> 21) + u2 (10) + a2 (10)
    EXPECT_EQ(r.tokens_after, 21 + 10 + 10);
}

TEST(summary, insufficient_reduction_guards_against_compaction_loops)
{
    session_text s;
    s.user("u1", tokens(100)).assistant("a1", tokens(100)).user("u2", tokens(900)).assistant("a2", tokens(50));
    const auto path = s.path();
    compaction_preparation prep;
    prep.first_kept_index = 2;
    prep.first_kept_entry_id = "u2";
    compaction_settings st;
    st.reserve_tokens = 100;
    diagnostics diag;
    // Window 1000, threshold 900: the kept suffix alone is 950.
    auto r = assemble_compaction(path, prep, std::string("S"), std::nullopt, 1000, st, diag);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), make_error_code(errc::insufficient_reduction));
    EXPECT_NE(diag.message.find("threshold of 900"), std::string::npos) << diag.message;
    EXPECT_TRUE(assemble_compaction(path, prep, std::string("S"), std::nullopt, 2000, st, diag));
}

TEST(summary, split_turn_needs_the_prefix_summary)
{
    session_text s;
    s.user("u1", "q").assistant("a1", "r");
    const auto path = s.path();
    compaction_preparation prep;
    prep.is_split_turn = true;
    prep.turn_prefix_messages.push_back({path[0]->message, "u1"});
    prep.first_kept_index = 1;
    diagnostics diag;
    EXPECT_EQ(assemble_compaction(path, prep, std::nullopt, std::nullopt, 0, {}, diag).error(),
              make_error_code(errc::summary_empty));
    const auto r = assemble_compaction(path, prep, std::nullopt, std::string("P"), 0, {}, diag).value();
    EXPECT_EQ(r.summary, "No prior history.\n\n---\n\n**Turn Context (split turn):**\n\nP");
}
