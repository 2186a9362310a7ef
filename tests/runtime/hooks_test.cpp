// before_compact hooks that suspend (awaitable), their inputs and cancellation, and the failed hook's order
// as Pi 1.6.
#include <agentctx/runtime/error.hpp>
#include <agentctx/runtime/memory_store.hpp>
#include <agentctx/runtime/session.hpp>

#include "append_entry.hpp"
#include "run_until.hpp"
#include "scripted_summarizer.hpp"
#include "session_text.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <gtest/gtest.h>

using namespace agentctx;
using namespace agentctx::runtime;
namespace asio = boost::asio;
namespace json = boost::json;
using boost::system::error_code;
using test::tokens;

namespace {

const char* const overflow_text = "prompt is too long: 210000 tokens > 200000 maximum";

json::object overflow_reply(double ts)
{
    return {
        {"role", "assistant"},
        {"content", json::array{}},
        {"api", "anthropic-messages"},
        {"provider", "anthropic"},
        {"model", "claude-sonnet-4-5"},
        {"usage", json::object{{"input", 0}, {"output", 0}, {"totalTokens", 0}}},  // an error reports none
        {"stopReason", "error"},
        {"errorMessage", overflow_text},
        {"timestamp", ts}};
}

class hooks_test : public ::testing::Test
{
protected:
    void SetUp() override { summarizer_ = std::make_shared<test::scripted_summarizer>(ioc_.get_executor()); }

    std::shared_ptr<session> open(std::size_t turns = 10)
    {
        test::session_text t;
        for (std::size_t i = 0; i < turns; ++i)
            t.user("u" + std::to_string(i), tokens(100))
                .assistant("a" + std::to_string(i), tokens(100), i + 1 == turns ? 2000 : 0);
        auto st = std::make_unique<memory_store>(t.text);
        store_ = st.get();
        session_config c;
        c.settings.keep_recent_tokens = 400;
        c.model = {"anthropic", "claude-sonnet-4-5", 200000, 0};
        c.summarizer = summarizer_;
        compaction::diagnostics diag;
        auto s = session::open(ioc_.get_executor(), std::move(st), std::move(c), diag).value();
        s->on_event([this](const session_event& e) {
            if (std::holds_alternative<compaction_end_event>(e))
                order_.push_back("end");
        });
        s->on_compact_failed([this](const compact_failed_event& e) {
            order_.push_back("failed");
            failed_.push_back(e);
        });
        return s;
    }

    struct result
    {
        bool done = false;
        error_code ec;
        compaction_outcome out;
    };
    template <class Start>
    std::shared_ptr<result> run(Start start)
    {
        auto r = std::make_shared<result>();
        start([r](error_code ec, compaction_outcome o) {
            r->done = true;
            r->ec = ec;
            r->out = std::move(o);
        });
        return r;
    }

    asio::io_context ioc_;
    std::shared_ptr<test::scripted_summarizer> summarizer_;
    memory_store* store_ = nullptr;
    std::vector<std::string> order_;
    std::vector<compact_failed_event> failed_;
};

TEST_F(hooks_test, an_awaitable_hook_makes_its_own_call_and_supplies_the_result)
{
    auto s = open();
    std::size_t branch_size = 0;
    std::string first_text;
    bool slot_connected = false;
    s->on_before_compact([&](const before_compact_event& e) -> asio::awaitable<hook_decision> {
        branch_size = e.branch_entries.size();
        first_text = e.branch_entries.front()->message ? "has message" : "";
        slot_connected = e.cancellation.is_connected();
        asio::steady_timer t(
            co_await asio::this_coro::executor, std::chrono::milliseconds(20)
        );  // its own model call
        co_await t.async_wait(asio::use_awaitable);
        compaction::compaction_result r;
        r.summary = "## Goal\nFrom the host's own model.";
        co_return hook_decision{.result = r};
    });
    auto r = run([&](auto h) { s->async_compact(std::nullopt, h); });
    test::run_until(ioc_, [&] { return r->done; });
    ASSERT_FALSE(r->ec) << r->out.message;
    EXPECT_TRUE(r->out.compacted);
    EXPECT_EQ(summarizer_->calls(), 0u);
    EXPECT_EQ(branch_size, 20u);  // the whole active path, root to leaf
    EXPECT_EQ(first_text, "has message");
    EXPECT_TRUE(slot_connected);
    EXPECT_NE(store_->text().find("From the host's own model."), std::string::npos);
    EXPECT_NE(store_->text().find("\"fromHook\":true"), std::string::npos);
}

TEST_F(hooks_test, synchronous_and_awaitable_hooks_run_in_registration_order)
{
    auto s = open();
    std::vector<std::string> seen;
    s->on_before_compact([&](const before_compact_event&) {
        seen.push_back("sync");
        return hook_decision{};
    });
    s->on_before_compact([&](const before_compact_event&) -> asio::awaitable<hook_decision> {
        asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::milliseconds(5));
        co_await t.async_wait(asio::use_awaitable);
        seen.push_back("async");
        co_return hook_decision{.cancel = true};
    });
    s->on_before_compact([&](const before_compact_event&) {
        seen.push_back("never");  // a cancel returns at once
        return hook_decision{};
    });
    const auto before = store_->text();
    auto r = run([&](auto h) { s->async_compact(std::nullopt, h); });
    test::run_until(ioc_, [&] { return r->done; });
    EXPECT_EQ(r->ec, make_error_code(errc::hook_cancelled));
    EXPECT_EQ(seen, (std::vector<std::string>{"sync", "async"}));
    EXPECT_EQ(store_->text(), before);
    EXPECT_EQ(summarizer_->calls(), 0u);
}

