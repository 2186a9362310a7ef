// A before_compact hook's result checked like the model's (its usage, its cut), and the
// compacted, compact_failed and branched hooks awaited before the operation completes.
#include <agentctx/runtime/error.hpp>
#include <agentctx/runtime/memory_store.hpp>
#include <agentctx/runtime/session.hpp>

#include "run_until.hpp"
#include "scripted_summarizer.hpp"
#include "session_text.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <gtest/gtest.h>

using namespace agentctx;
using namespace agentctx::runtime;
namespace asio = boost::asio;
using boost::system::error_code;
using test::tokens;

namespace {

// Five turns, a tool round (u5 c5 r5 a5), four more turns; 100 tokens a message.
std::string history()
{
    test::session_text t;
    for (int i = 0; i < 10; ++i)
    {
        const auto n = std::to_string(i);
        t.user("u" + n, tokens(100));
        if (i == 5)
            t.tool_call(
                 "c5", "call_5", "read", {{"path", "a.txt"}}
            ).tool_result("r5", "call_5", "read", tokens(100));
        t.assistant("a" + n, tokens(100), i == 9 ? 3000 : 0);
    }
    return t.text;
}

// Suspends the calling coroutine `n` times (each resumption is a fresh handler on the executor).
asio::awaitable<void> yield_times(int n)
{
    for (int i = 0; i < n; ++i)
        co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
}

class hook_results_test : public ::testing::Test
{
protected:
    void SetUp() override { summarizer_ = std::make_shared<test::scripted_summarizer>(ioc_.get_executor()); }

    std::shared_ptr<session> open(session_config c = {}, std::int64_t keep = 400)
    {
        auto st = std::make_unique<memory_store>(history());
        store_ = st.get();
        c.settings.keep_recent_tokens = keep;
        c.model = {"anthropic", "claude-sonnet-4-5", 200000, 0};
        c.summarizer = summarizer_;
        compaction::diagnostics diag;
        auto s = session::open(ioc_.get_executor(), std::move(st), std::move(c), diag).value();
        s->on_event([this](const session_event& e) {
            if (const auto* end = std::get_if<compaction_end_event>(&e))
            {
                order_.push_back("end");
                end_usage_ = end->usage;
            }
            else if (const auto* f = std::get_if<compaction_finished_event>(&e))
                finished_.push_back(*f);
        });
        return s;
    }

    // A hook answering with a summary that keeps from `first_kept` (empty: the plan's cut).
    static void supply(session& s, std::string first_kept, std::optional<compaction::usage> u = std::nullopt)
    {
        s.on_before_compact([first_kept, u](const before_compact_event&) {
            compaction::compaction_result r;
            r.summary = "## Goal\nFrom the host's own model.";
            r.first_kept_entry_id = first_kept;
            return hook_decision{.result = r, .usage = u};
        });
    }

    std::pair<error_code, compaction_outcome> compact(session& s)
    {
        std::optional<std::pair<error_code, compaction_outcome>> out;
        s.async_compact(std::nullopt, [&](error_code ec, compaction_outcome o) {
            order_.push_back("handler");
            out.emplace(ec, std::move(o));
        });
        test::run_until(ioc_, [&] { return out.has_value(); });
        return *out;
    }

