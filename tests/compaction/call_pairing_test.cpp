// Tool-call ids matched within their batch: an id reused every turn pairs turn by turn and compacts;
// only live conflicts bound the cut, and they never fail the plan.
#include <agentctx/compaction/call_pairing.hpp>
#include <agentctx/compaction/json_text.hpp>
#include <agentctx/compaction/piece_plan.hpp>
#include <agentctx/compaction/prepare.hpp>
#include <agentctx/compaction/request_view.hpp>
#include <agentctx/compaction/tool_clearing.hpp>
#include <agentctx/compaction/transcript.hpp>
#include <agentctx/compaction/unresolved_calls.hpp>

#include "session_text.hpp"

#include <gtest/gtest.h>

#include <set>

using namespace agentctx::compaction;
using agentctx::test::ids;
using agentctx::test::keep;
using agentctx::test::session_text;
using agentctx::test::tokens;
namespace json = boost::json;

namespace {

// The recorded shape of an OpenAI-compatible backend that numbers calls per response: every
// turn is a prompt, one call `call_0`, its 500-token result and a short answer.
session_text call_0_every_turn(int turns)
{
    session_text s;
    for (int i = 0; i < turns; ++i)
    {
        const auto k = std::to_string(i);
        s.user("u" + k, "step " + k);
        s.tool_call("a" + k, "call_0", "bash", {{"command", "make step " + k}});
        s.tool_result("r" + k, "call_0", "bash", tokens(500));
        s.assistant("f" + k, "done " + k);
    }
    return s;
}

std::size_t index_of(const std::vector<entry_ptr>& path, const std::string& id)
{
    for (std::size_t i = 0; i < path.size(); ++i)
        if (path[i]->id == id)
            return i;
    ADD_FAILURE() << "no entry " << id;
    return path.size();
}

std::vector<pairing_input> inputs(const std::vector<entry_ptr>& path)
{
    std::vector<pairing_input> v;
    for (std::size_t i = 0; i < path.size(); ++i)
        if (path[i]->type == entry_type::message)
            v.push_back({path[i]->message.get(), i});
    return v;
}

}  // namespace

TEST(call_pairing, an_id_reused_every_turn_pairs_turn_by_turn)
{
    const auto path = call_0_every_turn(12).path();
    const auto p = pair_tool_calls(inputs(path));
    ASSERT_EQ(p.declarations.size(), 12u);
    ASSERT_EQ(p.results.size(), 12u);
    EXPECT_TRUE(p.repeated_in_message.empty());
    for (std::size_t k = 0; k < 12; ++k)
    {
        const auto& r = p.results[k];
        EXPECT_EQ(r.kind, result_link_kind::paired) << k;
        EXPECT_FALSE(r.late);
        EXPECT_EQ(r.declaration, k);
        EXPECT_EQ(r.answer, 1u);
        EXPECT_EQ(r.position, index_of(path, "r" + std::to_string(k)));
        EXPECT_EQ(p.declarations[k].position, index_of(path, "a" + std::to_string(k)));
        EXPECT_EQ(p.declarations[k].answers, 1u);
    }
    EXPECT_TRUE(validate_transcript(path).empty());
    // Twelve rounds of two entries each, not one round from the first call to the last result.
    const auto rounds = tool_round_intervals(path, 0, path.size());
    ASSERT_EQ(rounds.size(), 12u);
    for (std::size_t k = 0; k < 12; ++k)
    {
        EXPECT_EQ(rounds[k].first, index_of(path, "a" + std::to_string(k)));
        EXPECT_EQ(rounds[k].last, index_of(path, "r" + std::to_string(k)));
    }
}

TEST(call_pairing, a_session_reusing_call_0_compacts_in_agentctx_mode)
{
    const auto path = call_0_every_turn(12).path();
    diagnostics diag;
    const auto p = prepare_compaction(path, keep(1000), {}, diag);
    ASSERT_TRUE(p) << diag.message;
    // From the end: turn 11 is u11 (2) + a11 (8: "bash" and {"command":"make step 11"}) + r11 (500)
    // + f11 (2) = 512 tokens; f10 makes 514 and r10 crosses 1000 at 1014. The nearest valid cut
    // at or after r10 is f10, which splits turn 10: u10, a10, r10 become the turn prefix.
    EXPECT_EQ(p->first_kept_entry_id, "f10");
    EXPECT_TRUE(p->is_split_turn);
    EXPECT_EQ(ids(p->turn_prefix_messages), (std::vector<std::string>{"u10", "a10", "r10"}));
    EXPECT_EQ(p->messages_to_summarize.size(), 40u);  // turns 0-9, four messages each
    EXPECT_EQ(p->messages_to_summarize.back().entry_id, "f9");
    // Pi never validated: its plan is the same.
    const auto pi = prepare_compaction(path, keep(1000), {.mode = compat_mode::pi}, diag);
    ASSERT_TRUE(pi);
    EXPECT_EQ(pi->first_kept_entry_id, "f10");
}