TEST_F(hooks_test, aborting_the_compaction_cancels_an_awaiting_hook_through_its_slot)
{
    auto s = open();
    bool hook_started = false;
    error_code hook_wait;
    s->on_before_compact([&](const before_compact_event& e) -> asio::awaitable<hook_decision> {
        hook_started = true;
        asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::hours(1));
        auto [ec] = co_await t.async_wait(
            asio::bind_cancellation_slot(e.cancellation, asio::as_tuple(asio::use_awaitable))
        );
        hook_wait = ec;
        compaction::compaction_result r;
        r.summary = "## Goal\nlate";
        co_return hook_decision{.result = r};  // too late: the compaction was cancelled
    });
    const auto before = store_->text();
    auto r = run([&](auto h) { s->async_compact(std::nullopt, h); });
    test::run_until(ioc_, [&] { return hook_started; });
    s->abort_compaction();
    test::run_until(ioc_, [&] { return r->done; });
    EXPECT_EQ(hook_wait, asio::error::operation_aborted);
    EXPECT_EQ(r->ec, make_error_code(errc::cancelled)) << r->out.message;
    EXPECT_EQ(store_->text(), before);
    EXPECT_EQ(summarizer_->calls(), 0u);
    EXPECT_EQ(order_, (std::vector<std::string>{"end", "failed"}));
    ASSERT_EQ(failed_.size(), 1u);
    EXPECT_TRUE(failed_[0].aborted);
}

TEST_F(hooks_test, an_overflow_recovery_hook_is_told_the_request_will_be_retried)
{
    auto s = open();
    std::vector<bool> will_retry;
    std::vector<compaction_reason> reasons;
    s->on_before_compact([&](const before_compact_event& e) {
        will_retry.push_back(e.will_retry);
        reasons.push_back(e.reason);
        return hook_decision{};
    });
    const auto reply = overflow_reply(4102444800000.0);
    test::append_entry(ioc_, *s, {{"type", "message"}, {"message", reply}});
    auto r = run([&](auto h) { s->async_on_turn_end(h); });
    test::run_until(ioc_, [&] { return r->done; });
    ASSERT_TRUE(r->out.compacted) << r->out.message;
    EXPECT_TRUE(r->out.will_retry);
    test::append_entry(
        ioc_,
        *s,
        {{"type", "message"},
         {"message",
          json::object{{"role", "user"}, {"content", tokens(300)}, {"timestamp", 4102444800001.0}}}}
    );
    auto m = run([&](auto h) { s->async_compact(std::nullopt, h); });
    test::run_until(ioc_, [&] { return m->done; });
    EXPECT_EQ(will_retry, (std::vector<bool>{true, false}));
    EXPECT_EQ(
        reasons, (std::vector<compaction_reason>{compaction_reason::overflow, compaction_reason::manual})
    );
}

TEST_F(hooks_test, the_failed_hook_runs_after_compaction_end_as_pi_1_6)
{
    summarizer_->push({test::script_step::stop_error});
    auto s = open();
    auto r = run([&](auto h) { s->async_compact(std::nullopt, h); });
    test::run_until(ioc_, [&] { return r->done; });
    EXPECT_TRUE(r->ec);
    EXPECT_EQ(order_, (std::vector<std::string>{"end", "failed"}));
    ASSERT_EQ(failed_.size(), 1u);
    EXPECT_FALSE(failed_[0].aborted);
    EXPECT_FALSE(failed_[0].will_retry);
    EXPECT_EQ(failed_[0].reason, compaction_reason::manual);
}

TEST_F(hooks_test, an_exhausted_overflow_recovery_calls_the_failed_hook)
{
    auto s = open();
    const auto reply = overflow_reply(4102444800000.0);
    test::append_entry(ioc_, *s, {{"type", "message"}, {"message", reply}});
    auto first = run([&](auto h) { s->async_on_turn_end(h); });
    test::run_until(ioc_, [&] { return first->done; });
    ASSERT_TRUE(first->out.compacted) << first->out.message;
    order_.clear();
    // The retried request overflows again: no second compaction, the failure is reported.
    const auto again = overflow_reply(4102444900000.0);
    test::append_entry(ioc_, *s, {{"type", "message"}, {"message", again}});
    auto second = run([&](auto h) { s->async_on_turn_end(h); });
    test::run_until(ioc_, [&] { return second->done; });
    EXPECT_EQ(second->ec, make_error_code(errc::overflow_recovery_failed));
    EXPECT_EQ(order_, (std::vector<std::string>{"end", "failed"}));
    ASSERT_EQ(failed_.size(), 1u);
    EXPECT_EQ(failed_[0].reason, compaction_reason::overflow);
    EXPECT_FALSE(failed_[0].aborted);
    EXPECT_FALSE(failed_[0].will_retry);
    EXPECT_FALSE(failed_[0].from_hook);
    EXPECT_EQ(
        failed_[0].error_message.value_or(""),
        "Context overflow recovery failed after one compact-and-retry attempt. Try reducing context or "
        "switching "
        "to a larger-context model."
    );
    EXPECT_EQ(summarizer_->calls(), 1u);
}

}  // namespace
