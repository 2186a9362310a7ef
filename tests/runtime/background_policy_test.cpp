// The background compaction's start and commit rules, without an io_context or a session.
#include "background_policy.hpp"

#include <gtest/gtest.h>

namespace {

using namespace agentctx::runtime::detail;
using agentctx::compaction::entry_type;

std::vector<path_step> messages(std::initializer_list<const char*> ids)
{
    std::vector<path_step> out;
    for (const auto* id : ids)
        out.push_back({id, entry_type::message, ""});
    return out;
}

// Planned on [a b c d], keeping from c: a and b are covered.
prepared_binding binding()
{
    return {.planned_path = {"a", "b", "c", "d"}, .kept_index = 2, .config_digest = "cfg-1"};
}

TEST(background_policy, appends_after_the_plan_keep_the_binding)
{
    EXPECT_EQ(check_binding(binding(), messages({"a", "b", "c", "d"}), "cfg-1"), std::nullopt);
    auto now = messages({"a", "b", "c", "d", "e", "f"});
    now.push_back({"g", entry_type::context_edit, "e"});  // an edit of the kept suffix
    now.push_back({"h", entry_type::context_edit, "c"});  // of the first kept entry: not covered
    EXPECT_EQ(check_binding(binding(), now, "cfg-1"), std::nullopt);
}

TEST(background_policy, each_discard_reason)
{
    // A branch: shorter, or another entry where the plan had one.
    EXPECT_EQ(check_binding(binding(), messages({"a", "b", "c"}), "cfg-1"), discard_reason::branched);
    EXPECT_EQ(
        check_binding(binding(), messages({"a", "b", "c", "x", "e"}), "cfg-1"), discard_reason::branched
    );
    EXPECT_EQ(check_binding(binding(), messages({"a", "x", "c", "d"}), "cfg-1"), discard_reason::branched);
    // An edit after the plan that reaches a covered entry.
    auto edited = messages({"a", "b", "c", "d", "e"});
    edited.push_back({"f", entry_type::context_edit, "b"});
    EXPECT_EQ(check_binding(binding(), edited, "cfg-1"), discard_reason::edited);
    // A compaction entry after the plan (a restored checkpoint).
    auto restored = messages({"a", "b", "c", "d"});
    restored.push_back({"k", entry_type::compaction, ""});
    EXPECT_EQ(check_binding(binding(), restored, "cfg-1"), discard_reason::restored);
    // Another summary configuration.
    EXPECT_EQ(
        check_binding(binding(), messages({"a", "b", "c", "d"}), "cfg-2"), discard_reason::settings_changed
    );
}

TEST(background_policy, size_verdicts)
{
    EXPECT_EQ(judge_size(190, 100, 180, true), size_verdict::commit);
    EXPECT_EQ(
        judge_size(190, 180, 180, true), size_verdict::commit
    );  // at the threshold: under it (strict trigger)
    EXPECT_EQ(judge_size(250, 181, 180, true), size_verdict::commit_then_foreground);
    EXPECT_EQ(
        judge_size(250, 181, 180, false), size_verdict::discard
    );                                                                  // a commit when ready never continues
    EXPECT_EQ(judge_size(181, 181, 180, true), size_verdict::discard);  // no smaller
    EXPECT_EQ(judge_size(181, 500, 0, true), size_verdict::commit);     // no window
}

TEST(background_policy, the_background_cut_keeps_what_remains_after_the_growth_to_the_threshold)
{
    EXPECT_EQ(background_keep(20000, 165000, 183616), 1384);  // 18,616 more arrive before the commit
    EXPECT_EQ(background_keep(20000, 128532, 183616), 0);  // more than keepRecentTokens: keep nothing extra
    EXPECT_EQ(background_keep(20000, 183616, 183616), 20000);
    EXPECT_EQ(background_keep(20000, 190000, 183616), 20000);  // over already: as a foreground cut
}

TEST(background_policy, check_actions)
{
    const check_state idle{.background_enabled = true};
    // threshold 1000, startAt 0.7: the start point is 700 (strict).
    EXPECT_EQ(decide_check(700, 1000, 0.7, idle), check_action::none);
    EXPECT_EQ(decide_check(701, 1000, 0.7, idle), check_action::start_background);
    EXPECT_EQ(decide_check(1000, 1000, 0.7, idle), check_action::start_background);
    EXPECT_EQ(decide_check(1001, 1000, 0.7, idle), check_action::foreground);
    EXPECT_EQ(decide_check(900, 1000, 0.7, {.background_enabled = false}), check_action::none);
    EXPECT_EQ(
        decide_check(900, 1000, 0.7, {.background_enabled = true, .running = true}), check_action::none
    );
    EXPECT_EQ(
        decide_check(900, 1000, 0.7, {.background_enabled = true, .prepared = true}), check_action::none
    );
    EXPECT_EQ(
        decide_check(1001, 1000, 0.7, {.background_enabled = true, .prepared = true}),
        check_action::foreground
    );
    EXPECT_EQ(
        decide_check(5, -100, 0.7, idle), check_action::foreground
    );  // a window under the reserve, as should_compact
    EXPECT_EQ(decide_check(-200, -100, 0.7, idle), check_action::none);
}

TEST(background_policy, enabled_by_mode_unless_set)
{
    using agentctx::compaction::compat_mode;
    agentctx::compaction::compaction_settings s;
    EXPECT_TRUE(background_enabled(s, compat_mode::agentctx));
    EXPECT_FALSE(background_enabled(s, compat_mode::pi));
    s.background.enabled = true;
    EXPECT_TRUE(background_enabled(s, compat_mode::pi));
    s.background.enabled = false;
    EXPECT_FALSE(background_enabled(s, compat_mode::agentctx));
    s.background.enabled = true;
    s.enabled = false;  // compaction off: background too
    EXPECT_FALSE(background_enabled(s, compat_mode::agentctx));
}

TEST(background_policy, reasons_have_stable_names)
{
    EXPECT_STREQ(to_string(discard_reason::branched), "branched");
    EXPECT_STREQ(to_string(discard_reason::edited), "edited");
    EXPECT_STREQ(to_string(discard_reason::restored), "restored");
    EXPECT_STREQ(to_string(discard_reason::settings_changed), "settings_changed");
    EXPECT_STREQ(to_string(discard_reason::over_threshold), "over_threshold");
    EXPECT_STREQ(to_string(discard_reason::superseded), "superseded");
    EXPECT_STREQ(to_string(discard_reason::cancelled), "cancelled");
    EXPECT_STREQ(to_string(discard_reason::closed), "closed");
    EXPECT_STREQ(to_string(discard_reason::failed), "failed");
}

}  // namespace

