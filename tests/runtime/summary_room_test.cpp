// The cut reserves the summary's budget: a compaction that could not fit fails at planning with the
// numbers (budget_exceeded, no model call), and one that can fit keeps less instead of failing late.
#include <agentctx/compaction/message.hpp>
#include <agentctx/runtime/session.hpp>

#include "file_text.hpp"
#include "open_session.hpp"
#include "run_until.hpp"
#include "scripted_summarizer.hpp"
#include "session_text.hpp"

#include <boost/asio/io_context.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace agentctx;
using namespace agentctx::runtime;
namespace asio = boost::asio;
namespace json = boost::json;
namespace fs = std::filesystem;
using boost::system::error_code;
using test::tokens;

namespace {

// A summary of about 700 tokens with the checkpoint's sections.
std::string long_summary()
{
    return "## Goal\nKeep the parser fast. " + tokens(690) + "\n\n## Next Steps\n1. Benchmark it.";
}

class summary_room_test : public ::testing::Test
{
protected:
    void SetUp() override
    {
        summarizer_ = std::make_shared<test::scripted_summarizer>(ioc_.get_executor());
        summarizer_->set_default({.text = long_summary()});
        path_ = fs::temp_directory_path() /
                ("agentctx-room-" + std::to_string(::getpid()) + "-" +
                 ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".jsonl");
    }
    void TearDown() override { fs::remove(path_); }

    // A 10,000-token window with reserveTokens 1,000: the compacted context must fit 9,000 tokens
    // and the summary may take 0.8 x 1,000 = 800 of them, so at most 8,200 can be kept.
    session_config small_window(std::int64_t keep = 8500)
    {
        session_config c;
        c.settings.keep_recent_tokens = keep;
        c.settings.reserve_tokens = 1000;
        c.settings.working_budget = compaction::token_amount{};  // 0: the window's threshold
        c.settings.background.enabled = false;
        c.settings.clear_tool_results.enabled = false;
        c.model = {"anthropic", "claude-sonnet-4-5", 10000, 0};
        c.summarizer = summarizer_;
        return c;
    }

    std::shared_ptr<session> open(const std::string& text, session_config c)
    {
        std::ofstream(path_, std::ios::binary) << text;
        auto s = test::open_session(ioc_.get_executor(), path_, std::move(c));
        if (s)
            s->on_event([this](const session_event& e) {
                if (const auto* b = std::get_if<budget_exceeded_event>(&e))
                    shortfalls_.push_back(*b);
            });
        return s;
    }

    std::string file() const { return test::read_text(path_); }

    template <class Start>
    std::pair<error_code, compaction_outcome> run(Start start)
    {
        bool done = false;
        std::pair<error_code, compaction_outcome> out;
        start([&](error_code ec, compaction_outcome o) {
            out = {ec, std::move(o)};
            done = true;
        });
        test::run_until(ioc_, [&] { return done; });
        return out;
    }

    static std::string turns(std::size_t n, std::size_t each, std::int64_t last_usage = 0)
    {
        test::session_text s;
        for (std::size_t i = 0; i < n; ++i)
            s.user("u" + std::to_string(i), tokens(each))
                .assistant("a" + std::to_string(i), tokens(each), i + 1 == n ? last_usage : 0);
        return s.text;
    }

    asio::io_context ioc_;
    fs::path path_;
    std::shared_ptr<test::scripted_summarizer> summarizer_;
    std::vector<budget_exceeded_event> shortfalls_;
};

}  // namespace