TEST(call_pairing, an_interrupted_call_stays_unanswered_when_the_next_turn_reuses_its_id)
{
    session_text s;
    s.user("u0", "deploy");
    s.calls("a0", {"call_0"});  // the process crashed while this ran
    s.user("u1", "the process crashed; carry on");
    s.calls("a1", {"call_0"});
    s.tool_result("r1", "call_0", "bash", "deployed");
    s.assistant("f1", "done");
    const auto ctx = build_session_context(s.path());
    const auto open = find_unresolved_calls(ctx.messages);
    ASSERT_EQ(open.size(), 1u);
    EXPECT_EQ(open[0].entry_id, "a0");
    EXPECT_EQ(open[0].call_id, "call_0");
    // The request view answers a0's call with an unknown outcome right after its batch, so every
    // call the provider sees has its result in its own batch.
    const auto view = with_unknown_outcomes(ctx.messages);
    ASSERT_EQ(view.size(), ctx.messages.size() + 1);
    EXPECT_EQ(view[1].entry_id, "a0");
    EXPECT_EQ(view[2].msg->role, role::tool_result);
    EXPECT_EQ(view[2].msg->tool_call_id, "call_0");
    EXPECT_EQ(view[3].entry_id, "u1");
}

TEST(call_pairing, one_id_declared_twice_in_a_message_is_a_barrier_not_a_failure)
{
    session_text s;
    s.user("u0", "check both");
    s.calls("a0", {"dup", "dup"});
    s.tool_result("r0", "dup", "bash", tokens(300)).tool_result("r1", "dup", "bash", tokens(300));
    for (int i = 1; i <= 3; ++i)
    {
        const auto k = std::to_string(i);
        s.user("u" + k, tokens(200)).assistant("f" + k, tokens(200));
    }
    const auto path = s.path();
    const auto issues = validate_transcript(path);
    ASSERT_EQ(issues.size(), 1u);
    EXPECT_EQ(issues[0].kind, transcript_issue_kind::duplicate_call_id);
    EXPECT_EQ(issues[0].entry_id, "a0");
    EXPECT_TRUE(is_barrier(issues[0].kind));
    const auto rounds = tool_round_intervals(path, 0, path.size());
    ASSERT_EQ(rounds.size(), 1u);
    EXPECT_EQ(rounds[0].first, index_of(path, "a0"));
    EXPECT_EQ(rounds[0].last, index_of(path, "r1"));
    // From the end: f3, u3, f2, u2, f1, u1 are 200 tokens each (1200); r1 crosses 1300 at 1500.
    // The nearest valid cut at or after r1 is u1, and everything before it compacts.
    diagnostics diag;
    const auto p = prepare_compaction(path, keep(1300), {}, diag);
    ASSERT_TRUE(p) << diag.message;
    EXPECT_EQ(p->first_kept_entry_id, "u1");
    EXPECT_EQ(ids(p->messages_to_summarize), (std::vector<std::string>{"u0", "a0", "r0", "r1"}));
}

TEST(call_pairing, a_late_result_that_two_open_calls_could_own_spans_both)
{
    session_text s;
    s.user("u0", "start both");
    s.calls("a0", {"dup"});
    s.user("u1", "and again");
    s.calls("a1", {"dup"});
    s.assistant("w", "waiting");
    s.tool_result("late", "dup", "bash", "finished");  // after another assistant: either call's
    s.user("u2", tokens(200)).assistant("f2", tokens(200));
    const auto path = s.path();
    const auto p = pair_tool_calls(inputs(path));
    ASSERT_EQ(p.results.size(), 1u);
    EXPECT_EQ(p.results[0].kind, result_link_kind::ambiguous);
    EXPECT_TRUE(p.results[0].late);
    EXPECT_EQ(p.results[0].reach_from, index_of(path, "a0"));
    const auto issues = validate_transcript(path);
    ASSERT_EQ(issues.size(), 1u);
    EXPECT_EQ(issues[0].kind, transcript_issue_kind::duplicate_call_id);
    EXPECT_EQ(issues[0].entry_id, "late");
    const auto rounds = tool_round_intervals(path, 0, path.size());
    ASSERT_EQ(rounds.size(), 1u);
    EXPECT_EQ(rounds[0].first, index_of(path, "a0"));
    EXPECT_EQ(rounds[0].last, index_of(path, "late"));
    // From the end: f2 and u2 are 200 each, late and w 2 each, a1 6 ("bash" and {"command":"make"}):
    // 410 crosses 405 at a1. a1 lies inside the conflict, so the first cut allowed after it is u2.
    diagnostics diag;
    const auto plan = prepare_compaction(path, keep(405), {}, diag);
    ASSERT_TRUE(plan) << diag.message;
    EXPECT_EQ(plan->first_kept_entry_id, "u2");
    EXPECT_EQ(
        ids(plan->messages_to_summarize), (std::vector<std::string>{"u0", "a0", "u1", "a1", "w", "late"})
    );
}

