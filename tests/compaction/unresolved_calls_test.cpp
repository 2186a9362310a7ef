// Unresolved tool calls: found exactly, passed by the cut, answered in the request view, running batch
// untouched.
#include <agentctx/compaction/prepare.hpp>
#include <agentctx/compaction/request_view.hpp>
#include <agentctx/compaction/serialize.hpp>
#include <agentctx/compaction/token_estimate.hpp>
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

// u1, an interrupted batch (call_a answered, call_b not), u2, then completed exchanges.
session_text interrupted_then_more_work(int exchanges)
{
    session_text s;
    s.user("u1", "deploy the service");
    s.calls("a1", {"call_a", "call_b"});
    s.tool_result("r1", "call_a", "bash", "built");
    s.user("u2", "the process crashed; carry on");
    for (int i = 0; i < exchanges; ++i)
    {
        const std::string n = std::to_string(i);
        s.tool_call("x" + n, "done_" + n, "bash", {{"command", "step " + n}});
        s.tool_result("y" + n, "done_" + n, "bash", tokens(100));
    }
    s.assistant("fin", "all done");
    return s;
}

}  // namespace

TEST(unresolved_calls, a_call_passed_by_later_input_is_unresolved_and_the_running_batch_is_not)
{
    session_text s = interrupted_then_more_work(1);
    s.calls("run", {"call_running"});  // the host is executing this one now
    const auto ctx = build_session_context(s.path());
    const auto found = find_unresolved_calls(ctx.messages);
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found[0].call_id, "call_b");
    EXPECT_EQ(found[0].tool_name, "bash");
    EXPECT_EQ(found[0].entry_id, "a1");
}

TEST(unresolved_calls, aborted_assistants_have_no_unresolved_calls)
{
    session_text s;
    s.user("u1", "go");
    s.calls("a1", {"call_x"}, "aborted");
    s.user("u2", "again");
    s.calls("a2", {"call_y"}, "error");
    s.assistant("a3", "ok");
    EXPECT_TRUE(find_unresolved_calls(build_session_context(s.path()).messages).empty());
}

TEST(unresolved_calls, the_observation_follows_the_batchs_results_and_says_the_outcome_is_unknown)
{
    const auto ctx = build_session_context(interrupted_then_more_work(1).path());
    const auto view = with_unknown_outcomes(ctx.messages);
    ASSERT_EQ(view.size(), ctx.messages.size() + 1);
    EXPECT_EQ(ids(view), (std::vector<std::string>{"u1", "a1", "r1", "a1", "u2", "x0", "y0", "fin"}));
    const message& obs = *view[3].msg;
    EXPECT_EQ(obs.role, role::tool_result);
    EXPECT_EQ(obs.tool_call_id, "call_b");
    EXPECT_EQ(obs.tool_name, "bash");
    EXPECT_TRUE(obs.is_error);
    const std::string text = content_text(obs.content);
    EXPECT_EQ(text, unknown_outcome_text({"call_b", "bash", "a1"}));
    EXPECT_NE(text.find("outcome is unknown"), std::string::npos);
    EXPECT_NE(text.find("Check the current state before repeating it"), std::string::npos);
    // Pi's wording in pi mode.
    const auto pi = with_unknown_outcomes(ctx.messages, compat_mode::pi);
    EXPECT_EQ(content_text(pi[3].msg->content), "No result provided");
    // History itself is untouched.
    EXPECT_EQ(ctx.messages.size(), 7u);
}

TEST(unresolved_calls, the_cut_passes_an_old_unresolved_call)
{
    const auto s = interrupted_then_more_work(6);
    diagnostics diag;
    const auto p = prepare_compaction(s.path(), keep(250), {}, diag);
    ASSERT_TRUE(p) << diag.message;
    // The interrupted batch and the prompt after it are summarized; the completed work is kept.
    EXPECT_EQ(p->first_kept_entry_id, "x3");
    const auto summarized = ids(p->messages_to_summarize);
    EXPECT_EQ(summarized.front(), "u1");
    EXPECT_NE(std::find(summarized.begin(), summarized.end(), "a1"), summarized.end());
    // The summarizer sees history only: no observation, no do-not-replay instruction, no call id.
    std::vector<std::shared_ptr<const message>> msgs;
    for (const auto& m : p->messages_to_summarize)
        msgs.push_back(m.msg);
    for (const auto& m : p->turn_prefix_messages)
        msgs.push_back(m.msg);
    const std::string serialized = serialize_conversation(msgs);
    EXPECT_EQ(serialized.find("outcome is unknown"), std::string::npos);
    EXPECT_EQ(serialized.find("call_b"), std::string::npos);
}

TEST(unresolved_calls, the_request_view_answers_every_call)
{
    const auto ctx = build_session_context(interrupted_then_more_work(2).path());
    const auto fit = fit_request(ctx, {.max_tokens = 100000});
    std::set<std::string> calls_seen, results_seen;
    for (const auto& m : fit.messages)
    {
        for (const auto& b : m.msg->content.blocks)
            if (const auto* c = std::get_if<tool_call_block>(&b))
                calls_seen.insert(c->id);
        if (m.msg->role == role::tool_result)
            results_seen.insert(m.msg->tool_call_id);
    }
    EXPECT_EQ(calls_seen, results_seen);
    EXPECT_TRUE(calls_seen.contains("call_b"));
    // The observation costs tokens like any result.
    std::int64_t sum = 0;
    for (const auto& m : fit.messages)
        sum += static_cast<std::int64_t>(estimate_tokens(*m.msg));
    EXPECT_EQ(fit.tokens.messages, sum);
}

TEST(unresolved_calls, the_running_batch_is_never_cut_or_answered)
{
    session_text s = interrupted_then_more_work(3);
    s.user("u3", "now run the migration");
    s.calls("run", {"m1", "m2"});
    s.tool_result("m1r", "m1", "bash", tokens(2000));  // m2 still running
    diagnostics diag;
    const auto p = prepare_compaction(s.path(), keep(1), {}, diag);
    ASSERT_TRUE(p) << diag.message;
    EXPECT_EQ(p->first_kept_entry_id, "u3");
    const auto ctx = build_session_context(s.path());
    const auto view = fit_request(ctx, {.max_tokens = 100000});
    for (const auto& m : view.messages)
        EXPECT_NE(m.msg->tool_call_id, "m2");
    EXPECT_EQ(with_unknown_outcomes(ctx.messages).size(), ctx.messages.size() + 1);  // call_b only
}

TEST(unresolved_calls, an_id_reused_after_an_interrupted_call_compacts_and_stays_unresolved)
{
    session_text s;
    s.user("u1", "go");
    s.calls("a1", {"dup"});
    s.user("u2", "again");
    s.calls("a2", {"dup"});
    s.tool_result("r2", "dup", "bash", "ok");
    s.user("u3", tokens(100)).assistant("a3", tokens(100));
    // r2 answers a2, the call of its own batch; a1's call was passed by later input unanswered.
    const auto found = find_unresolved_calls(build_session_context(s.path()).messages);
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found[0].entry_id, "a1");
    diagnostics diag;
    const auto p = prepare_compaction(s.path(), keep(150), {}, diag);
    ASSERT_TRUE(p) << diag.message;
    // a3 (100) and u3 (100) reach 150 at u3: the whole exchange before it is summarized.
    EXPECT_EQ(p->first_kept_entry_id, "u3");
    EXPECT_EQ(ids(p->messages_to_summarize), (std::vector<std::string>{"u1", "a1", "u2", "a2", "r2"}));
}
