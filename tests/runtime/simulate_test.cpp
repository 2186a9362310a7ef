// simulate_session: a recorded session replayed under a policy and billed with the cost model.
#include "session_text.hpp"

#include <agentctx/compaction/summary_prompt.hpp>
#include <agentctx/compaction/token_estimate.hpp>
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

compaction::policy_cost simulate(
    const std::string& text, const runtime::simulate_policy& policy, runtime::simulate_options options = {}
)
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
        policy.settings.background.enabled = false;  // the foreground compaction (Pi's way)
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
    policy.settings.background.enabled = false;
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

// The agentctx policy runs the runtime's defaults, background compaction included: a2's request
// (3,001 + 100 output) is over 0.7 × 4,000, so the summary runs from a2's check at t 62; a3's
// check at t 403 commits it, long ready: a compaction with no stall. The same session with
// background compaction turned off stalls a3's check for the whole summary.
TEST(simulate, a_background_compaction_is_billed_but_stalls_only_for_what_is_still_running)
{
    auto policy = *runtime::builtin_policy("agentctx");
    policy.settings.reserve_tokens = 1000;
    policy.settings.keep_recent_tokens = 1500;
    runtime::simulate_options options;
    options.context_window = 5000;
    const auto background = simulate(three_turns().text, policy, options);  // the defaults
    policy.settings.background.enabled = false;
    const auto foreground = simulate(three_turns().text, policy, options);
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

namespace {

// u1 2,000 tokens; a1 (1 token, output 100); 59 s later u2 1,000 tokens; a2. A working budget of
// 2,500 compacts at a2's turn end (3,001 input + 100 output), keeping u2 and a2 (keepRecentTokens
// 1,000 is reached at u2): one history request over u1 and a1, made at a2's time (t 62).
test::session_text two_turns(std::string u2 = std::string(4000, 'y'))
{
    test::session_text t;
    t.user("u1", std::string(8000, 'x')).assistant("a1", "ok", 2100);
    t.wait(59).user("u2", u2).assistant("a2", "ok", 2100);
    return t;
}

runtime::simulate_policy budget_policy(std::optional<compaction::summary_request_mode> request)
{
    auto p = *runtime::builtin_policy("agentctx");
    p.settings.working_budget = compaction::token_amount{2500, 0};
    p.settings.keep_recent_tokens = 1000;
    p.settings.summary_request = request;
    p.settings.background.enabled = false;  // one compaction at a2's turn end, as worked out below
    return p;
}

// The instruction message of the cache-friendly request: the checkpoint of messages 1-2 (u1, a1),
// u2 (message 3) kept; its size in tokens (chars/4, rounded up).
std::int64_t instruction_tokens()
{
    compaction::checkpoint_scope scope;
    scope.first = 1;
    scope.kept = 3;
    scope.kept_quote = std::string(100, 'y') + "\u2026";
    const auto p = compaction::cache_friendly_history_prompt(
        std::make_shared<compaction::request_head>(), scope, std::nullopt, std::nullopt, 200000, 32000
    );
    return static_cast<std::int64_t>((compaction::utf16_length(p.prompt) + 3) / 4);
}

}  // namespace

// r1 (t 1): [u1] 2,000 written. r2 (t 62): [u1 a1 u2] 3,001; 2,000 read, 1,001 written. The summary
// request (t 62) is the conversation's request [u1 a1 u2 a2] (3,002) and the instruction message:
// r2's prefix serves 3,001 (read), a2 is written (1), and the instruction message after
// Anthropic's last breakpoint is uncached (351 tokens).
TEST(simulate, a_cache_friendly_summary_request_reads_the_conversations_prefix_from_the_cache)
{
    const auto cost = simulate(two_turns().text, budget_policy(std::nullopt));
    const std::int64_t instr = instruction_tokens();
    EXPECT_EQ(instr, 351);
    EXPECT_EQ(cost.requests, 2);
    EXPECT_EQ(cost.compactions, 1);
    EXPECT_EQ(cost.summary_requests, 1);
    EXPECT_EQ(cost.input.read, 2000 + 3001);
    EXPECT_EQ(cost.input.written, 2000 + 1001 + 1);
    EXPECT_EQ(cost.input.uncached, instr);
    EXPECT_EQ(cost.summarizer_input_tokens, 3002 + instr);
    EXPECT_NEAR(cost.billed_input, 3002 * 1.25 + 5001 * 0.1 + 351, 1e-9);  // 4,603.6
    ASSERT_GT(cost.summary_output, 0);
    EXPECT_DOUBLE_EQ(
        cost.cost,
        ((3002 * 1.25 + 5001 * 0.1 + static_cast<double>(instr)) * 3.00 +
         static_cast<double>(200 + cost.summary_output) * 15.00) /
            1e6
    );
    // 0.5 s + (1 written + the instruction) / 5,000 + 3,001 read / 50,000 + output / 60.
    ASSERT_EQ(cost.stalls.size(), 1u);
    EXPECT_NEAR(
        cost.stalls[0],
        0.5 + static_cast<double>(1 + instr) / 5000.0 + 3001.0 / 50000.0 +
            static_cast<double>(cost.summary_output) / 60.0,
        1e-9
    );
}

// OpenAI caches the whole request: the instruction message is written (at 1.0, as uncached).
TEST(simulate, an_openai_cache_friendly_request_writes_the_instruction_message_too)
{
    runtime::simulate_options options;
    options.prices = *compaction::builtin_price_table("openai");
    const auto cost = simulate(two_turns().text, budget_policy(std::nullopt), options);
    const std::int64_t instr = instruction_tokens();
    EXPECT_EQ(cost.summary_requests, 1);
    EXPECT_EQ(cost.input.read, 2000 + 3001);
    EXPECT_EQ(cost.input.written, 2000 + 1001 + 1 + instr);
    EXPECT_EQ(cost.input.uncached, 0);
    EXPECT_DOUBLE_EQ(cost.billed_input, static_cast<double>(3002 + instr) + 5001 * 0.1);
}

// `summaryRequest: standalone`, a provider whose cache agentctx does not read by default, and a
// window the conversation and the instructions do not fit (as the runtime falls back): the summary
// request is its own system prompt and prompt, billed uncached as before, and its text is the one
// the cache-friendly request gets.
TEST(simulate, a_standalone_summary_request_is_billed_uncached_as_before)
{
    const auto cf = simulate(two_turns().text, budget_policy(std::nullopt));
    const auto sa = simulate(two_turns().text, budget_policy(compaction::summary_request_mode::standalone));
    runtime::simulate_options local;
    local.prices.name = "local";
    const auto other = simulate(two_turns().text, budget_policy(std::nullopt), local);
    runtime::simulate_options small;
    small.context_window = 5000;
    auto reserved = budget_policy(std::nullopt);
    reserved.settings.reserve_tokens = 1000;
    const auto unfit = simulate(two_turns().text, reserved, small);
    for (const auto* c : {&sa, &other, &unfit})
    {
        EXPECT_EQ(c->summary_requests, 1);
        EXPECT_EQ(c->input.read, 2000);
        EXPECT_EQ(c->input.written, 2000 + 1001);
        EXPECT_EQ(c->input.uncached, c->summarizer_input_tokens);
        EXPECT_DOUBLE_EQ(
            c->billed_input, 3001 * 1.25 + 2000 * 0.1 + static_cast<double>(c->summarizer_input_tokens)
        );
    }
    EXPECT_EQ(sa.summarizer_input_tokens, other.summarizer_input_tokens);
    EXPECT_EQ(sa.summary_output, cf.summary_output);
    // The standalone request carries u1 and a1 serialized, the instructions and the system prompt:
    // more than the 1 written + instruction tokens the cache-friendly one pays in full.
    EXPECT_GT(sa.billed_input, cf.billed_input);
}

// The runtime redacts the head: u2 ends with an access key, so the request's u2 is not the
// conversation's and the cache serves only u1 and a1 (2,001 read); u2 and a2 are written.
TEST(simulate, a_redacted_message_ends_what_the_cache_serves_a_cache_friendly_request)
{
    const auto cost = simulate(
        two_turns(std::string(3979, 'y') + " AKIAIOSFODNN7EXAMPLE").text, budget_policy(std::nullopt)
    );
    EXPECT_EQ(cost.summary_requests, 1);
    EXPECT_EQ(cost.input.read, 2000 + 2001);
    EXPECT_EQ(cost.input.written, 2000 + 1001 + 1001);
    EXPECT_EQ(cost.input.uncached, instruction_tokens());
}

// u0 (2,000 tokens), a0 (1), then one turn: u1 (3), six rounds of a read call (5) and its
// 1,000-token result, and the answer `done` (2). The context before `done` is 8,034 tokens; with
// a working budget of 8,100, `done`'s turn end (8,034 + 100 output) compacts inside the turn: a
// history request and a turn-prefix request over one head, the whole conversation (8,036 tokens),
// each with its instruction message (386 and 380 tokens: the rule, the part's positions, the
// instructions and the note on the pinned turn request). The history request reads what `done`'s
// request wrote (8,034) and writes `done` (2); the turn-prefix request, sent after it, reads all
// 8,036. The agent's requests are those of `none`: nothing follows the compaction.
TEST(simulate, a_split_turns_two_cache_friendly_requests_share_the_conversations_prefix)
{
    test::session_text t;
    t.user("u0", std::string(8000, 'a')).assistant("a0", "ok", 2100);
    t.wait(10).user("u1", "fix the bug");
    for (int i = 1; i <= 6; ++i)
    {
        const auto k = std::to_string(i);
        t.wait(5).tool_call("c" + k, "call" + k, "read", {{"path", "f" + k}});
        t.tool_result("r" + k, "call" + k, "read", std::string(4000, 'x'));
    }
    t.wait(5).assistant("done", "fixed", 2100);
    auto policy = *runtime::builtin_policy("agentctx");
    policy.settings.working_budget = compaction::token_amount{8100, 0};
    policy.settings.keep_recent_tokens = 1500;
    policy.settings.clear_tool_results.enabled = false;
    policy.settings.background.enabled = false;  // compacts inside the turn, as worked out above
    const auto cost = simulate(t.text, policy);
    const auto none = simulate(t.text, *runtime::builtin_policy("none"));
    EXPECT_EQ(none.peak_context, 8034);
    EXPECT_EQ(cost.compactions, 1);
    EXPECT_EQ(cost.summary_requests, 2);
    EXPECT_EQ(cost.requests, none.requests);
    EXPECT_EQ(cost.input.read - none.input.read, 8034 + 8036);
    EXPECT_EQ(cost.input.written - none.input.written, 2);
    EXPECT_EQ(cost.input.uncached, 386 + 380);
    EXPECT_EQ(cost.summarizer_input_tokens, 2 * 8036 + 386 + 380);
    EXPECT_NEAR(cost.billed_input - none.billed_input, (8034 + 8036) * 0.1 + 2 * 1.25 + 386 + 380, 1e-6);
}

namespace {

// tool_rounds() with a thinking block of `chars` characters before every call.
test::session_text thinking_rounds(std::size_t chars)
{
    test::session_text t;
    t.user("u", "fix the bug");
    for (int i = 1; i <= 24; ++i)
    {
        const auto k = std::to_string(i);
        t.wait(60).message(
            "a" + k,
            {{"role", "assistant"},
             {"content",
              boost::json::array{
                  boost::json::object{
                      {"type", "thinking"},
                      {"thinking", std::string(chars, 't')},
                      {"thinkingSignature", "s" + k}},
                  boost::json::object{
                      {"type", "toolCall"},
                      {"id", "c" + k},
                      {"name", "read"},
                      {"arguments", boost::json::object{{"path", "src/f" + k + ".cpp"}}}}}},
             {"api", "anthropic-messages"},
             {"provider", "anthropic"},
             {"model", "claude-sonnet-4-5"},
             {"stopReason", "toolUse"}}
        );
        t.tool_result("r" + k, "c" + k, "read", std::string(16000, 'x'));
    }
    t.wait(60).assistant("done", "fixed");
    return t;
}

}  // namespace

TEST(simulate, each_policy_counts_the_recorded_reasoning_its_prefix_breaks_leave_behind_an_edit)
{
    const auto text = thinking_rounds(40).text;
    const auto with = simulate(text, clearing_policy(true));
    const auto without = simulate(text, clearing_policy(false));
    const auto none = simulate(text, *runtime::builtin_policy("none"));
    ASSERT_GT(with.clearing_batches, 0);
    EXPECT_GT(with.reasoning_lost, 0);   // each clearing costs the thinking made after its first edit
    EXPECT_LE(with.reasoning_lost, 24);  // a block is lost once
    EXPECT_EQ(without.reasoning_lost, 0);
    EXPECT_EQ(none.reasoning_lost, 0);
    EXPECT_EQ(with.to_json().at("reasoningLost"), with.reasoning_lost);
}
