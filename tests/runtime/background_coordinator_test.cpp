// The coordinator's background states without an io_context: start, prepared, commit, discard, supersede,
// cancel, close.
#include "compaction_coordinator.hpp"

#include <gtest/gtest.h>

namespace {

using namespace agentctx::runtime;
using namespace agentctx::runtime::detail;
using boost::asio::cancellation_type;

operation_request threshold()
{
    return {.reason = compaction_reason::threshold};
}

// A background operation that ran to a prepared result.
compaction_coordinator with_prepared()
{
    compaction_coordinator c;
    const auto bg = c.start_background();
    c.finish(*bg.launch, true);
    return c;
}

TEST(background_coordinator, starts_with_no_caller_and_holds_its_result)
{
    compaction_coordinator c;
    const auto fx = c.start_background();
    ASSERT_TRUE(fx.launch);
    EXPECT_TRUE(c.running());
    EXPECT_TRUE(c.background_running());
    EXPECT_EQ(c.running_reason(), compaction_reason::background);
    const auto done = c.finish(*fx.launch, true);
    EXPECT_TRUE(done.waiters.empty());  // the turn that started it has returned
    EXPECT_FALSE(done.launch);          // at-threshold: held until a check crosses the threshold
    EXPECT_FALSE(c.running());
    EXPECT_TRUE(c.prepared());
}

TEST(background_coordinator, a_failed_background_holds_nothing)
{
    compaction_coordinator c;
    const auto fx = c.start_background();
    c.finish(*fx.launch, false);
    EXPECT_FALSE(c.prepared());
}

TEST(background_coordinator, when_ready_launches_its_commit_at_once)
{
    compaction_coordinator c;
    const auto fx = c.start_background();
    const auto done = c.finish(*fx.launch, true, true);
    ASSERT_TRUE(done.launch);
    ASSERT_NE(c.request(*done.launch), nullptr);
    EXPECT_TRUE(c.request(*done.launch)->prepared_only);
    EXPECT_FALSE(c.background_running());  // a commit, not a second summary
    // A commit that left the result in place (cancelled) does not launch another one.
    EXPECT_FALSE(c.finish(*done.launch, false, true).launch);
    EXPECT_TRUE(c.prepared());
}

TEST(background_coordinator, a_threshold_check_awaits_the_running_one)
{
    compaction_coordinator c;
    const auto bg = c.start_background();
    EXPECT_TRUE(c.await_background(1, threshold(), false).cancelled.empty());
    c.await_background(2, threshold(), false);  // joins the queued operation: still one
    const auto done = c.finish(*bg.launch, true);
    ASSERT_TRUE(done.launch);  // the queued operation commits the prepared result
    EXPECT_EQ(c.running_reason(), compaction_reason::threshold);
    EXPECT_TRUE(c.prepared());
    c.consume_prepared();
    EXPECT_EQ(c.finish(*done.launch).waiters, (std::vector<caller_id>{1, 2}));
    EXPECT_FALSE(c.prepared());
}

TEST(background_coordinator, a_queued_caller_cancelled_leaves_the_background_running)
{
    for (const auto type :
         {cancellation_type::terminal, cancellation_type::partial, cancellation_type::total})
    {
        compaction_coordinator c;
        const auto bg = c.start_background();
        c.await_background(1, threshold(), false);
        c.await_background(2, threshold(), false);
        const auto first = c.cancel(1, type);
        EXPECT_EQ(first.cancelled, std::vector<caller_id>{1}) << static_cast<int>(type);
        EXPECT_FALSE(first.interrupt);
        EXPECT_FALSE(c.aborted(*bg.launch));
        EXPECT_EQ(c.cancel(2, type).cancelled, std::vector<caller_id>{2});
        const auto done = c.finish(*bg.launch, true);
        EXPECT_FALSE(done.launch);  // nobody waits any more
        EXPECT_TRUE(c.prepared());  // and the result is kept for the next check
    }
    compaction_coordinator c;
    const auto bg = c.start_background();
    c.await_background(1, threshold(), false);
    EXPECT_TRUE(c.cancel(1, cancellation_type::none).cancelled.empty());
    EXPECT_TRUE(c.finish(*bg.launch, true).launch);
}

TEST(background_coordinator, cancelled_before_link_never_queues)
{
    compaction_coordinator c;
    const auto bg = c.start_background();
    EXPECT_EQ(c.await_background(3, threshold(), true).cancelled, std::vector<caller_id>{3});
    EXPECT_FALSE(c.finish(*bg.launch, true).launch);
}

TEST(background_coordinator, manual_supersedes_a_running_one)
{
    compaction_coordinator c;
    const auto bg = c.start_background();
    c.await_background(1, threshold(), false);
    const auto fx = c.compact(2, std::string("focus"), false);
    EXPECT_EQ(fx.interrupt, bg.launch);
    EXPECT_TRUE(c.aborted(*bg.launch));
    EXPECT_TRUE(c.superseded(*bg.launch));
    const auto done = c.finish(*bg.launch, true);  // even had it prepared, an aborted one holds nothing
    EXPECT_FALSE(c.prepared());
    ASSERT_TRUE(done.launch);
    EXPECT_EQ(c.running_reason(), compaction_reason::manual);
    EXPECT_EQ(c.request(*done.launch)->instructions, "focus");
    EXPECT_FALSE(c.aborted(*done.launch));
    EXPECT_EQ(
        c.finish(*done.launch).waiters, (std::vector<caller_id>{1, 2})
    );  // the queued caller gets it too
}

TEST(background_coordinator, manual_drops_a_prepared_one)
{
    auto c = with_prepared();
    const auto fx = c.compact(1, std::nullopt, false);
    EXPECT_EQ(fx.discard_prepared, discard_reason::superseded);
    EXPECT_TRUE(fx.launch);
    EXPECT_FALSE(c.prepared());
}

TEST(background_coordinator, a_threshold_operation_starts_over_a_prepared_one)
{
    auto c = with_prepared();
    const auto fx = c.start(1, threshold(), false);
    ASSERT_TRUE(fx.launch);
    EXPECT_FALSE(fx.discard_prepared);
    EXPECT_TRUE(c.prepared());  // its transaction commits or discards it
    c.consume_prepared();
    c.finish(*fx.launch);
    EXPECT_FALSE(c.prepared());
}

TEST(background_coordinator, abort_keeps_a_prepared_one_and_close_drops_it)
{
    auto c = with_prepared();
    EXPECT_FALSE(c.abort_all().discard_prepared);
    EXPECT_TRUE(c.prepared());
    EXPECT_EQ(c.abort_all(true).discard_prepared, discard_reason::closed);
    EXPECT_FALSE(c.prepared());
}

TEST(background_coordinator, close_while_running_aborts_it_and_the_queued_check)
{
    compaction_coordinator c;
    const auto bg = c.start_background();
    c.await_background(1, threshold(), false);
    const auto fx = c.abort_all(true);
    EXPECT_EQ(fx.interrupt, bg.launch);
    EXPECT_FALSE(fx.discard_prepared);
    EXPECT_FALSE(c.superseded(*bg.launch));
    const auto done = c.finish(*bg.launch, false);
    ASSERT_TRUE(done.launch);
    EXPECT_TRUE(c.aborted(*done.launch));  // unwinds at once with `cancelled`
    EXPECT_EQ(c.finish(*done.launch).waiters, std::vector<caller_id>{1});
}

}  // namespace
