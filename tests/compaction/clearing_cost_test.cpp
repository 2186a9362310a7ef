// price_clearing: the cache rewrite a clearing causes against the reads its results already cost.
#include <agentctx/compaction/clearing_cost.hpp>
#include <agentctx/compaction/projection.hpp>
#include <agentctx/compaction/tool_clearing.hpp>

#include "session_text.hpp"

#include <gtest/gtest.h>

using namespace agentctx::compaction;
using agentctx::test::session_text;
using agentctx::test::tokens;
namespace json = boost::json;

namespace {

// A prompt, one read per size (the results in this order), then a final answer unless `running`.
std::vector<context_message> reads_of(const std::vector<std::size_t>& sizes, bool running = false)
{
    session_text s;
    s.user("u", "review the modules");
    for (std::size_t i = 0; i < sizes.size(); ++i)
    {
        const auto k = std::to_string(i + 1);
        s.tool_call("a" + k, "c" + k, "read", json::object{{"path", "src/m" + k + ".ts"}});
        s.tool_result("r" + k, "c" + k, "read", tokens(sizes[i]));
    }
    if (!running)
        s.assistant("done", "reviewed");
    return build_session_context(s.path()).messages;
}

clearing_plan plan_of(const std::vector<context_message>& ctx, std::int64_t keep)
{
    clear_tool_results_settings c;
    c.trigger = {1, 0};
    c.keep = keep;
    c.clear_at_least = 1;
    clearing_input in;
    in.context = ctx;
    in.context_tokens = 100000;
    in.threshold = 100000;
    return plan_tool_clearing(c, in);
}

const price_table anthropic = *builtin_price_table("anthropic");

}  // namespace

// The tail runs from the first cleared result to the end, as it is after the edits; each cleared
// result has been read by every request after `keep` newer tool uses existed.
TEST(clearing_cost, counts_the_tail_and_the_reads_each_cleared_result_cost)
{
    const auto ctx = reads_of({3000, 2000, 1000, 500});  // u a1 r1 a2 r2 a3 r3 a4 r4 done
    const auto plan = plan_of(ctx, 1);
    ASSERT_EQ(plan.edits.size(), 3u);  // r1..r3; r4 is the kept tool use
    const auto cost = price_clearing(ctx, plan, 1, anthropic);
    std::int64_t tail = 0;
    for (std::size_t i = 2; i < ctx.size(); ++i)
        tail += static_cast<std::int64_t>(default_token_counter().count(*ctx[i].msg));
    EXPECT_EQ(cost.tail_tokens, tail - plan.tokens);
    EXPECT_DOUBLE_EQ(cost.rewrite, static_cast<double>(cost.tail_tokens) * (1.25 - 0.1));
    // r1 became clearable when r2 existed: read by a3, a4 and done; r2 by a4 and done; r3 by done.
    const double reads =
        static_cast<double>(plan.edits[0].tokens * 3 + plan.edits[1].tokens * 2 + plan.edits[2].tokens * 1);
    EXPECT_DOUBLE_EQ(cost.reads_paid, reads * 0.1);
    // With keep 2, r1 became clearable only at r3: read by a4 and done.
    const auto plan2 = plan_of(ctx, 2);
    ASSERT_EQ(plan2.edits.size(), 2u);
    EXPECT_DOUBLE_EQ(
        price_clearing(ctx, plan2, 2, anthropic).reads_paid,
        static_cast<double>(plan2.edits[0].tokens * 2 + plan2.edits[1].tokens * 1) * 0.1
    );
}

// A large result that fell out of the kept window pays for the break at once; a small one with a
// large kept result behind it (all of it rewritten) waits.
TEST(clearing_cost, a_large_cleared_result_pays_and_a_large_kept_tail_waits)
{
    const auto big_old = reads_of({20000, 500, 500, 500});
    const auto a = price_clearing(big_old, plan_of(big_old, 1), 1, anthropic);
    EXPECT_TRUE(a.pays()) << a.reads_paid << " < " << a.rewrite;
    const auto big_kept = reads_of({500, 500, 500, 20000});
    const auto b = price_clearing(big_kept, plan_of(big_kept, 1), 1, anthropic);
    EXPECT_FALSE(b.pays()) << b.reads_paid << " >= " << b.rewrite;
    EXPECT_GT(b.tail_tokens, 20000);
    // A cache whose writes cost what reads do loses nothing by a break: every clearing pays.
    price_table flat = anthropic;
    flat.write_multiplier = flat.read_multiplier;
    EXPECT_TRUE(price_clearing(big_kept, plan_of(big_kept, 1), 1, flat).pays());
}

// The newest results, after the last assistant message, were never sent: the next request writes
// them with or without the clearing, so they are no part of the rewrite.
TEST(clearing_cost, results_not_sent_yet_are_not_rewritten)
{
    const auto ctx = reads_of({3000, 2000, 1000, 5000}, true);  // u a1 r1 a2 r2 a3 r3 a4 r4
    const auto plan = plan_of(ctx, 1);
    ASSERT_EQ(plan.edits.size(), 3u);
    std::int64_t sent = 0;
    for (std::size_t i = 2; i + 1 < ctx.size(); ++i)
        sent += static_cast<std::int64_t>(default_token_counter().count(*ctx[i].msg));
    EXPECT_EQ(price_clearing(ctx, plan, 1, anthropic).tail_tokens, sent - plan.tokens);
}

TEST(clearing_cost, an_empty_plan_costs_nothing)
{
    const auto ctx = reads_of({500});
    const auto cost = price_clearing(ctx, clearing_plan{}, 3, anthropic);
    EXPECT_EQ(cost.tail_tokens, 0);
    EXPECT_EQ(cost.rewrite, 0);
    EXPECT_EQ(cost.reads_paid, 0);
}