    asio::io_context ioc_;
    std::shared_ptr<test::scripted_summarizer> summarizer_;
    memory_store* store_ = nullptr;
    std::vector<std::string> order_;
    std::optional<compaction::usage> end_usage_;
    std::vector<compaction_finished_event> finished_;
};

TEST_F(hook_results_test, a_hooks_usage_reaches_the_entry_the_end_event_and_the_evidence)
{
    auto s = open();
    compaction::usage u;
    u.input = 1200;
    u.output = 300;
    u.cache_read = 50;
    u.cache_write = 20;
    u.total_tokens = 1570;
    supply(*s, "", u);
    std::optional<compaction::usage> entry_usage;
    s->on_compacted([&](const compacted_event& e) { entry_usage = e.entry.usage; });
    const auto [ec, out] = compact(*s);
    ASSERT_FALSE(ec) << out.message;
    ASSERT_TRUE(entry_usage);
    EXPECT_EQ(entry_usage->input, 1200);
    EXPECT_EQ(entry_usage->output, 300);
    EXPECT_EQ(entry_usage->cache_read, 50);
    EXPECT_EQ(entry_usage->cache_write, 20);
    EXPECT_NE(
        store_->text().find(R"("usage":{"input":1200,"output":300,"cacheRead":50,"cacheWrite":20)"),
        std::string::npos
    ) << store_->text();
    ASSERT_TRUE(end_usage_);
    EXPECT_EQ(end_usage_->input, 1200);
    EXPECT_EQ(end_usage_->output, 300);
    ASSERT_EQ(finished_.size(), 1u);
    EXPECT_EQ(finished_[0].evidence.usage.input, 1200);
    EXPECT_EQ(finished_[0].evidence.usage.output, 300);
    EXPECT_EQ(finished_[0].evidence.usage.cache_read, 50);
    EXPECT_EQ(finished_[0].evidence.usage.cache_write, 20);
    EXPECT_EQ(finished_[0].evidence.calls, 0);
    EXPECT_EQ(summarizer_->calls(), 0u);
}

TEST_F(hook_results_test, a_model_summarys_usage_reaches_the_end_event_as_the_entrys)
{
    auto s = open();
    std::optional<compaction::usage> entry_usage;
    s->on_compacted([&](const compacted_event& e) { entry_usage = e.entry.usage; });
    const auto [ec, out] = compact(*s);
    ASSERT_FALSE(ec) << out.message;
    EXPECT_EQ(summarizer_->calls(), 1u);
    // The scripted model reports no usage: neither does the entry nor the event.
    EXPECT_FALSE(entry_usage);
    EXPECT_FALSE(end_usage_);
}

struct invalid_cut
{
    const char* name;
    std::string first_kept;
    std::string why;  ///< in the message
    std::vector<std::string> pinned, required;
};

TEST_F(hook_results_test, an_invalid_first_kept_entry_fails_with_hook_invalid_cut_and_writes_nothing)
{
    const std::vector<invalid_cut> cases{
        {"tool result", "r5", "'r5' is a tool result", {}, {}},
        {"unknown id", "no-such-entry", "'no-such-entry' is not an entry of the active path", {}, {}},
        {"past a pinned entry", "a9", "'a9' lies past pinned entry 'u9'", {"u9"}, {}},
        {"past a required entry", "a9", "'a9' lies past required entry 'u9'", {}, {"u9"}},
    };
    for (const auto& c : cases)
    {
        SCOPED_TRACE(c.name);
        session_config config;
        config.pins.ids = c.pinned;
        config.required.ids = c.required;
        auto s = open(std::move(config));
        supply(*s, c.first_kept);
        std::vector<bool> failed_from_hook;
        s->on_compact_failed([&](const compact_failed_event& e) { failed_from_hook.push_back(e.from_hook); });
        const auto before = store_->text();
        const auto entries = s->current()->entry_count;
        const auto [ec, out] = compact(*s);
        EXPECT_EQ(ec, make_error_code(errc::hook_invalid_cut)) << out.message;
        EXPECT_NE(out.message.find(c.why), std::string::npos) << out.message;
        EXPECT_FALSE(out.compacted);
        EXPECT_EQ(store_->text(), before);
        EXPECT_EQ(s->current()->entry_count, entries);
        EXPECT_EQ(failed_from_hook, std::vector<bool>{true});
        EXPECT_EQ(summarizer_->calls(), 0u);
    }
}

TEST_F(hook_results_test, a_cut_past_a_running_jobs_launch_that_the_plan_keeps_is_refused)
{
    session_config config;
    compaction::job_rule rule;
    rule.tools = {"read"};  // c5 reads a.txt: a job that no later entry reports complete
    rule.id_field = "path";
    config.jobs.rules = {rule};
    // Keeping 1,100 tokens cuts at u5 (a9 back to r5 is 1,000, c5 5, u5 100): the plan keeps
    // the launch c5/r5. A hook cutting at u6 would summarize it while the job runs.
    auto s = open(std::move(config), 1100);
    supply(*s, "u6");
    const auto before = store_->text();
    const auto [ec, out] = compact(*s);
    EXPECT_EQ(ec, make_error_code(errc::hook_invalid_cut)) << out.message;
    EXPECT_NE(out.message.find("'u6' lies past entry 'c5' of a running job's launch"), std::string::npos)
        << out.message;
    EXPECT_EQ(store_->text(), before);
    EXPECT_EQ(summarizer_->calls(), 0u);
}

TEST_F(hook_results_test, a_valid_first_kept_entry_of_the_hooks_choice_is_committed)
{
    session_config config;
    config.pins.ids = {"u9"};
    auto s = open(std::move(config));
    supply(*s, "u6");  // earlier than the plan's cut, a user message outside the tool round
    const auto [ec, out] = compact(*s);
    ASSERT_FALSE(ec) << out.message;
    ASSERT_TRUE(out.result);
    EXPECT_EQ(out.result->first_kept_entry_id, "u6");
}

TEST_F(hook_results_test, an_awaitable_compacted_hook_finishes_before_the_handler_runs)
{
    auto s = open();
    s->on_compacted([&](const compacted_event& e) -> asio::awaitable<void> {
        order_.push_back("compacted:start");
        co_await yield_times(3);
        order_.push_back("compacted:" + std::string(e.from_hook ? "hook" : "model"));
    });
    s->on_compacted([&](const compacted_event&) { order_.push_back("compacted:sync"); });
    const auto [ec, out] = compact(*s);
    ASSERT_FALSE(ec) << out.message;
    EXPECT_EQ(
        order_,
        (std::vector<std::string>{"compacted:start", "compacted:model", "compacted:sync", "end", "handler"})
    );
}

TEST_F(hook_results_test, an_awaitable_compact_failed_hook_finishes_before_the_handler_runs)
{
    auto s = open();
    s->on_before_compact([](const before_compact_event&) { return hook_decision{.cancel = true}; });
    s->on_compact_failed([&](const compact_failed_event& e) -> asio::awaitable<void> {
        order_.push_back("failed:start");
        co_await yield_times(3);
        order_.push_back(e.aborted ? "failed:aborted" : "failed:other");
    });
    const auto [ec, out] = compact(*s);
    EXPECT_EQ(ec, make_error_code(errc::hook_cancelled));
    EXPECT_EQ(order_, (std::vector<std::string>{"end", "failed:start", "failed:aborted", "handler"}));
}

TEST_F(hook_results_test, a_compaction_cancelled_while_its_compacted_hook_runs_is_reported_committed)
{
    auto s = open();
    bool hook_started = false;
    error_code hook_wait;
    s->on_compacted([&](const compacted_event&) -> asio::awaitable<void> {
        hook_started = true;
        asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::hours(1));
        auto [wec] = co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
        hook_wait = wec;
    });
    std::optional<std::pair<error_code, compaction_outcome>> out;
    asio::cancellation_signal cancel;
    s->async_compact(
        std::nullopt,
        asio::bind_cancellation_slot(
            cancel.slot(), [&](error_code ec, compaction_outcome o) { out.emplace(ec, std::move(o)); }
        )
    );
    test::run_until(ioc_, [&] { return hook_started; });
    cancel.emit(asio::cancellation_type::terminal);
    test::run_until(ioc_, [&] { return out.has_value(); });
    EXPECT_EQ(hook_wait, asio::error::operation_aborted);  // the hook's own wait was cancelled
    EXPECT_FALSE(out->first) << out->second.message;
    EXPECT_TRUE(out->second.compacted);
    EXPECT_NE(store_->text().find(R"("type":"compaction")"), std::string::npos);
}

TEST_F(hook_results_test, an_awaitable_branched_hook_finishes_before_the_handler_runs)
{
    auto s = open();
    s->on_branched([&](const branched_event& e) -> asio::awaitable<void> {
        order_.push_back("branched:start");
        co_await yield_times(3);
        order_.push_back("branched:" + e.new_leaf_id.value_or("none"));
    });
    std::optional<error_code> done;
    s->async_branch_from("a3", branch_options{}, [&](error_code ec, std::string) {
        order_.push_back("handler");
        done = ec;
    });
    test::run_until(ioc_, [&] { return done.has_value(); });
    EXPECT_FALSE(*done);
    EXPECT_EQ(order_, (std::vector<std::string>{"branched:start", "branched:a3", "handler"}));
}

}  // namespace
