// No read deadline by default: every summary, count and native call (streamed or not) has no
// elapsed or no-bytes deadline unless `idleTimeoutMs` asks for one; 0 means off.
#include <agentctx/providers/http_summarizer.hpp>
#include <agentctx/providers/provider_config.hpp>

#include "native_compaction.hpp"
#include "wire_format.hpp"

#include "fake_provider_server.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

using namespace agentctx;
using namespace agentctx::providers;
namespace json = boost::json;
using boost::system::error_code;

namespace {

compaction::summary_prompt prompt()
{
    compaction::summary_prompt p;
    p.system_prompt = "SYS";
    p.prompt = "<conversation>\n[User]: hi\n</conversation>";
    p.max_output_tokens = 1000;
    return p;
}

provider_config from_settings(const std::string& text, diagnostics& d, error_code* ec = nullptr)
{
    const auto get = [](const char* n) -> const char* {
        const std::string_view name(n);
        return name == "OPENAI_API_KEY" || name == "ANTHROPIC_API_KEY" ? "k" : nullptr;
    };
    auto section = json::parse(text).as_object();
    auto c = provider_from_environment(&section, get, d);
    if (!c || !*c)
    {
        if (ec)
            *ec = c ? make_error_code(errc::not_configured) : c.error();
        return {};
    }
    return **c;
}

// Every request agentctx sends for `c`: summary, count, native compaction, the native count.
std::vector<http_request> every_call(const provider_config& c)
{
    native_request native;
    return {
        build_request(c, prompt()),
        build_count_request(c, prompt()),
        build_native_request(c, native),
        build_native_count_request(c, native)};
}

// What libcurl is given with the default settings: a connect timeout, keep-alive probes every
// 30 s, and nothing else (no total timeout, no low-speed limit).
transfer_deadlines no_read_deadline()
{
    transfer_deadlines d;
    d.connect_timeout_ms = 10000;
    d.total_timeout_ms = 0;
    d.low_speed_time = 0;
    d.low_speed_limit = 0;
    d.tcp_keepalive = 1;
    d.keepalive_idle = 30;
    d.keepalive_interval = 30;
    return d;
}

}  // namespace

TEST(read_deadline, the_default_settings_give_no_call_a_read_or_elapsed_deadline)
{
    for (const char* name : {"openai", "anthropic"})
        for (const bool stream : {true, false})
        {
            SCOPED_TRACE(std::string(name) + (stream ? " streamed" : " not streamed"));
            diagnostics d;
            const auto c = from_settings(
                std::string(R"({"name":")") + name + R"(","stream":)" + (stream ? "true" : "false") + "}", d
            );
            EXPECT_EQ(c.idle_timeout, std::chrono::seconds(0));
            for (const auto& r : every_call(c))
                EXPECT_EQ(deadlines_of(r), no_read_deadline()) << r.url;
        }
    // The transport's own default request carries no deadline either.
    EXPECT_EQ(deadlines_of(http_request{}), no_read_deadline());
}

TEST(read_deadline, idle_timeout_ms_is_an_opt_in_for_streams_and_0_is_off)
{
    diagnostics d;
    error_code ec;
    const auto off = from_settings(R"({"name":"anthropic","stream":true,"idleTimeoutMs":0})", d, &ec);
    ASSERT_FALSE(ec) << d.message;  // 0 is accepted: off
    EXPECT_EQ(off.idle_timeout, std::chrono::seconds(0));
    for (const auto& r : every_call(off))
        EXPECT_EQ(deadlines_of(r), no_read_deadline()) << r.url;

    const auto on = from_settings(R"({"name":"anthropic","stream":true,"idleTimeoutMs":1500})", d, &ec);
    ASSERT_FALSE(ec) << d.message;
    auto streamed = no_read_deadline();
    streamed.low_speed_time = 2;  // rounded up to whole seconds
    streamed.low_speed_limit = 1;
    const auto calls = every_call(on);
    EXPECT_EQ(deadlines_of(calls[0]), streamed);            // the streamed summary
    EXPECT_EQ(deadlines_of(calls[1]), no_read_deadline());  // counting never streams
    EXPECT_EQ(deadlines_of(calls[2]), streamed);            // Anthropic's streamed native call
    EXPECT_EQ(deadlines_of(calls[3]), no_read_deadline());

    diagnostics why;
    from_settings(R"({"name":"anthropic","idleTimeoutMs":-5})", why, &ec);
    EXPECT_EQ(ec, make_error_code(errc::not_configured));
    EXPECT_EQ(why.message, "provider.idleTimeoutMs must be a whole number, 0 or more (0 = off)");
}

TEST(read_deadline, a_stream_silent_past_an_opted_in_idle_timeout_succeeds_with_the_defaults)
{
    // The same nine silent seconds before the first byte, sent to two summarizers at once: the
    // one that opted into a 1 s idle timeout fails as transient (libcurl's low-speed check
    // averages over a few seconds, so it fires after ~6-7 s, still inside the silence); the
    // default one waits and gets its summary. The 70 s case rests on the first test: with the
    // defaults libcurl is given no low-speed limit and no total timeout at all.
    const auto silence = std::chrono::milliseconds(9000);
    test::fake_provider_server server;
    server.set_default({.chunks = test::openai_stream({"## Goal\n", "late but fine"}), .delay = silence});
    boost::asio::io_context ioc{1};
    auto config = [&](const std::string& extra) {
        diagnostics d;
        auto c = from_settings(
            R"({"name":"openai","stream":true,"maxRetries":0,"baseUrl":")" + server.base_url() + "/v1\"" +
                extra + "}",
            d
        );
        return c;
    };
    http_summarizer by_default(ioc.get_executor(), config(""));
    http_summarizer opted_in(ioc.get_executor(), config(R"(,"idleTimeoutMs":1000)"));
    struct outcome
    {
        bool done = false;
        error_code ec;
        std::string text;
        std::chrono::steady_clock::time_point at;
    };
    outcome plain, strict;
    const auto start = std::chrono::steady_clock::now();
    auto into = [](outcome& o) {
        return [&o](error_code ec, compaction::summary_output out) {
            o = {true, ec, out.text, std::chrono::steady_clock::now()};
        };
    };
    by_default.async_summarize(prompt(), into(plain));
    opted_in.async_summarize(prompt(), into(strict));
    const auto end = start + std::chrono::seconds(40);
    while (!(plain.done && strict.done) && std::chrono::steady_clock::now() < end)
        ioc.run_one_for(std::chrono::milliseconds(50));
    ASSERT_TRUE(plain.done && strict.done);
    EXPECT_EQ(strict.ec, make_error_code(errc::transient));
    EXPECT_LT(strict.at - start, silence);  // it gave up inside the silence
    EXPECT_FALSE(plain.ec) << plain.ec.message();
    EXPECT_EQ(plain.text, "## Goal\nlate but fine");
    EXPECT_GE(plain.at - start, silence);
    EXPECT_EQ(server.requests().size(), 2u);
}
