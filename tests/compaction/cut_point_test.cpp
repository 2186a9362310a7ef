// Cut points: Pi's rules, and the three deliberate fixes, each against Pi's behaviour.
#include <agentctx/compaction/cut_point.hpp>
#include <agentctx/compaction/prepare.hpp>

#include "session_text.hpp"

#include <gtest/gtest.h>

using namespace agentctx::compaction;
using agentctx::test::session_text;
using agentctx::test::tokens;
namespace json = boost::json;

namespace {

json::object call(std::string_view id, std::string_view name = "read")
{
    return {{"type", "toolCall"}, {"id", id}, {"name", name}, {"arguments", json::object{{"path", "a"}}}};
}

session_text& assistant_calls(session_text& s, std::string_view id, json::array calls)
{
    return s.message(
        id,
        {{"role", "assistant"},
         {"content", calls},
         {"provider", "p"},
         {"model", "m"},
         {"stopReason", "toolUse"}}
    );
}

// u0 a0, then u1 and three tool rounds of 100-token results: u0 a0 u1 a2 r2 a3 r3 a4 r4.
session_text oversized_turn()
{
    session_text s;
    s.user("u0", "earlier").assistant("a0", "done");
    s.user("u1", tokens(10));
    for (int i = 0; i < 3; ++i)
    {
        assistant_calls(s, "a" + std::to_string(2 + i), {call("c" + std::to_string(i))});
        s.tool_result("r" + std::to_string(2 + i), "c" + std::to_string(i), "read", tokens(100));
    }
    return s;
}

}  // namespace

TEST(cut_point, valid_cut_points_exclude_tool_results_and_metadata)
{
    session_text s;
    s.user("u1", "q");
    assistant_calls(s, "a1", {call("c1")});
    s.tool_result("r1", "c1", "read", "out");
    s.entry("model_change", "m1", {{"provider", "p"}, {"modelId", "m"}});
    s.entry("custom_message", "cm", {{"customType", "x"}, {"content", "note"}, {"display", false}});
    s.entry("branch_summary", "b1", {{"fromId", "u1"}, {"summary", "s"}});
    s.message("bx", {{"role", "bashExecution"}, {"command", "ls"}, {"output", ""}, {"exitCode", 0}});
    s.compaction("c9", "u1", "S");
    const auto path = s.path();
    std::vector<bool> valid;
    for (const auto& e : path)
        valid.push_back(is_valid_cut_point(*e));
    EXPECT_EQ(valid, (std::vector<bool>{true, true, false, false, true, true, true, false}));
    EXPECT_EQ(find_turn_start(path, 2, 0), 0u);
    EXPECT_EQ(find_turn_start(path, 4, 0), 4u);  // starts at the index itself
    EXPECT_FALSE(find_turn_start(path, 2, 1));
}

TEST(cut_point, whole_turn_cut_at_a_user_message)
{
    session_text s;
    s.user("u1", tokens(100)).assistant("a1", tokens(100));
    s.user("u2", tokens(100)).assistant("a2", tokens(100));
    const auto path = s.path();
    for (auto mode : {compat_mode::agentctx, compat_mode::pi})
    {
        auto r = find_cut_point(path, 0, path.size(), 200, mode).value();
        EXPECT_EQ(r.crossing_index, 2u);
        EXPECT_EQ(r.first_kept_index, 2u);
        EXPECT_FALSE(r.is_split_turn);
        EXPECT_FALSE(r.turn_start_index);
    }
}

TEST(cut_point, split_turn_when_the_cut_lands_on_an_assistant)
{
    // The oversized-turn example: user, then assistant/tool rounds; kept from 7.
    const session_text s = oversized_turn();
    const auto path = s.path();  // u0 a0 u1 a2 r2 a3 r3 a4 r4
    auto r = find_cut_point(path, 0, path.size(), 150, compat_mode::agentctx).value();
    EXPECT_EQ(r.first_kept_index, 7u);  // a4: crossing at r3 (index 6), next cut point a4
    EXPECT_TRUE(r.is_split_turn);
    EXPECT_EQ(r.turn_start_index, 2u);
    diagnostics diag;
    compaction_settings st;
    st.keep_recent_tokens = 150;
    auto pi = prepare_compaction(path, st, {.mode = compat_mode::pi}, diag).value();
    ASSERT_EQ(pi.messages_to_summarize.size(), 2u);  // u0 a0
    EXPECT_EQ(pi.turn_prefix_messages.size(), 5u);   // u1 a2 r2 a3 r3
    EXPECT_EQ(pi.first_kept_entry_id, "a4");
    // agentctx without the exchange rule: the same cut, and the prompt stays outside the
    // compacted input (carried verbatim).
    st.keep_recent_exchanges = 0;
    auto p = prepare_compaction(path, st, {}, diag).value();
    ASSERT_EQ(p.messages_to_summarize.size(), 2u);  // u0 a0
    EXPECT_EQ(p.turn_prefix_messages.size(), 4u);   // a2 r2 a3 r3
    EXPECT_EQ(p.first_kept_entry_id, "a4");
    ASSERT_EQ(p.pinned.size(), 1u);
    EXPECT_EQ(p.pinned[0].as_object().at("id"), "u1");
    // With it (default 4): the turn has three exchanges, so it is kept whole.
    st.keep_recent_exchanges = 4;
    p = prepare_compaction(path, st, {}, diag).value();
    EXPECT_EQ(p.first_kept_entry_id, "u1");
    EXPECT_FALSE(p.is_split_turn);
}