// Reported, not fatal: a session holding such results (written before the server refused them)
// still compacts, and no cut separates c1 from its answers.
TEST(call_pairing, unique_id_failures_are_reported_and_the_session_still_compacts)
{
    session_text s;
    s.user("u1", tokens(100));
    s.calls("a1", {"c1"});
    s.tool_result("r1", "c1", "bash", "x")
        .tool_result("r2", "c1", "bash", "y")
        .tool_result("r3", "zz", "bash", "z");
    s.tool_result("r4", "c1", "read", "w");
    s.user("u2", tokens(100)).assistant("a2", tokens(100));
    const auto issues = validate_transcript(s.path());
    ASSERT_EQ(issues.size(), 3u);  // r4 is a third answer: reported once, as a name mismatch only
    EXPECT_EQ(issues[0].kind, transcript_issue_kind::call_with_two_results);
    EXPECT_EQ(issues[0].entry_id, "r2");
    EXPECT_EQ(issues[1].kind, transcript_issue_kind::result_without_call);
    EXPECT_EQ(issues[1].entry_id, "r3");
    EXPECT_EQ(issues[2].kind, transcript_issue_kind::name_mismatch);
    EXPECT_EQ(issues[2].entry_id, "r4");
    diagnostics diag;
    const auto r = prepare_compaction(s.path(), keep(200), {}, diag);
    ASSERT_TRUE(r) << diag.message;
    EXPECT_EQ(r->first_kept_entry_id, "u2");
    EXPECT_EQ(ids(r->messages_to_summarize), (std::vector<std::string>{"u1", "a1", "r1", "r2", "r3", "r4"}));
    ASSERT_EQ(r->transcript_issues.size(), 3u);
    EXPECT_EQ(r->transcript_issues[1].entry_id, "r3");
}

TEST(call_pairing, clearing_clears_the_arguments_of_each_results_own_call)
{
    session_text s;
    s.user("u", "write the files");
    for (int i = 1; i <= 5; ++i)
    {
        const auto k = std::to_string(i);
        s.tool_call("a" + k, "call_0", "write", {{"path", "f" + k}, {"content", tokens(1000)}});
        s.tool_result("r" + k, "call_0", "write", tokens(2000));
    }
    s.assistant("done", "ok");
    const auto path = s.path();
    clear_tool_results_settings c;
    c.trigger = {10000, 0};
    c.keep = 3;
    c.clear_at_least = 1000;
    c.clear_all_inputs = true;
    clearing_input in;
    const auto ctx = build_session_context(path).messages;
    in.context = ctx;
    in.context_tokens = 12000;
    in.threshold = 100000;
    in.assistant_content = [&](const std::string& id) -> const json::array* {
        for (const auto& e : path)
            if (e->id == id)
                return &e->raw.at("message").as_object().at("content").as_array();
        return nullptr;
    };
    const auto p = plan_tool_clearing(c, in);
    std::set<std::string> targets;
    for (const auto& e : p.edits)
        targets.insert(e.target_id);
    // r1 and r2 are cleared (the three newest are kept), and with them the arguments of a1 and a2:
    // not a5's, the newest declaration of call_0, whose result is kept.
    EXPECT_EQ(targets, (std::set<std::string>{"a1", "a2", "r1", "r2"}));
    EXPECT_EQ(p.results, 2);
}

TEST(call_pairing, exchange_batches_end_after_each_turns_own_result)
{
    const auto ctx = build_session_context(call_0_every_turn(3).path()).messages;
    const auto batches = exchange_batches(ctx);
    // Each message is its own batch once its round is closed: 12 messages, 3 rounds of two.
    ASSERT_EQ(batches.size(), 9u);
    EXPECT_EQ(batches[1].begin, 1u);
    EXPECT_EQ(batches[1].end, 3u);  // a0 with r0
}
