// HTTP providers against the loopback server: every scripted case, retries, cancellation, secrets.
#include <agentctx/providers/http_summarizer.hpp>
#include <agentctx/runtime/error.hpp>
#include <agentctx/runtime/jsonl_store.hpp>
#include <agentctx/runtime/session.hpp>

#include "fake_provider_server.hpp"
#include "session_text.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json/parse.hpp>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/resource.h>
#include <thread>

using namespace agentctx;
using namespace agentctx::providers;
namespace asio = boost::asio;
using boost::system::error_code;
using test::scripted_response;

namespace {

compaction::summary_prompt prompt()
{
    compaction::summary_prompt p;
    p.system_prompt = "SYS";
    p.prompt = "<conversation>\n[User]: hi\n</conversation>";
    p.max_output_tokens = 1000;
    return p;
}

struct result
{
    bool done = false;
    error_code ec;
    compaction::summary_output out;
    std::chrono::steady_clock::time_point at;
};

class provider_test : public ::testing::Test
{
protected:
    provider_config config(wire_format f = wire_format::openai, bool stream = false)
    {
        provider_config c;
        c.format = f;
        c.name = f == wire_format::openai ? "openai" : "anthropic";
        c.base_url = server_.base_url() + (f == wire_format::openai ? "/v1" : "");
        c.model = "test-model";
        c.api_key = "sk-secret-KEY-12345";
        c.stream = stream;
        c.base_delay = std::chrono::milliseconds(10);
        c.idle_timeout = std::chrono::seconds(1);
        return c;
    }

    std::shared_ptr<result> call(summarizer& s, asio::cancellation_slot slot = {})
    {
        auto r = std::make_shared<result>();
        s.async_summarize(
            prompt(),
            asio::bind_cancellation_slot(
                slot,
                [r](error_code ec, compaction::summary_output out) {
                    r->done = true;
                    r->ec = ec;
                    r->out = std::move(out);
                    r->at = std::chrono::steady_clock::now();
                }
            )
        );
        return r;
    }

    template <class Pred>
    void run_until(Pred p, std::chrono::seconds limit = std::chrono::seconds(30))
    {
        const auto end = std::chrono::steady_clock::now() + limit;
        ioc_.restart();
        while (!p() && std::chrono::steady_clock::now() < end)
            ioc_.run_one_for(std::chrono::milliseconds(20));
        ASSERT_TRUE(p()) << "timed out";
    }

    test::fake_provider_server server_;
    asio::io_context ioc_{1};
};

std::size_t open_fds()
{
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd"))
        ++n;
    return n;
}

}  // namespace

TEST_F(provider_test, openai_plain_success_with_cache_buckets)
{
    server_.push({.body = test::openai_body("## Goal\nplain")});
    http_summarizer s(ioc_.get_executor(), config());
    auto r = call(s);
    run_until([&] { return r->done; });
    ASSERT_FALSE(r->ec) << r->ec.message();
    EXPECT_EQ(r->out.text, "## Goal\nplain");  // reasoning_content is not part of it
    EXPECT_EQ(r->out.stop, compaction::stop_reason::stop);
    EXPECT_EQ(s.last_usage().input, 60);
    EXPECT_EQ(s.last_usage().cache_read, 40);
    EXPECT_EQ(s.last_usage().output, 20);
    EXPECT_EQ(s.last_usage().total_tokens, 120);
    const auto reqs = server_.requests();
    ASSERT_EQ(reqs.size(), 1u);
    EXPECT_EQ(reqs[0].target, "/v1/chat/completions");
    EXPECT_EQ(reqs[0].header("authorization"), "Bearer sk-secret-KEY-12345");
    EXPECT_EQ(reqs[0].header("expect"), "");  // no 100-continue wait
    EXPECT_EQ(boost::json::parse(reqs[0].body).at("max_tokens"), 1000);
}

