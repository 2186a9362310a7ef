// simulate_session: a recorded session replayed under a policy and billed with the cost model.
#include "session_text.hpp"

#include <agentctx/runtime/memory_store.hpp>
#include <agentctx/runtime/simulate.hpp>

#include <gtest/gtest.h>

using namespace agentctx;

namespace {

// u1 2,000 tokens; a1 "ok" (1 token, output 100); 59 s later u2 1,000 tokens; a2; 340 s later u3; a3.
test::session_text three_turns()
{
    test::session_text t;
    t.user("u1", std::string(8000, 'x')).assistant("a1", "ok", 2100);
    t.wait(59).user("u2", std::string(4000, 'y')).assistant("a2", "ok", 2100);
    t.wait(340).user("u3", std::string(4000, 'z')).assistant("a3", "ok", 2100);
    return t;
}

compaction::session_log load(const std::string& text)
{
    runtime::memory_store store(text);
    compaction::load_report report;
    compaction::diagnostics diag;
    auto log = store.load({}, report, diag);
    EXPECT_TRUE(log) << diag.message;
    return std::move(*log);
}

compaction::policy_cost simulate(const std::string& text, const runtime::simulate_policy& policy,
                                 runtime::simulate_options options = {})
{
    compaction::diagnostics diag;
    auto cost = runtime::simulate_session(load(text), policy, options, diag);
    EXPECT_TRUE(cost) << diag.message;
    return cost ? *cost : compaction::policy_cost{};
}

}  // namespace

TEST(simulate, without_compaction_each_request_is_billed_through_the_prompt_cache)
{
    const auto cost = simulate(three_turns().text, *runtime::builtin_policy("none"));
    // r1 (t 1): [u1] 2,000 written. r2 (t 62): [u1 a1 u2] 3,001, u1 read from r1's prefix, 1,001
    // written. r3 (t 403): everything expired at 362, 4,002 written.
    EXPECT_EQ(cost.requests, 3);
    EXPECT_EQ(cost.input.read, 2000);
    EXPECT_EQ(cost.input.written, 2000 + 1001 + 4002);
    EXPECT_EQ(cost.input.uncached, 0);
    EXPECT_DOUBLE_EQ(cost.billed_input, 7003 * 1.25 + 2000 * 0.1);
    EXPECT_EQ(cost.agent_output, 300);
    EXPECT_EQ(cost.peak_context, 4002);
    EXPECT_EQ(cost.compactions, 0);
    EXPECT_EQ(cost.summary_requests, 0);
    EXPECT_TRUE(cost.stalls.empty());
    EXPECT_DOUBLE_EQ(cost.cost, ((7003 * 1.25 + 200) * 3.00 + 300 * 15.00) / 1e6);
}

TEST(simulate, recorded_compactions_are_dropped_and_the_policy_makes_its_own)
{
    auto with = three_turns();
    with.compaction("c1", "u2", "## Goal\nrecorded summary", 3000);
    with.user("u4", "next");
    auto without = three_turns();
    without.user("u4", "next");
    const auto a = simulate(with.text, *runtime::builtin_policy("none"));
    const auto b = simulate(without.text, *runtime::builtin_policy("none"));
    EXPECT_EQ(a.input.written, b.input.written);
    EXPECT_EQ(a.input.read, b.input.read);
    EXPECT_EQ(a.requests, b.requests);
}

TEST(simulate, a_compaction_stalls_the_agent_for_its_summary_requests)
{
    for (const char* name : {"agentctx", "pi"})
    {
        auto policy = *runtime::builtin_policy(name);
        policy.settings.reserve_tokens = 1000;
        policy.settings.keep_recent_tokens = 1500;
        runtime::simulate_options options;
        options.context_window = 5000;  // threshold 4,000: a3's request (4,002 + 100 output) crosses it
        const auto cost = simulate(three_turns().text, policy, options);
        SCOPED_TRACE(name);
        EXPECT_EQ(cost.requests, 3);
        EXPECT_EQ(cost.compactions, 1);
        ASSERT_GE(cost.summary_requests, 1);
        ASSERT_EQ(cost.stalls.size(), 1u);
        // Standalone summary requests read nothing and write nothing: all uncached.
        const double expected = 0.5 * static_cast<double>(cost.summary_requests) +
                                static_cast<double>(cost.summarizer_input_tokens) / 5000.0 +
                                static_cast<double>(cost.summary_output) / 60.0;
        EXPECT_NEAR(cost.stalls[0], expected, 1e-9);
        EXPECT_EQ(cost.input.uncached, cost.summarizer_input_tokens);
        EXPECT_GT(cost.summary_output, 0);
    }
}

