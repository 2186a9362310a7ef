// The agent server's turn-end and overflow routes: the session's checks over HTTP, with exact token counts.
#include <agentctx/compaction/llm_convert.hpp>

#include "server_fixture.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace agentctx;
namespace json = boost::json;
using test::agent_server_test;

namespace {

using server_turns = agent_server_test;

// One user turn and its answer in Chat Completions format, long enough to be worth compacting.
std::string chat_turn(int i)
{
    return R"({"messages":[{"role":"user","content":"step )" + std::to_string(i) + " " +
           std::string(800, 'u') + R"("},{"role":"assistant","content":")" + std::string(800, 'a') +
           R"("}]})";
}

constexpr std::string_view overflow_body =
    R"({"status":400,"body":"{\"error\":{\"message\":\"This model's maximum context length is 5000 tokens. However, your messages resulted in 5400 tokens.\",\"type\":\"invalid_request_error\",\"code\":\"context_length_exceeded\"}}"})";

}  // namespace

TEST_F(server_turns, turn_end_under_the_threshold_reports_the_usage_and_does_not_compact)
{
    start({}, 5000, 1000);  // threshold 4000
    const auto id = new_session();
    ASSERT_EQ(sync("POST", "/v1/sessions/" + id + "/messages?format=openai", chat_turn(0))->res.status, 201);
    const auto r = sync(
        "POST",
        "/v1/sessions/" + id + "/turn-end",
        R"({"format":"openai","usage":{"prompt_tokens":1000,"completion_tokens":50}})"
    );
    ASSERT_EQ(r->res.status, 200) << r->res.body;
    EXPECT_EQ(
        r->json(),
        json::parse(R"({"compacted":false,"retry":false,"tokens":1050,"contextWindow":5000,"threshold":4000,
                                         "message":"under the threshold"})")
    );
}

TEST_F(server_turns, turn_end_over_the_threshold_compacts_and_the_context_reads_back_compacted)
{
    start({}, 5000, 1000);
    const auto id = new_session();
    for (int i = 0; i < 5; ++i)
        ASSERT_EQ(
            sync("POST", "/v1/sessions/" + id + "/messages?format=openai", chat_turn(i))->res.status, 201
        );
    // Anthropic's usage as returned: 4000 + 300 cached + 200 written + 100 output = 4600 > 4000.
    const auto r = sync(
        "POST",
        "/v1/sessions/" + id + "/turn-end",
        R"({"format":"anthropic","usage":{"input_tokens":4000,"cache_read_input_tokens":300,"cache_creation_input_tokens":200,"output_tokens":100}})"
    );
    ASSERT_EQ(r->res.status, 200) << r->res.body;
    const auto v = r->json();
    EXPECT_EQ(v.at("compacted"), true);
    EXPECT_EQ(v.at("retry"), false);
    EXPECT_EQ(v.at("tokens"), 4600);
    EXPECT_EQ(v.at("reason"), "threshold");
    EXPECT_LT(v.at("tokensAfter").as_int64(), v.at("tokensBefore").as_int64());
    const auto ctx = sync("GET", "/v1/sessions/" + id + "/context?wire=openai")->json();
    EXPECT_EQ(ctx.at("messages").at(0).at("role"), "compactionSummary");
    EXPECT_EQ(ctx.at("messages").at(0).at("entryId"), v.at("entryId"));
    // agentctx mode: the summary reaches the model framed as reference history.
    EXPECT_EQ(
        std::string(ctx.at("wire").at(0).at("content").at(0).at("text").as_string())
            .rfind(
                std::string(compaction::reference_compaction_prefix) +
                    std::string(compaction::reference_history_notice),
                0
            ),
        0u
    ) << ctx.at("wire").at(0);
    // The kept turn comes back as it was posted.
    const auto& wire = ctx.at("wire").as_array();
    EXPECT_EQ(
        wire.back(), json::parse(R"({"role":"assistant","content":")" + std::string(800, 'a') + R"("})")
    );
}

TEST_F(server_turns, turn_end_needs_a_format_and_an_assistant_message)
{
    start();
    const auto id = new_session();
    const auto none = sync("POST", "/v1/sessions/" + id + "/turn-end", R"({"format":"openai"})");
    EXPECT_EQ(none->res.status, 409) << none->res.body;
    EXPECT_EQ(none->json().at("error").at("code"), "no_assistant_message");
    const auto bad = sync("POST", "/v1/sessions/" + id + "/turn-end", R"({"format":"gemini"})");
    EXPECT_EQ(bad->res.status, 400);
    EXPECT_EQ(bad->json().at("error").at("message"), "format: must be openai, responses or anthropic");
    EXPECT_EQ(
        sync("POST", "/v1/sessions/" + id + "/turn-end", R"({"format":"openai","usage":3})")->res.status, 400
    );
}