TEST_F(provider_test, a_base_url_with_credentials_and_a_query_is_joined_and_logged_masked)
{
    server_.push({.body = test::openai_body("## Goal\nplain")});
    auto c = config();
    c.base_url = "http://user:pa55word@" + server_.base_url().substr(std::string("http://").size()) +
                 "/v1?api-key=QUERYKEY";
    std::ostringstream captured;
    auto logger = std::make_shared<spdlog::logger>(
        "capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(captured)
    );
    logger->set_level(spdlog::level::debug);
    http_summarizer s(ioc_.get_executor(), c, logger);
    auto r = call(s);
    run_until([&] { return r->done; });
    ASSERT_FALSE(r->ec) << r->ec.message();
    const auto reqs = server_.requests();
    ASSERT_EQ(reqs.size(), 1u);
    EXPECT_EQ(reqs[0].target, "/v1/chat/completions?api-key=QUERYKEY");
    const auto log = captured.str();
    EXPECT_NE(log.find("url=http://***@127.0.0.1:"), std::string::npos) << log;
    EXPECT_NE(log.find("/v1/chat/completions?api-key=*** "), std::string::npos) << log;
    EXPECT_EQ(log.find("QUERYKEY"), std::string::npos) << log;
    EXPECT_EQ(log.find("pa55word"), std::string::npos) << log;
}

TEST_F(provider_test, openai_streaming_and_progress)
{
    server_.push(
        {.chunks = test::openai_stream({"## Goal\n", "str", "eamed"}),
         .chunk_gap = std::chrono::milliseconds(5)}
    );
    http_summarizer s(ioc_.get_executor(), config(wire_format::openai, true));
    std::vector<std::size_t> progress;
    s.on_progress([&](std::size_t n) { progress.push_back(n); });
    auto r = call(s);
    run_until([&] { return r->done; });
    ASSERT_FALSE(r->ec) << r->ec.message();
    EXPECT_EQ(r->out.text, "## Goal\nstreamed");
    EXPECT_EQ(s.last_usage().input, 200);
    EXPECT_EQ(s.last_usage().cache_read, 100);
    EXPECT_EQ(s.last_usage().total_tokens, 330);
    ASSERT_FALSE(progress.empty());
    EXPECT_EQ(progress.back(), std::string("## Goal\nstreamed").size());
}

TEST_F(provider_test, anthropic_plain_and_streaming_exclude_thinking)
{
    server_.push({.body = test::anthropic_body("## Goal\nclaude")});
    server_.push({.chunks = test::anthropic_stream({"## Goal\n", "claude streamed"})});
    http_summarizer plain(ioc_.get_executor(), config(wire_format::anthropic, false));
    auto a = call(plain);
    run_until([&] { return a->done; });
    ASSERT_FALSE(a->ec) << a->ec.message();
    EXPECT_EQ(a->out.text, "## Goal\nclaude");
    EXPECT_EQ(plain.last_usage().input, 50);
    EXPECT_EQ(plain.last_usage().cache_read, 200);
    EXPECT_EQ(plain.last_usage().cache_write, 10);
    EXPECT_EQ(plain.last_usage().total_tokens, 285);
    http_summarizer streamed(ioc_.get_executor(), config(wire_format::anthropic, true));
    auto b = call(streamed);
    run_until([&] { return b->done; });
    ASSERT_FALSE(b->ec) << b->ec.message();
    EXPECT_EQ(b->out.text, "## Goal\nclaude streamed");
    EXPECT_EQ(streamed.last_usage().output, 40);
    const auto reqs = server_.requests();
    EXPECT_EQ(reqs[0].target, "/v1/messages");
    EXPECT_EQ(reqs[0].header("x-api-key"), "sk-secret-KEY-12345");
    EXPECT_EQ(reqs[0].header("anthropic-version"), "2023-06-01");
}

