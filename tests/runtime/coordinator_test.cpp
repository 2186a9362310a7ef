// The compaction coordinator without an io_context: start, join, abort, pending manual, cancel before link.
#include "compaction_coordinator.hpp"

#include <gtest/gtest.h>

namespace {

using namespace agentctx::runtime;
using namespace agentctx::runtime::detail;
using boost::asio::cancellation_type;

operation_request automatic()
{
    return {.reason = compaction_reason::threshold};
}

TEST(coordinator, start_launches_and_finish_completes_the_initiator)
{
    compaction_coordinator c;
    EXPECT_FALSE(c.running());
    const auto fx = c.start(1, automatic(), false);
    ASSERT_TRUE(fx.launch);
    EXPECT_TRUE(fx.cancelled.empty());
    EXPECT_FALSE(fx.interrupt);
    EXPECT_TRUE(c.running());
    EXPECT_EQ(c.running_reason(), compaction_reason::threshold);
    EXPECT_FALSE(c.aborted(*fx.launch));
    const auto done = c.finish(*fx.launch);
    EXPECT_EQ(done.waiters, std::vector<caller_id>{1});
    EXPECT_FALSE(done.launch);
    EXPECT_FALSE(c.running());
    EXPECT_EQ(c.request(*fx.launch), nullptr);
}

TEST(coordinator, manual_callers_join_one_manual_compaction)
{
    compaction_coordinator c;
    const auto fx = c.compact(1, std::string("keep paths"), false);
    ASSERT_TRUE(fx.launch);
    ASSERT_NE(c.request(*fx.launch), nullptr);
    EXPECT_EQ(c.request(*fx.launch)->instructions, "keep paths");
    const auto joined = c.compact(2, std::string("ignored"), false);
    EXPECT_FALSE(joined.launch);
    EXPECT_FALSE(joined.interrupt);
    EXPECT_TRUE(joined.cancelled.empty());
    c.compact(3, std::nullopt, false);
    const auto done = c.finish(*fx.launch);
    EXPECT_EQ(done.waiters, (std::vector<caller_id>{1, 2, 3}));
    EXPECT_FALSE(done.launch);
}

TEST(coordinator, manual_interrupts_automatic_and_runs_after_it)
{
    compaction_coordinator c;
    const auto autofx = c.start(1, automatic(), false);
    const auto fx = c.compact(2, std::string("why"), false);
    EXPECT_EQ(fx.interrupt, autofx.launch);  // the automatic one is aborted
    EXPECT_FALSE(fx.launch);                 // and ours waits for it to unwind
    EXPECT_TRUE(c.aborted(*autofx.launch));
    c.compact(3, std::nullopt, false);  // joins the pending manual one, not the automatic one
    const auto done = c.finish(*autofx.launch);
    EXPECT_EQ(done.waiters, std::vector<caller_id>{1});
    ASSERT_TRUE(done.launch);
    EXPECT_EQ(c.running_reason(), compaction_reason::manual);
    EXPECT_EQ(c.request(*done.launch)->instructions, "why");
    EXPECT_FALSE(c.aborted(*done.launch));
    EXPECT_EQ(c.finish(*done.launch).waiters, (std::vector<caller_id>{2, 3}));
}

TEST(coordinator, initiator_cancellation_aborts_the_operation_for_everyone)
{
    compaction_coordinator c;
    const auto fx = c.compact(1, std::nullopt, false);
    c.compact(2, std::nullopt, false);
    const auto cancel = c.cancel(1, cancellation_type::terminal);
    EXPECT_EQ(cancel.interrupt, fx.launch);
    EXPECT_TRUE(cancel.cancelled.empty());  // completes with the operation's result
    EXPECT_TRUE(c.aborted(*fx.launch));
    EXPECT_EQ(c.finish(*fx.launch).waiters, (std::vector<caller_id>{1, 2}));
}

TEST(coordinator, joined_caller_cancellation_ends_only_its_wait)
{
    compaction_coordinator c;
    const auto fx = c.compact(1, std::nullopt, false);
    c.compact(2, std::nullopt, false);
    const auto cancel = c.cancel(2, cancellation_type::terminal);
    EXPECT_EQ(cancel.cancelled, std::vector<caller_id>{2});
    EXPECT_FALSE(cancel.interrupt);
    EXPECT_FALSE(c.aborted(*fx.launch));
    EXPECT_TRUE(c.cancel(2, cancellation_type::terminal).cancelled.empty()
    );  // a second emission: nothing left to cancel
    EXPECT_EQ(c.finish(*fx.launch).waiters, std::vector<caller_id>{1});
}

TEST(coordinator, cancel_before_link)
{
    compaction_coordinator c;
    // The slot fired before the strand saw the request: the coordinator does not know the caller.
    EXPECT_TRUE(c.cancel(7, cancellation_type::terminal).cancelled.empty());
    EXPECT_FALSE(c.cancel(7, cancellation_type::terminal).interrupt);
    // An initiator: the operation still launches, aborted, so it unwinds at once.
    const auto fx = c.start(7, automatic(), true);
    ASSERT_TRUE(fx.launch);
    EXPECT_TRUE(c.aborted(*fx.launch));
    c.finish(*fx.launch);
    // A joiner: completes at once, never linked.
    const auto manual = c.compact(8, std::nullopt, false);
    const auto early = c.compact(9, std::nullopt, true);
    EXPECT_EQ(early.cancelled, std::vector<caller_id>{9});
    EXPECT_FALSE(c.aborted(*manual.launch));
    EXPECT_EQ(c.finish(*manual.launch).waiters, std::vector<caller_id>{8});
}

TEST(coordinator, pending_manual_initiator_cancelled_unwinds_when_launched)
{
    compaction_coordinator c;
    const auto autofx = c.start(1, automatic(), false);
    c.compact(2, std::nullopt, false);
    const auto cancel = c.cancel(2, cancellation_type::terminal);
    EXPECT_FALSE(cancel.interrupt);  // pending: no signal to emit yet
    const auto done = c.finish(*autofx.launch);
    ASSERT_TRUE(done.launch);
    EXPECT_TRUE(c.aborted(*done.launch));
}

TEST(coordinator, abort_all_aborts_running_and_pending)
{
    compaction_coordinator c;
    EXPECT_FALSE(c.abort_all().interrupt);  // nothing running
    const auto autofx = c.start(1, automatic(), false);
    c.compact(2, std::nullopt, false);
    const auto fx = c.abort_all();
    EXPECT_EQ(fx.interrupt, autofx.launch);
    const auto done = c.finish(*autofx.launch);
    ASSERT_TRUE(done.launch);
    EXPECT_TRUE(c.aborted(*done.launch));
}

TEST(coordinator, finish_of_an_unknown_operation_changes_nothing)
{
    compaction_coordinator c;
    const auto fx = c.start(1, automatic(), false);
    const auto stray = c.finish(*fx.launch + 100);
    EXPECT_TRUE(stray.waiters.empty());
    EXPECT_TRUE(c.running());
}

TEST(coordinator, every_honoured_cancellation_type_aborts_and_none_does_not)
{
    for (const auto type :
         {cancellation_type::terminal, cancellation_type::partial, cancellation_type::total})
    {
        compaction_coordinator c;
        const auto fx = c.compact(1, std::nullopt, false);
        c.compact(2, std::nullopt, false);
        EXPECT_EQ(c.cancel(2, type).cancelled, std::vector<caller_id>{2}) << static_cast<int>(type);
        EXPECT_EQ(c.cancel(1, type).interrupt, fx.launch) << static_cast<int>(type);
        EXPECT_TRUE(c.aborted(*fx.launch));
    }
    compaction_coordinator c;
    const auto fx = c.compact(1, std::nullopt, false);
    c.compact(2, std::nullopt, false);
    EXPECT_TRUE(c.cancel(2, cancellation_type::none).cancelled.empty());
    EXPECT_FALSE(c.cancel(1, cancellation_type::none).interrupt);
    EXPECT_FALSE(c.aborted(*fx.launch));
    EXPECT_EQ(c.finish(*fx.launch).waiters, (std::vector<caller_id>{1, 2}));
}

TEST(coordinator, honours_terminal_partial_and_total_only)
{
    EXPECT_TRUE(honours(cancellation_type::terminal));
    EXPECT_TRUE(honours(cancellation_type::partial));
    EXPECT_TRUE(honours(cancellation_type::total));
    EXPECT_TRUE(honours(cancellation_type::all));
    EXPECT_FALSE(honours(cancellation_type::none));
}

}  // namespace