TEST(cut_point, trailing_tool_results_keep_their_assistant_in_both_modes)
{
    session_text s;
    s.user("u0", tokens(50)).assistant("a0", tokens(50));
    s.user("u1", tokens(50));
    assistant_calls(s, "a1", {call("c1")});
    s.tool_result("r1", "c1", "read", tokens(5000));  // the trailing output alone is over budget
    const auto path = s.path();
    const auto pi = find_cut_point(path, 0, path.size(), 1000, compat_mode::pi).value();
    EXPECT_EQ(pi.crossing_index, 4u);
    // Pi 0.73.1 kept everything here (cuts[0]); Pi 1.6 takes the last cut point, as agentctx did.
    EXPECT_EQ(pi.first_kept_index, 3u);
    EXPECT_TRUE(pi.is_split_turn);
    const auto ours = find_cut_point(path, 0, path.size(), 1000, compat_mode::agentctx).value();
    EXPECT_EQ(ours.first_kept_index, 3u);  // a1 with its result; u0 a0 summarized, u1 is the prefix
    EXPECT_TRUE(ours.is_split_turn);
    EXPECT_EQ(ours.turn_start_index, 2u);
}

TEST(cut_point, fix2_a_prompt_preceded_by_metadata_is_not_a_split_turn)
{
    session_text s;
    s.user("u1", tokens(100)).assistant("a1", tokens(100));
    s.entry("model_change", "m1", {{"provider", "openai"}, {"modelId", "gpt-5"}});
    s.user("u2", tokens(100)).assistant("a2", tokens(100));
    const auto path = s.path();  // u1 a1 m1 u2 a2
    const auto pi = find_cut_point(path, 0, path.size(), 200, compat_mode::pi).value();
    EXPECT_EQ(pi.first_kept_index, 2u);  // widened over m1
    EXPECT_TRUE(pi.is_split_turn);       // Pi: the previous turn becomes a "turn prefix"
    EXPECT_EQ(pi.turn_start_index, 0u);
    const auto ours = find_cut_point(path, 0, path.size(), 200, compat_mode::agentctx).value();
    EXPECT_EQ(ours.first_kept_index, 2u);
    EXPECT_EQ(ours.chosen_index, 3u);
    EXPECT_FALSE(ours.is_split_turn);  // the previous turn goes to the history summary
    diagnostics diag;
    compaction_settings st;
    st.keep_recent_tokens = 200;
    const auto p = prepare_compaction(path, st, {}, diag).value();
    ASSERT_EQ(p.messages_to_summarize.size(), 2u);
    EXPECT_TRUE(p.turn_prefix_messages.empty());
    EXPECT_EQ(p.first_kept_entry_id, "m1");
}

TEST(cut_point, fix3_seed000_boundary_is_4_never_2_or_3)
{
    // 0 old user, 1 assistant with two calls, 2..3 results, 4 recent user.
    session_text s;
    s.user("old-user", tokens(50));
    assistant_calls(s, "tool-round", {call("a"), call("b")});
    s.tool_result("result-a", "a", "read", tokens(50));
    s.tool_result("result-b", "b", "read", tokens(50));
    s.user("recent-user", tokens(50));
    const auto path = s.path();
    EXPECT_EQ(
        allowed_cut_points(path, 0, path.size(), compat_mode::agentctx), (std::vector<std::size_t>{0, 1, 4})
    );
    // Budgets whose walk crosses at index 2 or 3 still cut at a whole-round boundary.
    for (std::int64_t keep : {100, 150})
    {
        const auto r = find_cut_point(path, 0, path.size(), keep, compat_mode::agentctx).value();
        EXPECT_EQ(r.first_kept_index, 4u) << "keep " << keep;
    }
}