TEST_F(server_turns, an_error_that_is_not_an_overflow_is_not_retried)
{
    start();
    const auto id = new_session();
    ASSERT_EQ(sync("POST", "/v1/sessions/" + id + "/messages?format=openai", chat_turn(0))->res.status, 201);
    const auto before = file(id);
    const auto r =
        sync("POST", "/v1/sessions/" + id + "/overflow", R"({"status":429,"body":"rate limit exceeded"})");
    ASSERT_EQ(r->res.status, 200) << r->res.body;
    EXPECT_EQ(
        r->json(),
        json::parse(
            R"({"overflow":false,"retry":false,"compacted":false,"message":"the error is not a context overflow"})"
        )
    );
    EXPECT_EQ(file(id), before);
    EXPECT_EQ(sync("POST", "/v1/sessions/" + id + "/overflow", R"({"body":"x"})")->res.status, 400);
}

TEST_F(server_turns, an_overflow_compacts_once_and_a_second_without_progress_is_not_retried)
{
    start({}, 5000, 1000);
    const auto id = new_session();
    for (int i = 0; i < 5; ++i)
        ASSERT_EQ(
            sync("POST", "/v1/sessions/" + id + "/messages?format=openai", chat_turn(i))->res.status, 201
        );
    const auto first = sync("POST", "/v1/sessions/" + id + "/overflow", std::string(overflow_body));
    ASSERT_EQ(first->res.status, 200) << first->res.body;
    EXPECT_EQ(first->json().at("overflow"), true);
    EXPECT_EQ(first->json().at("retry"), true);
    EXPECT_EQ(first->json().at("compacted"), true);
    EXPECT_EQ(first->json().at("reason"), "overflow");
    const auto ctx = sync("GET", "/v1/sessions/" + id + "/context")->json();
    EXPECT_EQ(ctx.at("messages").at(0).at("entryId"), first->json().at("entryId"));
    // The retried request overflowed again, with nothing new in between: give up.
    const auto second = sync("POST", "/v1/sessions/" + id + "/overflow", std::string(overflow_body));
    ASSERT_EQ(second->res.status, 200) << second->res.body;
    EXPECT_EQ(second->json().at("overflow"), true);
    EXPECT_EQ(second->json().at("retry"), false);
    EXPECT_EQ(second->json().at("compacted"), false);
    EXPECT_NE(
        std::string(second->json().at("message").as_string()).find("Context overflow recovery failed"),
        std::string::npos
    );
    // A successful turn is progress: the next overflow may compact and retry again.
    ASSERT_EQ(sync("POST", "/v1/sessions/" + id + "/messages?format=openai", chat_turn(9))->res.status, 201);
    const auto third = sync("POST", "/v1/sessions/" + id + "/overflow", R"({"status":413,"body":""})");
    ASSERT_EQ(third->res.status, 200) << third->res.body;
    EXPECT_EQ(third->json().at("overflow"), true);
    EXPECT_EQ(third->json().at("retry"), true) << third->res.body;
}

// Over startAt × threshold (0.7 × 4000) a turn end starts a background compaction and returns;
// the next turn end over the threshold commits it. The metrics count both steps and each check.
TEST_F(server_turns, a_background_compaction_is_prepared_then_committed_and_counted)
{
    start({}, 5000, 1000);
    const auto id = new_session();
    for (int i = 0; i < 4; ++i)
        ASSERT_EQ(
            sync("POST", "/v1/sessions/" + id + "/messages?format=openai", chat_turn(i))->res.status, 201
        );
    auto sub = subscribe(id);
    const auto started = sync(
        "POST",
        "/v1/sessions/" + id + "/turn-end",
        R"({"format":"openai","usage":{"prompt_tokens":3000,"completion_tokens":100}})"
    );
    ASSERT_EQ(started->res.status, 200) << started->res.body;
    EXPECT_EQ(started->json().at("compacted"), false);
    run_until([&] { return sub->text.find("event: compaction_prepared") != std::string::npos; });
    ASSERT_EQ(sync("POST", "/v1/sessions/" + id + "/messages?format=openai", chat_turn(4))->res.status, 201);
    const auto r = sync(
        "POST",
        "/v1/sessions/" + id + "/turn-end",
        R"({"format":"openai","usage":{"prompt_tokens":4500,"completion_tokens":100}})"
    );
    ASSERT_EQ(r->res.status, 200) << r->res.body;
    EXPECT_EQ(r->json().at("compacted"), true);
    EXPECT_EQ(r->json().at("reason"), "threshold");
    const auto metrics = sync("GET", "/metrics")->res.body;
    for (const std::string line :
         {"agentctx_background_compactions_total{outcome=\"prepared\"} 1\n",
          "agentctx_background_compactions_total{outcome=\"committed\"} 1\n",
          "agentctx_compactions_total{reason=\"background\",outcome=\"committed\"} 1\n",
          "agentctx_turn_check_seconds_count 2\n"})
        EXPECT_NE(metrics.find(line), std::string::npos) << line << metrics;
    unsubscribe(*sub);
}