// The threshold is 100,000: startAt 0.7 allows a start above 70,000. Measured growth of 1,000
// tokens/s and 4 s summaries hold it until the threshold is within 2 × 4 × 1,000 = 8,000 tokens.
TEST(background_policy, a_measured_growth_holds_the_start_until_the_threshold_is_two_summaries_away)
{
    check_state st{.background_enabled = true};
    EXPECT_EQ(
        decide_check(80'000, 100'000, 0.7, st), check_action::start_background
    );  // nothing measured yet
    st.growth = growth_estimate{1000, 4};
    EXPECT_EQ(decide_check(80'000, 100'000, 0.7, st), check_action::none);
    EXPECT_EQ(decide_check(91'999, 100'000, 0.7, st), check_action::none);
    EXPECT_EQ(decide_check(92'000, 100'000, 0.7, st), check_action::start_background);
    // startAt stays the earliest start: a slow summary does not start one below it.
    st.growth = growth_estimate{1000, 60};
    EXPECT_EQ(decide_check(69'000, 100'000, 0.7, st), check_action::none);
    EXPECT_EQ(decide_check(71'000, 100'000, 0.7, st), check_action::start_background);
    EXPECT_EQ(decide_check(100'001, 100'000, 0.7, st), check_action::foreground);
}

TEST(background_policy, the_growth_meter_averages_rising_checks_and_restarts_after_a_drop)
{
    growth_meter m;
    EXPECT_EQ(m.estimate(), std::nullopt);
    m.observe(10, 50'000);
    m.observe(12, 54'000);  // 2,000 tokens/s
    EXPECT_EQ(m.estimate(), std::nullopt) << "no summary measured yet";
    m.summary_took(3.5);
    ASSERT_TRUE(m.estimate());
    EXPECT_DOUBLE_EQ(m.estimate()->tokens_per_second, 2000);
    EXPECT_DOUBLE_EQ(m.estimate()->summary_seconds, 3.5);
    m.observe(13, 58'000);  // 4,000 tokens/s: the newest sample weighs half
    EXPECT_DOUBLE_EQ(m.estimate()->tokens_per_second, 3000);
    m.observe(14, 20'000);  // a compaction: no sample
    m.observe(16, 22'000);  // 1,000 tokens/s from the new start
    EXPECT_DOUBLE_EQ(m.estimate()->tokens_per_second, 2000);
    m.summary_took(0.4);  // a fast summarizer: no hold until a slow one is measured again
    EXPECT_EQ(m.estimate(), std::nullopt);
    m.summary_took(0.5);
    ASSERT_TRUE(m.estimate());
    EXPECT_DOUBLE_EQ(m.estimate()->summary_seconds, 0.5);
}