TEST_F(provider_test, length_stop_is_reported_not_hidden)
{
    server_.push({.body = test::openai_body("## Goal\ncut off mid", "length")});
    server_.push({.chunks = test::anthropic_stream({"## Goal\ncut"}, "max_tokens")});
    http_summarizer o(ioc_.get_executor(), config());
    http_summarizer a(ioc_.get_executor(), config(wire_format::anthropic, true));
    auto r1 = call(o);
    run_until([&] { return r1->done; });
    auto r2 = call(a);
    run_until([&] { return r2->done; });
    EXPECT_FALSE(r1->ec);
    EXPECT_EQ(r1->out.stop, compaction::stop_reason::length);
    EXPECT_EQ(r2->out.stop, compaction::stop_reason::length);
}

TEST_F(provider_test, rate_limit_honours_retry_after)
{
    server_.push(
        {.status = 429,
         .headers = {{"retry-after", "1"}},
         .body = R"({"error":{"message":"slow down","type":"rate_limit_error"}})"}
    );
    server_.push({.body = test::openai_body("## Goal\nafter wait")});
    auto c = config();
    c.base_delay = std::chrono::seconds(20);  // if Retry-After were ignored, this would time out
    http_summarizer s(ioc_.get_executor(), c);
    const auto start = std::chrono::steady_clock::now();
    auto r = call(s);
    run_until([&] { return r->done; }, std::chrono::seconds(10));
    ASSERT_FALSE(r->ec) << r->ec.message();
    EXPECT_GE(r->at - start, std::chrono::milliseconds(900));
    EXPECT_EQ(server_.requests().size(), 2u);
}

TEST_F(provider_test, server_errors_retry_then_give_up)
{
    server_.push({.status = 500, .body = "oops"});
    server_.push({.status = 503, .body = "{}"});
    server_.push({.body = test::openai_body("## Goal\nthird time")});
    http_summarizer s(ioc_.get_executor(), config());
    auto r = call(s);
    run_until([&] { return r->done; });
    ASSERT_FALSE(r->ec) << r->ec.message();
    EXPECT_EQ(server_.requests().size(), 3u);

    server_.set_default({.status = 500, .body = "still broken"});
    auto c = config();
    c.max_retries = 2;
    http_summarizer s2(ioc_.get_executor(), c);
    auto r2 = call(s2);
    run_until([&] { return r2->done; });
    EXPECT_EQ(r2->ec, make_error_code(errc::transient));
    EXPECT_EQ(s2.last_failure().attempts, 3);
    EXPECT_EQ(s2.last_failure().http_status, 500);
    EXPECT_EQ(server_.requests().size(), 6u);
}

TEST_F(provider_test, the_failure_detail_travels_with_the_completion)
{
    // Hosts read why a request failed from the summarizer interface, not from http_summarizer.
    server_.set_default({.status = 500, .body = "still broken"});
    auto c = config();
    c.max_retries = 1;
    http_summarizer http(ioc_.get_executor(), c);
    summarizer& s = http;
    auto r = call(s);
    run_until([&] { return r->done; });
    EXPECT_EQ(r->ec, make_error_code(errc::transient));
    EXPECT_TRUE(r->out.text.empty());
    EXPECT_EQ(r->out.failure_detail, http.last_failure().message + ", 2 attempt(s)");
    EXPECT_NE(r->out.failure_detail.find("500"), std::string::npos) << r->out.failure_detail;
    EXPECT_EQ(r->out.failure_detail.find("still broken"), std::string::npos) << "never the raw body";

    server_.set_default({.body = test::openai_body("## Goal\nfine")});
    auto ok = call(s);
    run_until([&] { return ok->done; });
    ASSERT_FALSE(ok->ec) << ok->ec.message();
    EXPECT_TRUE(ok->out.failure_detail.empty());
}

TEST_F(provider_test, connection_reset_mid_body_is_transient_and_retried)
{
    server_.push({.body = test::openai_body("## Goal\nnever arrives"), .reset_after = 20});
    server_.push({.body = test::openai_body("## Goal\nsecond try")});
    http_summarizer s(ioc_.get_executor(), config());
    auto r = call(s);
    run_until([&] { return r->done; });
    ASSERT_FALSE(r->ec) << r->ec.message();
    EXPECT_EQ(r->out.text, "## Goal\nsecond try");
    EXPECT_EQ(server_.requests().size(), 2u);
}

