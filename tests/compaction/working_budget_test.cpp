// The working budget: agentctx mode's automatic threshold when it is below the window's allowance.
#include <agentctx/compaction/working_budget.hpp>

#include <gtest/gtest.h>

using namespace agentctx::compaction;

TEST(working_budget, lowers_the_threshold_in_agentctx_mode_only)
{
    compaction_settings s;  // reserve 16,384, the default budget of 60,000
    EXPECT_EQ(automatic_threshold(200000, s, compat_mode::agentctx), 60000);
    EXPECT_EQ(automatic_threshold(200000, s, compat_mode::pi), 183616);
    s.working_budget = token_amount{0, 0};  // off
    EXPECT_EQ(automatic_threshold(200000, s, compat_mode::agentctx), 183616);
    s.working_budget = token_amount{80000, 0};
    EXPECT_EQ(automatic_threshold(200000, s, compat_mode::agentctx), 80000);
    EXPECT_EQ(automatic_threshold(200000, s, compat_mode::pi), 183616);
    // Never above the allowance: a budget over it changes nothing.
    EXPECT_EQ(automatic_threshold(64000, s, compat_mode::agentctx), 64000 - 16384);
    s.working_budget = token_amount{0, 0.25};  // a fraction of the window
    EXPECT_EQ(automatic_threshold(200000, s, compat_mode::agentctx), 50000);
}