TEST(cut_point, fix3_interleaved_round_is_one_interval)
{
    // The result of call b arrives after a later assistant message: Pi may cut at that message and
    // keep result-b without its call.
    session_text s;
    s.user("u0", tokens(50));
    assistant_calls(s, "calls", {call("a"), call("b")});
    s.tool_result("result-a", "a", "read", tokens(50));
    s.assistant("note", tokens(50));
    s.tool_result("result-b", "b", "read", tokens(50));
    s.user("u5", tokens(50));
    const auto path = s.path();
    EXPECT_EQ(
        allowed_cut_points(path, 0, path.size(), compat_mode::pi), (std::vector<std::size_t>{0, 1, 3, 5})
    );
    EXPECT_EQ(
        allowed_cut_points(path, 0, path.size(), compat_mode::agentctx), (std::vector<std::size_t>{0, 1, 5})
    );
    const auto pi = find_cut_point(path, 0, path.size(), 150, compat_mode::pi).value();
    EXPECT_EQ(pi.first_kept_index, 3u);  // keeps result-b, drops its call: an orphan
    const auto ours = find_cut_point(path, 0, path.size(), 150, compat_mode::agentctx).value();
    EXPECT_EQ(ours.first_kept_index, 5u);
    const auto ours_small = find_cut_point(path, 0, path.size(), 50, compat_mode::agentctx).value();
    EXPECT_EQ(ours_small.first_kept_index, 5u);
}

TEST(cut_point, no_allowed_cut_point_is_boundary_unavailable_in_agentctx_mode)
{
    session_text s;
    s.entry("model_change", "m1", {{"provider", "p"}, {"modelId", "m"}});
    s.entry("label", "l1", {{"targetId", "m1"}, {"label", "x"}});
    const auto path = s.path();
    EXPECT_EQ(
        find_cut_point(path, 0, path.size(), 10, compat_mode::agentctx).error(),
        make_error_code(errc::boundary_unavailable)
    );
    EXPECT_EQ(find_cut_point(path, 0, path.size(), 10, compat_mode::pi).value().first_kept_index, 0u);
}

TEST(cut_point, budget_never_reached_keeps_from_the_first_cut_point)
{
    session_text s;
    s.entry("thinking_level_change", "t1", {{"thinkingLevel", "high"}});
    s.user("u1", "small").assistant("a1", "small");
    const auto path = s.path();
    const auto r = find_cut_point(path, 0, path.size(), 50000, compat_mode::agentctx).value();
    EXPECT_FALSE(r.crossing_index);
    EXPECT_EQ(r.first_kept_index, 0u);  // u1, widened over the thinking level change
}

TEST(cut_point, keep_turn_whole_moves_a_split_cut_to_the_turn_start_only_when_the_prefix_is_small)
{
    const session_text s = oversized_turn();
    const auto projected = raw_projected_entries(s.path());  // u0 a0 u1 a2 r2 a3 r3 a4 r4
    const auto split = find_cut_point(projected, 0, projected.size(), 150, compat_mode::agentctx).value();
    ASSERT_TRUE(split.is_split_turn);
    ASSERT_EQ(split.first_kept_index, 7u);
    std::int64_t prefix = 0;  // u1 a2 r2 a3 r3
    for (std::size_t i = 2; i < 7; ++i)
        for (const auto& m : projected[i].messages)
            prefix += static_cast<std::int64_t>(default_token_counter().count(*m));
    const auto whole = keep_turn_whole(projected, 0, split, prefix);
    EXPECT_EQ(whole.first_kept_index, 2u);
    EXPECT_FALSE(whole.is_split_turn);
    EXPECT_FALSE(whole.turn_start_index);
    // One token short: the prefix is summarized as before.
    EXPECT_EQ(keep_turn_whole(projected, 0, split, prefix - 1).first_kept_index, 7u);
    // A turn that starts the range would leave nothing to summarize.
    const auto from_turn = find_cut_point(projected, 2, projected.size(), 150, compat_mode::agentctx).value();
    EXPECT_EQ(keep_turn_whole(projected, 2, from_turn, 1'000'000).first_kept_index, 7u);
    // Through prepare_compaction: whole_turn_tokens keeps the turn, and no prefix is summarized.
    compaction_settings st;
    st.keep_recent_tokens = 150;
    st.keep_recent_exchanges = 0;
    diagnostics diag;
    const auto p = prepare_compaction(s.path(), st, {.whole_turn_tokens = prefix}, diag).value();
    EXPECT_EQ(p.first_kept_entry_id, "u1");
    EXPECT_TRUE(p.turn_prefix_messages.empty());
    EXPECT_EQ(p.messages_to_summarize.size(), 2u);
}