TEST_F(provider_test, malformed_json_is_not_retried)
{
    server_.push({.body = "this is not json"});
    http_summarizer s(ioc_.get_executor(), config());
    auto r = call(s);
    run_until([&] { return r->done; });
    EXPECT_EQ(r->ec, make_error_code(errc::malformed_response));
    EXPECT_EQ(server_.requests().size(), 1u);
}

TEST_F(provider_test, a_stalled_stream_times_out_as_transient)
{
    server_.set_default(
        {.chunks = {"data: {\"choices\":[{\"delta\":{\"content\":\"## Go\"}}]}\n\n"}, .stall = true}
    );
    auto c = config(wire_format::openai, true);
    c.max_retries = 0;  // curl's low-speed check averages over a few seconds: ~7 s per stalled attempt
    http_summarizer s(ioc_.get_executor(), c);
    auto r = call(s);
    run_until([&] { return r->done; });
    EXPECT_EQ(r->ec, make_error_code(errc::transient));
    EXPECT_EQ(s.last_failure().attempts, 1);
    EXPECT_EQ(server_.requests().size(), 1u);
}

TEST_F(provider_test, context_overflow_is_classified_and_never_retried)
{
    server_.push(
        {.status = 400,
         .body =
             R"({"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}})"}
    );
    http_summarizer s(ioc_.get_executor(), config());
    auto r = call(s);
    run_until([&] { return r->done; });
    EXPECT_EQ(r->ec, make_error_code(errc::context_overflow));
    EXPECT_EQ(s.last_failure().attempts, 1);
    EXPECT_EQ(s.last_failure().error_type, "context_length_exceeded");
    server_.push(
        {.status = 400,
         .body =
             R"({"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}})"}
    );
    http_summarizer a(ioc_.get_executor(), config(wire_format::anthropic));
    auto r2 = call(a);
    run_until([&] { return r2->done; });
    EXPECT_EQ(r2->ec, make_error_code(errc::context_overflow));
    EXPECT_EQ(server_.requests().size(), 2u);
}

TEST_F(provider_test, stream_error_event_is_classified)
{
    server_.push(
        {.chunks = {"event: error\ndata: "
                    "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}"
                    "}\n\n"}}
    );
    server_.push({.chunks = test::anthropic_stream({"## Goal\nok"})});
    http_summarizer s(ioc_.get_executor(), config(wire_format::anthropic, true));
    auto r = call(s);
    run_until([&] { return r->done; });
    ASSERT_FALSE(r->ec) << r->ec.message();  // overloaded is transient: retried
    EXPECT_EQ(server_.requests().size(), 2u);
}

TEST_F(provider_test, auth_failure_is_not_retried)
{
    server_.push(
        {.status = 401,
         .body =
             R"({"error":{"message":"Incorrect API key provided: sk-secret-KEY-12345","type":"invalid_request_error","code":"invalid_api_key"}})"}
    );
    http_summarizer s(ioc_.get_executor(), config());
    auto r = call(s);
    run_until([&] { return r->done; });
    EXPECT_EQ(r->ec, make_error_code(errc::auth));
    EXPECT_EQ(server_.requests().size(), 1u);
}

