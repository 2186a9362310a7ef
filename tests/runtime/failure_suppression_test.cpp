// The pause of automatic compaction after a failure, without an io_context: keyed on the prefix and the
// settings.
#include "failure_suppression.hpp"

#include <agentctx/compaction/error.hpp>
#include <agentctx/providers/error.hpp>
#include <agentctx/runtime/error.hpp>

#include <boost/asio/error.hpp>

#include <gtest/gtest.h>

namespace {

using namespace agentctx::runtime;
using namespace agentctx::runtime::detail;
namespace ce = agentctx::compaction;
namespace pe = agentctx::providers;

const prefix_key k1{12, "aa", "cfg1"};

TEST(failure_suppression, a_deterministic_failure_pauses_the_same_prefix_under_the_same_settings)
{
    failure_suppression s;
    s.failed(compaction_reason::threshold, failure_kind::deterministic, k1, 40);
    EXPECT_TRUE(s.paused(compaction_reason::threshold, k1));
    EXPECT_TRUE(s.paused(compaction_reason::overflow, k1));
    EXPECT_TRUE(s.paused(compaction_reason::background, k1));
    // New entries that leave the covered prefix as it was do not end the pause.
    EXPECT_FALSE(s.paused(41));
    EXPECT_TRUE(s.paused(compaction_reason::threshold, k1));
}

TEST(failure_suppression, a_changed_prefix_or_changed_settings_try_again)
{
    failure_suppression s;
    s.failed(compaction_reason::threshold, failure_kind::deterministic, k1, 40);
    EXPECT_FALSE(s.paused(compaction_reason::threshold, prefix_key{13, "bb", "cfg1"}));  // the cut moved
    EXPECT_FALSE(s.paused(compaction_reason::threshold, prefix_key{12, "cc", "cfg1"}));  // another branch
    EXPECT_FALSE(s.paused(compaction_reason::threshold, prefix_key{12, "aa", "cfg2"}));  // other settings
}

TEST(failure_suppression, a_manual_compaction_always_tries_and_its_failure_pauses_nothing)
{
    failure_suppression s;
    s.failed(compaction_reason::threshold, failure_kind::deterministic, k1, 40);
    EXPECT_FALSE(s.paused(compaction_reason::manual, k1));
    failure_suppression m;
    m.failed(compaction_reason::manual, failure_kind::deterministic, k1, 40);
    EXPECT_FALSE(m.paused(compaction_reason::threshold, k1));
    EXPECT_FALSE(m.paused(40));
}

TEST(failure_suppression, a_transient_failure_pauses_until_an_entry_is_added)
{
    failure_suppression s;
    s.failed(compaction_reason::threshold, failure_kind::transient, k1, 40);
    EXPECT_TRUE(s.paused(40));
    EXPECT_FALSE(s.paused(41));
    EXPECT_FALSE(s.paused(compaction_reason::threshold, k1));  // no keyed pause
    failure_suppression unplanned;  // deterministic, but it failed before a prefix was planned
    unplanned.failed(compaction_reason::threshold, failure_kind::deterministic, std::nullopt, 7);
    EXPECT_TRUE(unplanned.paused(7));
    EXPECT_FALSE(unplanned.paused(8));
}

TEST(failure_suppression, aborted_failures_pause_nothing_and_reset_ends_every_pause)
{
    failure_suppression s;
    s.failed(compaction_reason::threshold, failure_kind::aborted, k1, 40);
    EXPECT_FALSE(s.paused(40));
    EXPECT_FALSE(s.paused(compaction_reason::threshold, k1));
    s.failed(compaction_reason::threshold, failure_kind::deterministic, k1, 40);
    s.reset();
    EXPECT_FALSE(s.paused(compaction_reason::threshold, k1));
}

TEST(failure_suppression, a_refused_clearing_pauses_those_entries_until_reset)
{
    failure_suppression s;
    s.clearing_refused({"r1", "r2"});
    s.clearing_refused({"r3"});
    EXPECT_TRUE(s.clearing_paused("r1"));
    EXPECT_TRUE(s.clearing_paused("r3"));
    EXPECT_FALSE(s.clearing_paused("r4"));
    // Compaction failures and new entries leave it; a commit or a replaced history ends it.
    s.failed(compaction_reason::threshold, failure_kind::transient, std::nullopt, 40);
    EXPECT_TRUE(s.clearing_paused("r2"));
    s.reset();
    EXPECT_FALSE(s.clearing_paused("r1"));
    EXPECT_FALSE(s.clearing_paused("r3"));
}

TEST(failure_suppression, failure_codes_are_classified)
{
    EXPECT_EQ(
        classify_failure(ce::make_error_code(ce::errc::insufficient_reduction)), failure_kind::deterministic
    );
    EXPECT_EQ(
        classify_failure(ce::make_error_code(ce::errc::summary_truncated)), failure_kind::deterministic
    );
    EXPECT_EQ(classify_failure(ce::make_error_code(ce::errc::summary_empty)), failure_kind::deterministic);
    EXPECT_EQ(classify_failure(pe::make_error_code(pe::errc::invalid_request)), failure_kind::deterministic);
    EXPECT_EQ(classify_failure(pe::make_error_code(pe::errc::context_overflow)), failure_kind::deterministic);
    EXPECT_EQ(classify_failure(pe::make_error_code(pe::errc::rate_limited)), failure_kind::transient);
    EXPECT_EQ(classify_failure(pe::make_error_code(pe::errc::transient)), failure_kind::transient);
    EXPECT_EQ(classify_failure(pe::make_error_code(pe::errc::auth)), failure_kind::transient);
    EXPECT_EQ(classify_failure(make_error_code(errc::io_error)), failure_kind::transient);
    EXPECT_EQ(classify_failure(make_error_code(errc::cancelled)), failure_kind::aborted);
    EXPECT_EQ(classify_failure(make_error_code(errc::hook_cancelled)), failure_kind::aborted);
    EXPECT_EQ(classify_failure(boost::asio::error::operation_aborted), failure_kind::aborted);
}

}  // namespace
