// The library checks a client's usage counts and numbers on every append path and in the checks
// it is handed a message for; a file written before that check holds counts whose sums saturate.
#include <agentctx/providers/offline_summarizer.hpp>
#include <agentctx/runtime/session.hpp>
#include <agentctx/runtime/snapshot.hpp>

#include "open_session.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>

using namespace agentctx;
using namespace agentctx::runtime;
namespace asio = boost::asio;
namespace json = boost::json;
namespace fs = std::filesystem;
using boost::system::error_code;

namespace {

class client_values_test : public ::testing::Test
{
protected:
    void SetUp() override { path_ = test::new_session_file("agentctx-values"); }
    void TearDown() override { fs::remove_all(path_); }

    session_config config()
    {
        session_config c;
        c.model = {"anthropic", "claude-sonnet-4-5", 200000, 0};
        c.summarizer = std::make_shared<providers::offline_summarizer>(ioc_.get_executor());
        return c;
    }

    std::string text() const
    {
        std::ifstream f(path_, std::ios::binary);
        return std::string(std::istreambuf_iterator<char>(f), {});
    }

    static json::object assistant(const std::string& usage)
    {
        return json::parse(
                   R"({"role":"assistant","content":[{"type":"text","text":"hi"}],"provider":"anthropic",)"
                   R"("model":"claude-sonnet-4-5","stopReason":"stop","timestamp":1,"usage":)" +
                   usage + "}"
        )
            .as_object();
    }

    asio::io_context ioc_;
    fs::path path_;
};

}  // namespace

TEST_F(client_values_test, appends_refuse_usage_counts_out_of_range_with_the_field)
{
    auto s = test::open_session(ioc_.get_executor(), path_, config());
    ASSERT_TRUE(s);
    const auto before = text();
    compaction::diagnostics diag;
    error_code ec;
    s->async_append(
        json::object{{"type", "message"}, {"message", assistant(R"({"input":-1,"output":5})")}},
        diag,
        [&](error_code e, std::string) { ec = e; }
    );
    ioc_.run();
    EXPECT_EQ(ec, compaction::make_error_code(compaction::errc::invalid_value));
    EXPECT_EQ(diag.field, "message.usage.input");
    EXPECT_EQ(
        diag.message,
        "field 'message.usage.input': a token count must be a whole number from 0 to 1000000000000"
    );
    append_batch_result r;
    s->async_append_messages(
        {json::parse(R"({"role":"user","content":"q","timestamp":1})").as_object(),
         assistant(R"({"input":9223372036854775807,"output":5})")},
        [&](error_code e, append_batch_result out) { ec = e, r = std::move(out); }
    );
    ioc_.restart();
    ioc_.run();
    EXPECT_EQ(ec, compaction::make_error_code(compaction::errc::invalid_value));
    EXPECT_EQ(
        r.reason,
        "[1] field 'message.usage.input': a token count must be a whole number from 0 to 1000000000000"
    );
    EXPECT_EQ(text(), before);  // nothing written
}

TEST_F(client_values_test, a_turn_end_check_refuses_a_negative_usage_instead_of_switching_off)
{
    auto s = test::open_session(ioc_.get_executor(), path_, config());
    ASSERT_TRUE(s);
    compaction::message m;
    m.role = compaction::role::assistant;
    m.usage = compaction::usage{};
    m.usage->total_tokens = -1000000;
    error_code ec;
    compaction_outcome out;
    s->async_on_turn_end(m, [&](error_code e, compaction_outcome o) { ec = e, out = std::move(o); });
    ioc_.run();
    EXPECT_EQ(ec, compaction::make_error_code(compaction::errc::invalid_value));
    EXPECT_EQ(
        out.message, "field 'usage.totalTokens': a token count must be a whole number from 0 to 1000000000000"
    );
}

TEST_F(client_values_test, a_file_with_an_int64_max_usage_reports_a_saturated_count_not_a_negative_one)
{
    std::ofstream(
        path_, std::ios::app
    ) << R"({"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-15T09:00:01.000Z","message":{"role":"assistant","content":[{"type":"text","text":"hi"}],"provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":9223372036854775807,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0},"stopReason":"stop","timestamp":4102444800000}})"
      << "\n"
      << R"({"type":"message","id":"u2","parentId":"a1","timestamp":"2026-01-15T09:00:02.000Z","message":{"role":"user","content":"more words here","timestamp":4102444800001}})"
      << "\n";
    auto s = test::open_session(ioc_.get_executor(), path_, config());
    ASSERT_TRUE(s);
    EXPECT_EQ(s->current()->context_tokens(), std::numeric_limits<std::int64_t>::max());
}