TEST_F(provider_test, cancellation_stops_the_transfer_and_the_backoff_sleep)
{
    server_.push({.body = test::openai_body("late"), .delay = std::chrono::seconds(5)});
    http_summarizer s(ioc_.get_executor(), config());
    asio::cancellation_signal sig;
    auto r = call(s, sig.slot());
    asio::steady_timer t(ioc_, std::chrono::milliseconds(50));
    t.async_wait([&](error_code) { sig.emit(asio::cancellation_type::terminal); });
    const auto start = std::chrono::steady_clock::now();
    run_until([&] { return r->done; });
    EXPECT_EQ(r->ec, asio::error::operation_aborted);  // as the summarizer interface promises
    EXPECT_LT(r->at - start, std::chrono::seconds(2));
    EXPECT_EQ(s.client().live_transfers(), 0u);

    server_.push({.status = 429, .headers = {{"retry-after", "30"}}, .body = "{}"});
    asio::cancellation_signal sig2;
    auto r2 = call(s, sig2.slot());
    run_until([&] { return server_.requests().size() == 2; });
    asio::steady_timer t2(ioc_, std::chrono::milliseconds(100));
    t2.async_wait([&](error_code) { sig2.emit(asio::cancellation_type::terminal); });
    const auto start2 = std::chrono::steady_clock::now();
    run_until([&] { return r2->done; });
    EXPECT_EQ(r2->ec, asio::error::operation_aborted);
    EXPECT_LT(r2->at - start2, std::chrono::seconds(5));  // not the 30 s Retry-After
}

TEST_F(provider_test, keep_alive_reuses_one_connection)
{
    http_summarizer s(ioc_.get_executor(), config());
    for (int i = 0; i < 20; ++i)
    {
        auto r = call(s);
        run_until([&] { return r->done; });
        ASSERT_FALSE(r->ec);
    }
    EXPECT_EQ(server_.connections(), 1u);
}