TEST(simulate, later_requests_carry_the_compacted_context)
{
    auto t = three_turns();
    t.wait(1).user("u4", std::string(400, 'w')).assistant("a4", "ok", 2100);
    auto policy = *runtime::builtin_policy("agentctx");
    policy.settings.reserve_tokens = 1000;
    policy.settings.keep_recent_tokens = 1500;
    runtime::simulate_options options;
    options.context_window = 5000;
    const auto compacted = simulate(t.text, policy, options);
    const auto none = simulate(t.text, *runtime::builtin_policy("none"), options);
    EXPECT_EQ(compacted.requests, 4);
    EXPECT_EQ(none.requests, 4);
    // The fourth request is smaller than without compaction: the summary replaced u1..u2.
    EXPECT_LT(compacted.context_sum, none.context_sum);
    EXPECT_EQ(none.peak_context, 2000 + 1 + 1000 + 1 + 1000 + 1 + 100);
}

// Background on: a2's request (3,001 + 100 output) is over 0.7 × 4,000, so the summary runs from
// a2's check at t 62; a3's check at t 403 commits it, long ready: a compaction with no stall.
// The same session in the foreground stalls a3's check for the whole summary.
TEST(simulate, a_background_compaction_is_billed_but_stalls_only_for_what_is_still_running)
{
    auto policy = *runtime::builtin_policy("agentctx");
    policy.settings.reserve_tokens = 1000;
    policy.settings.keep_recent_tokens = 1500;
    runtime::simulate_options options;
    options.context_window = 5000;
    const auto foreground = simulate(three_turns().text, policy, options);
    policy.settings.background.enabled = true;
    const auto background = simulate(three_turns().text, policy, options);
    EXPECT_EQ(foreground.compactions, 1);
    ASSERT_EQ(foreground.stalls.size(), 1u);
    EXPECT_GT(foreground.stalls[0], 0.5);
    EXPECT_EQ(background.compactions, 1);
    ASSERT_GE(background.summary_requests, 1);
    ASSERT_EQ(background.stalls.size(), 1u);
    EXPECT_EQ(background.stalls[0], 0.0);
    EXPECT_GT(background.summarizer_input_tokens, 0);
    EXPECT_EQ(background.input.uncached, background.summarizer_input_tokens);
}

namespace {

// A prompt, then 24 tool rounds of one 4,000-token read each a minute apart, then the answer.
test::session_text tool_rounds()
{
    test::session_text t;
    t.user("u", "fix the bug");
    for (int i = 1; i <= 24; ++i)
    {
        const auto k = std::to_string(i);
        t.wait(60).tool_call("a" + k, "c" + k, "read", {{"path", "src/f" + k + ".cpp"}});
        t.tool_result("r" + k, "c" + k, "read", std::string(16000, 'x'));
    }
    t.wait(60).assistant("done", "fixed");
    return t;
}

runtime::simulate_policy clearing_policy(bool enabled, std::int64_t clear_at_least = 12000)
{
    auto p = *runtime::builtin_policy("agentctx");
    p.settings.working_budget = compaction::token_amount{};  // 0: clearing alone
    auto& c = p.settings.clear_tool_results;
    c.enabled = enabled;
    c.trigger = {16000, 0};
    c.keep = 2;
    c.clear_at_least = clear_at_least;
    return p;
}

}  // namespace

TEST(simulate, the_agentctx_policy_runs_the_real_clearing_tier)
{
    const auto text = tool_rounds().text;
    const auto with = simulate(text, clearing_policy(true));
    const auto without = simulate(text, clearing_policy(false));
    const auto pi = simulate(text, *runtime::builtin_policy("pi"));
    EXPECT_EQ(with.requests, 25);
    EXPECT_EQ(without.clearing_batches, 0);
    EXPECT_EQ(pi.clearing_batches, 0);
    EXPECT_EQ(with.compactions, 0);
    EXPECT_EQ(with.clearing_batches, 5);
    EXPECT_EQ(with.clearing_tokens, 79460);
    EXPECT_EQ(without.peak_context, 96171);
    EXPECT_EQ(with.peak_context, 20582);
    EXPECT_NEAR(without.billed_input, 230817.6, 1e-6);
    EXPECT_NEAR(with.billed_input, 168815.1, 1e-6);  // 0.73x
    EXPECT_DOUBLE_EQ(pi.billed_input, without.billed_input);
    // clearAtLeast 1,000 instead of 12,000: more, smaller clearings, each a break of the prompt
    // cache that the tokens it frees do not pay back.
    const auto often = simulate(text, clearing_policy(true, 1000));
    EXPECT_EQ(often.clearing_batches, 11);
    EXPECT_NEAR(often.billed_input, 190558.7, 1e-6);
}
