// A session whose backend numbers tool calls per response (`call_0` every turn) compacts under the
// default settings, by hand and on overflow, and its context keeps every call with its own result.
#include <agentctx/compaction/call_pairing.hpp>
#include <agentctx/providers/chat_messages.hpp>
#include <agentctx/providers/offline_summarizer.hpp>
#include <agentctx/runtime/session.hpp>
#include <agentctx/runtime/snapshot.hpp>

#include "file_text.hpp"
#include "open_session.hpp"
#include "session_text.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/json/serialize.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace agentctx;
using namespace agentctx::runtime;
namespace asio = boost::asio;
using boost::system::error_code;
using test::tokens;

namespace {

// Twelve turns recorded from such a backend: a prompt, `call_0` running a build step, its
// 2,500-token log, and a short answer.
test::session_text twelve_turns_of_call_0()
{
    test::session_text s;
    for (int i = 0; i < 12; ++i)
    {
        const auto k = std::to_string(i);
        s.user("u" + k, "step " + k);
        s.tool_call("a" + k, "call_0", "bash", {{"command", "make step " + k}});
        s.tool_result("r" + k, "call_0", "bash", tokens(2500));
        s.assistant("f" + k, "done " + k);
    }
    return s;
}

// The same turns as a server wrote them before it refused results that cannot pair: a result
// for a call nobody made in turns 3 and 11, a second result for turn 5's call.
test::session_text jammed_turns()
{
    test::session_text s;
    for (int i = 0; i < 12; ++i)
    {
        const auto k = std::to_string(i);
        s.user("u" + k, "step " + k);
        s.tool_call("a" + k, "call_0", "bash", {{"command", "make step " + k}});
        s.tool_result("r" + k, "call_0", "bash", tokens(2500));
        if (i == 3 || i == 11)
            s.tool_result("x" + k, "call_9", "bash", "lost");
        if (i == 5)
            s.tool_result("y" + k, "call_0", "bash", "again");
        s.assistant("f" + k, "done " + k);
    }
    return s;
}

class reused_call_ids_test : public ::testing::Test
{
protected:
    std::shared_ptr<session> open(const test::session_text& text = twelve_turns_of_call_0())
    {
        path_ = std::filesystem::temp_directory_path() /
                ("agentctx-call0-" + std::to_string(::getpid()) + "-" +
                 ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".jsonl");
        std::ofstream(path_, std::ios::binary) << text.text;
        session_config c;  // the defaults: agentctx mode, keepRecentTokens 20,000, clearing on
        c.model = {"openai", "gpt-4.1", 200000, 0};
        c.summarizer = std::make_shared<providers::offline_summarizer>(ioc_.get_executor());
        return test::open_session(ioc_.get_executor(), path_, std::move(c));
    }
    void TearDown() override { std::filesystem::remove(path_); }

    template <class Start>
    std::pair<error_code, compaction_outcome> run(Start start)
    {
        std::pair<error_code, compaction_outcome> out;
        start([&](error_code ec, compaction_outcome o) { out = {ec, std::move(o)}; });
        ioc_.restart();
        ioc_.run();
        return out;
    }

    // Every call in the context is answered by a result of its own batch.
    static void expect_paired_turn_by_turn(const session& s)
    {
        const auto ctx = s.context();
        const auto p = compaction::pair_tool_calls(std::span<const compaction::context_message>(ctx));
        for (const auto& r : p.results)
        {
            EXPECT_EQ(r.kind, compaction::result_link_kind::paired);
            EXPECT_FALSE(r.late);
        }
        for (const auto& d : p.declarations)
            EXPECT_EQ(d.answers, 1u);
    }

    asio::io_context ioc_;
    std::filesystem::path path_;
};

}  // namespace

TEST_F(reused_call_ids_test, a_manual_compaction_under_the_defaults_commits)
{
    auto s = open();
    ASSERT_TRUE(s);
    const auto [ec, out] = run([&](auto h) { s->async_compact(std::nullopt, h); });
    ASSERT_FALSE(ec) << ec.message() << ": " << out.message;
    ASSERT_TRUE(out.compacted) << out.message;
    // From the end, turns 11 and 10 are 2 + 8 + 2,500 + 2 = 2,512 tokens each ("make step 10" is
    // one character longer), turns 9 to 5 are 2,511 each: 17,579. f4 makes 17,581 and r4 crosses
    // 20,000 at 20,081, so the cut is f4, the valid point after it.
    ASSERT_TRUE(out.result);
    EXPECT_EQ(out.result->first_kept_entry_id, "f4");
    const auto ctx = s->context();
    ASSERT_FALSE(ctx.empty());
    EXPECT_EQ(ctx[1].entry_id, "f4");  // the summary, then the kept suffix from f4
    EXPECT_EQ(ctx.size(), 1u + 1 + 7 * 4);
    expect_paired_turn_by_turn(*s);
}

TEST_F(reused_call_ids_test, overflow_recovery_compacts_and_asks_for_a_retry)
{
    auto s = open();
    ASSERT_TRUE(s);
    const auto [ec, out] = run([&](auto h) {
        s->async_recover_overflow("This model's maximum context length is 128000 tokens", h);
    });
    ASSERT_FALSE(ec) << ec.message() << ": " << out.message;
    EXPECT_TRUE(out.compacted) << out.message;
    EXPECT_TRUE(out.will_retry);
    expect_paired_turn_by_turn(*s);
}

// A session file written before the server refused such results compacts (it failed every
// compaction with transcript_invalid and drifted into a real overflow), and the request views
// of what it keeps carry no result without its call.
TEST_F(reused_call_ids_test, a_file_holding_results_that_cannot_pair_still_compacts)
{
    auto s = open(jammed_turns());
    ASSERT_TRUE(s);
    const auto [ec, out] = run([&](auto h) { s->async_compact(std::nullopt, h); });
    ASSERT_FALSE(ec) << ec.message() << ": " << out.message;
    ASSERT_TRUE(out.compacted) << out.message;
    ASSERT_TRUE(out.result);
    // x11 ("lost", 1 token) adds to turn 11: the cut stays at f4 (see above).
    EXPECT_EQ(out.result->first_kept_entry_id, "f4");
    const auto ctx = s->context();
    EXPECT_EQ(ctx.size(), 1u + 1 + 7 * 4 + 2);  // the summary, f4, turns 5 to 11, y5 and x11
    for (const auto format : {providers::wire_format::openai, providers::wire_format::anthropic})
    {
        const auto wire = boost::json::serialize(providers::to_wire_messages(format, ctx));
        EXPECT_EQ(wire.find("lost"), std::string::npos) << wire;
        EXPECT_EQ(wire.find("again"), std::string::npos) << wire;
    }
    const auto responses = boost::json::serialize(providers::to_responses_input(ctx));
    EXPECT_EQ(responses.find("lost"), std::string::npos);
    EXPECT_EQ(responses.find("again"), std::string::npos);
}