// Behaviour only (the cancellation latency is measured by bench_provider's BM_cancel_half_of_1000).
TEST_F(provider_test, thousand_concurrent_requests_and_half_cancelled)
{
    rlimit lim{};
    getrlimit(RLIMIT_NOFILE, &lim);
    if (lim.rlim_cur < 4096 && lim.rlim_max >= 4096)
    {
        lim.rlim_cur = 4096;
        setrlimit(RLIMIT_NOFILE, &lim);
    }
    {
        asio::steady_timer warm(ioc_, std::chrono::milliseconds(1));  // Asio creates its reactor fds lazily
        warm.wait();
        providers::http_client warmup(ioc_.get_executor());
    }
    const auto baseline = open_fds();
    server_.set_default(
        {.body = test::openai_body("## Goal\nconcurrent"), .delay = std::chrono::milliseconds(300)}
    );
    {
        http_summarizer s(ioc_.get_executor(), config());
        std::vector<std::unique_ptr<asio::cancellation_signal>> signals;
        std::vector<std::shared_ptr<result>> results;
        for (int i = 0; i < 1000; ++i)
        {
            signals.push_back(std::make_unique<asio::cancellation_signal>());
            results.push_back(call(s, signals.back()->slot()));
        }
        asio::steady_timer t(ioc_, std::chrono::milliseconds(100));
        t.async_wait([&](error_code) {
            for (int i = 0; i < 1000; i += 2)
                signals[static_cast<std::size_t>(i)]->emit(asio::cancellation_type::terminal);
        });
        run_until(
            [&] {
                return std::all_of(results.begin(), results.end(), [](const auto& r) { return r->done; });
            },
            std::chrono::seconds(60)
        );
        int ok = 0, cancelled = 0;
        for (std::size_t i = 0; i < results.size(); ++i)
        {
            if (i % 2 == 0)
            {
                EXPECT_EQ(results[i]->ec, asio::error::operation_aborted)
                    << i << " " << results[i]->ec.message();
                cancelled += results[i]->ec == asio::error::operation_aborted;
            }
            else
            {
                EXPECT_FALSE(results[i]->ec) << i << " " << results[i]->ec.message();
                EXPECT_EQ(results[i]->out.text, "## Goal\nconcurrent") << i;
                ok += !results[i]->ec;
            }
        }
        EXPECT_EQ(ok, 500);
        EXPECT_EQ(cancelled, 500);
        EXPECT_EQ(s.client().live_transfers(), 0u);  // no leaked transfer
    }
    // No leaked descriptor once the provider is gone (the server closes its ends on its thread).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (open_fds() > baseline && std::chrono::steady_clock::now() < deadline)
    {
        ioc_.restart();
        ioc_.poll();
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_EQ(open_fds(), baseline);
}

TEST_F(provider_test, the_api_key_never_reaches_logs_or_errors)
{
    std::ostringstream captured;
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(captured);
    auto logger = std::make_shared<spdlog::logger>("capture", sink);
    logger->set_level(spdlog::level::trace);
    server_.push({.status = 500, .body = "error for key sk-secret-KEY-12345"});
    server_.push({.body = test::openai_body("## Goal\nok")});
    server_.push(
        {.status = 401,
         .body =
             R"({"error":{"message":"Incorrect API key provided: sk-secret-KEY-12345","code":"invalid_api_key"}})"}
    );
    http_summarizer s(ioc_.get_executor(), config(), logger);
    auto a = call(s);
    run_until([&] { return a->done; });
    auto b = call(s);
    run_until([&] { return b->done; });
    EXPECT_EQ(b->ec, make_error_code(errc::auth));
    logger->flush();
    const std::string log = captured.str();
    EXPECT_NE(log.find("authorization: <redacted>"), std::string::npos) << log;
    EXPECT_NE(log.find("retry"), std::string::npos);
    EXPECT_EQ(log.find("sk-secret-KEY-12345"), std::string::npos) << log;
    EXPECT_EQ(s.last_failure().message.find("sk-secret"), std::string::npos);
    EXPECT_EQ(b->ec.message().find("sk-secret"), std::string::npos);
}

TEST_F(provider_test, session_compacts_through_the_openai_provider_and_a_length_stop_changes_nothing)
{
    namespace fs = std::filesystem;
    const auto dir = fs::temp_directory_path() / ("agentctx-e2e-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    test::session_text t;
    for (int i = 0; i < 10; ++i)
        t.user("u" + std::to_string(i), std::string(400, 'x'))
            .assistant("a" + std::to_string(i), std::string(400, 'y'));
    auto open = [&](const std::string& name) {
        std::ofstream(dir / name, std::ios::binary) << t.text;
        compaction::diagnostics diag;
        auto store = runtime::jsonl_store::open(dir / name, {}, diag).value();
        runtime::session_config c;
        c.settings.keep_recent_tokens = 400;
        c.model = {"openai", "test-model", 200000, 0};
        // The standalone request and its `length` refusal (cache-friendly ones fall back instead).
        c.settings.summary_request = compaction::summary_request_mode::standalone;
        c.summarizer =
            std::make_shared<http_summarizer>(ioc_.get_executor(), config(wire_format::openai, true));
        return runtime::session::open(ioc_.get_executor(), std::move(store), c, diag).value();
    };
    auto slurp = [&](const std::string& name) {
        std::ifstream f(dir / name, std::ios::binary);
        std::stringstream ss;
        ss << f.rdbuf();
        return ss.str();
    };

    server_.push({.chunks = test::openai_stream({"## Goal\nfrom the model"})});
    auto s = open("ok.jsonl");
    bool done = false;
    runtime::compaction_outcome outcome;
    s->async_compact(std::nullopt, [&](error_code ec, runtime::compaction_outcome o) {
        EXPECT_FALSE(ec) << ec.message() << o.message;
        outcome = o;
        done = true;
    });
    run_until([&] { return done; });
    ASSERT_TRUE(outcome.compacted);
    EXPECT_NE(slurp("ok.jsonl").find("\"summary\":\"## Goal\\nfrom the model"), std::string::npos);
    EXPECT_NE(slurp("ok.jsonl").find("\"summarizer\":\"openai:test-model\""), std::string::npos);
    const auto sent = boost::json::parse(server_.requests().back().body);
    EXPECT_NE(
        std::string(sent.at("messages").as_array()[1].at("content").as_string())
            .find("<conversation>\n[User]: xxxx"),
        std::string::npos
    );

    server_.push({.chunks = test::openai_stream({"## Goal\ncut off mid-sen"}, "length")});
    auto s2 = open("length.jsonl");
    const auto before = slurp("length.jsonl");
    done = false;
    error_code ec2;
    s2->async_compact(std::nullopt, [&](error_code ec, runtime::compaction_outcome) {
        ec2 = ec;
        done = true;
    });
    run_until([&] { return done; });
    EXPECT_EQ(ec2, compaction::make_error_code(compaction::errc::summary_truncated));
    EXPECT_EQ(slurp("length.jsonl"), before);
    s->close();
    s2->close();
    run_until([] { return true; });
    fs::remove_all(dir);
}

TEST_F(provider_test, total_cancellation_only_before_the_request_is_sent)
{
    server_.set_default({.body = test::openai_body("## Goal\nok"), .delay = std::chrono::milliseconds(200)});
    providers::http_client client(ioc_.get_executor());
    auto make = [&] {
        providers::http_request r;
        r.url = server_.base_url() + "/v1/chat/completions";
        r.body = "{}";
        return r;
    };
    // `total` right after initiation: nothing can have been sent yet, so it is honoured.
    asio::cancellation_signal early;
    error_code early_ec;
    bool early_done = false;
    client.async_request(
        make(),
        asio::bind_cancellation_slot(
            early.slot(),
            [&](error_code ec, providers::http_response) {
                early_ec = ec;
                early_done = true;
            }
        )
    );
    early.emit(asio::cancellation_type::total);
    run_until([&] { return early_done; });
    EXPECT_EQ(early_ec, asio::error::operation_aborted);
    // `total` 100 ms into a 200 ms reply: the request was sent, so it completes normally.
    asio::cancellation_signal late;
    error_code late_ec;
    long status = 0;
    bool late_done = false;
    client.async_request(
        make(),
        asio::bind_cancellation_slot(
            late.slot(),
            [&](error_code ec, providers::http_response res) {
                late_ec = ec;
                status = res.status;
                late_done = true;
            }
        )
    );
    asio::steady_timer t(ioc_, std::chrono::milliseconds(100));
    t.async_wait([&](error_code) { late.emit(asio::cancellation_type::total); });
    run_until([&] { return late_done; });
    EXPECT_FALSE(late_ec) << late_ec.message();
    EXPECT_EQ(status, 200);
}

TEST_F(provider_test, no_descriptor_outlives_the_client)
{
    {
        asio::steady_timer warm(ioc_, std::chrono::milliseconds(1));  // Asio creates its reactor fds lazily
        warm.wait();
        providers::http_client warmup(ioc_.get_executor());
    }
    const auto baseline = open_fds();
    {
        server_.set_default({.body = test::openai_body("## Goal\nok"), .delay = std::chrono::milliseconds(50)}
        );
        http_summarizer s(ioc_.get_executor(), config());
        std::vector<std::unique_ptr<asio::cancellation_signal>> sigs;
        std::vector<std::shared_ptr<result>> rs;
        for (int i = 0; i < 40; ++i)
        {
            sigs.push_back(std::make_unique<asio::cancellation_signal>());
            rs.push_back(call(s, sigs.back()->slot()));
        }
        asio::steady_timer t(ioc_, std::chrono::milliseconds(10));
        t.async_wait([&](error_code) {
            for (int i = 0; i < 40; i += 3)
                sigs[static_cast<std::size_t>(i)]->emit(asio::cancellation_type::terminal);
        });
        run_until([&] { return std::all_of(rs.begin(), rs.end(), [](const auto& r) { return r->done; }); });
        EXPECT_GT(s.client().live_sockets(), 0u);  // keep-alive connections are pooled
    }
    // The loopback server closes its ends on its own thread once it sees EOF: give it a moment.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (open_fds() > baseline && std::chrono::steady_clock::now() < deadline)
    {
        ioc_.restart();
        ioc_.poll();
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_EQ(open_fds(), baseline);  // the pool's sockets were closed with the client
}