TEST_F(summary_room_test, the_cut_keeps_less_so_the_summary_fits)
{
    auto s = open(turns(10, 450), small_window());
    ASSERT_TRUE(s);
    const auto [ec, out] = run([&](auto h) { s->async_compact(std::nullopt, h); });
    ASSERT_FALSE(ec) << ec.message() << ": " << out.message;
    ASSERT_TRUE(out.result);
    // Turns of 900 tokens. keepRecentTokens 8,500 alone would cut at a0 (a9 back to a0 is 8,550)
    // and keep 8,550: with the ~706-token summary that is over 9,000 and fails after the model
    // call. Room for the 800-token budget leaves 8,200: the earliest cut keeping at most that is
    // u1 (u1..a9, 8,100 tokens).
    EXPECT_EQ(out.result->first_kept_entry_id, "u1");
    EXPECT_EQ(summarizer_->calls(), 1u);  // whole turns: no turn-prefix request
    EXPECT_LE(out.result->tokens_after, 9000);
    EXPECT_TRUE(shortfalls_.empty());
}

TEST_F(summary_room_test, a_suffix_with_no_room_for_the_summary_fails_before_any_model_call)
{
    test::session_text t;
    t.user("u0", tokens(100))
        .assistant("a0", tokens(100))
        .user("u1", tokens(100))
        .assistant("a1", tokens(100));
    t.user("u2", "run the build");                                // 13 chars: 4 tokens
    t.tool_call("run", "call_0", "bash", {{"command", "make"}});  // "bash" + {"command":"make"}: 6 tokens
    t.tool_result("log", "call_0", "bash", tokens(8300));         // the running batch's result
    auto s = open(t.text, small_window());
    ASSERT_TRUE(s);
    const auto before = file();
    const auto [ec, out] = run([&](auto h) { s->async_compact(std::nullopt, h); });
    EXPECT_EQ(ec, compaction::make_error_code(compaction::errc::budget_exceeded)) << ec.message();
    EXPECT_NE(out.message.find("from entry run, ~8306 tokens"), std::string::npos) << out.message;
    EXPECT_EQ(summarizer_->calls(), 0u);
    EXPECT_EQ(file(), before);
    ASSERT_EQ(shortfalls_.size(), 1u);
    const auto& b = shortfalls_[0];
    EXPECT_EQ(b.reason, compaction_reason::manual);
    EXPECT_EQ(b.input_tokens, 400 + 4 + 6 + 8300);
    EXPECT_EQ(b.required_tokens, 8306);  // the smallest suffix the cut can keep: the running batch
    EXPECT_EQ(b.required_entry_id, "run");
    EXPECT_EQ(b.summary_tokens, 800);
    EXPECT_EQ(b.allowance, 10000 - 1000);
    EXPECT_EQ(b.boundary_entry_id, "u0");
}

TEST_F(summary_room_test, the_allowance_is_the_working_budget_when_it_triggered)
{
    auto c = small_window(400);  // a 200,000 window below: the summary's room is no concern
    c.model.context_window = 200000;
    c.settings.reserve_tokens = 16384;
    c.settings.working_budget = compaction::token_amount{1000, 0};  // below 200,000 - 16,384
    c.required.ids = {"u0"};                                        // nothing may be summarized
    auto s = open(turns(10, 100, 2000), c);
    ASSERT_TRUE(s);
    compaction::diagnostics diag;
    const auto last = compaction::decode_message(
        json::object{
            {"role", "assistant"},
            {"content", json::array{json::object{{"type", "text"}, {"text", tokens(100)}}}},
            {"api", "anthropic-messages"},
            {"provider", "anthropic"},
            {"model", "claude-sonnet-4-5"},
            {"usage", test::session_text::usage(2000)},
            {"stopReason", "stop"},
            {"timestamp", 1768467800000.0}},
        "",
        diag
    );
    ASSERT_TRUE(last) << diag.message;
    const auto [ec, out] = run([&](auto h) { s->async_on_turn_end(*last, h); });
    EXPECT_EQ(ec, compaction::make_error_code(compaction::errc::budget_exceeded))
        << ec.message() << ": " << out.message;
    ASSERT_EQ(shortfalls_.size(), 1u);
    EXPECT_EQ(shortfalls_[0].reason, compaction_reason::threshold);
    EXPECT_EQ(shortfalls_[0].allowance, 1000);    // not 200,000 - 16,384
    EXPECT_EQ(shortfalls_[0].summary_tokens, 0);  // the required entry held the cut
}
