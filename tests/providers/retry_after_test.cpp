// Retry-After without a network: strict delay-seconds and HTTP-date, saturation, the wait cap.
#include <agentctx/providers/http_summarizer.hpp>
#include <agentctx/providers/retry_after.hpp>

#include "fake_provider_server.hpp"

#include <boost/asio/io_context.hpp>

#include <gtest/gtest.h>

using namespace agentctx::providers;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

// Sun, 06 Nov 1994 08:49:37 GMT (RFC 9110's example date).
const auto example = std::chrono::system_clock::from_time_t(784111777);

}  // namespace

TEST(retry_after, delay_seconds)
{
    EXPECT_EQ(parse_retry_after("0"), milliseconds(0));
    EXPECT_EQ(parse_retry_after("5"), milliseconds(5000));
    EXPECT_EQ(parse_retry_after(" 5\t"), milliseconds(5000));  // OWS around the value
    EXPECT_EQ(parse_retry_after("86400"), milliseconds(86'400'000));
    EXPECT_EQ(parse_retry_after("007"), milliseconds(7000));
}

TEST(retry_after, huge_values_saturate_instead_of_overflowing)
{
    const auto big = parse_retry_after("9999999999");
    ASSERT_TRUE(big);
    EXPECT_EQ(*big, seconds(1'000'000'000));  // saturated (~31.7 years)
    const auto absurd = parse_retry_after("999999999999999999999999999999");
    ASSERT_TRUE(absurd);
    EXPECT_EQ(*absurd, seconds(1'000'000'000));
    EXPECT_EQ(parse_retry_after("999999999"), seconds(999'999'999));  // just under: exact
    // Still a valid deadline on a nanosecond clock: no overflow in the caller's arithmetic.
    EXPECT_LT(*absurd, std::chrono::duration_cast<milliseconds>(std::chrono::nanoseconds::max()) / 2);
}

TEST(retry_after, malformed_values_are_rejected)
{
    for (const char* v :
         {".", "", "   ", "-1", "+5", "1.5", "5s", "1 2", "0x10", "soon", "garbage!", "\xff\xfe", "5,6"})
        EXPECT_FALSE(parse_retry_after(v)) << '"' << v << '"';
}

TEST(retry_after, http_dates)
{
    EXPECT_EQ(
        parse_retry_after("Sun, 06 Nov 1994 08:49:47 GMT", example), milliseconds(10'000)
    );  // IMF-fixdate
    EXPECT_EQ(parse_retry_after("Sunday, 06-Nov-94 08:50:37 GMT", example), milliseconds(60'000));  // RFC 850
    EXPECT_EQ(parse_retry_after("Sun Nov  6 08:49:40 1994", example), milliseconds(3'000));         // asctime
    EXPECT_EQ(parse_retry_after("Mon, 07 Nov 1994 08:49:37 GMT", example), milliseconds(86'400'000));
    EXPECT_EQ(parse_retry_after("Sun, 06 Nov 1994 08:00:00 GMT", example), milliseconds(0));  // in the past
    const auto now = std::chrono::system_clock::from_time_t(1445412480);  // Wed, 21 Oct 2015 07:28:00 GMT
    EXPECT_EQ(parse_retry_after("Wed, 21 Oct 2015 07:28:10 GMT", now), milliseconds(10'000));
    EXPECT_EQ(
        parse_retry_after("Thu, 29 Feb 2024 00:00:00 GMT", now), seconds(1709164800 - 1445412480)
    );  // leap day
}

TEST(retry_after, malformed_dates_are_rejected)
{
    for (const char* v :
         {"Sun, 06 Nov 1994 08:49:37",
          "Sun, 06 Nov 1994 08:49:37 UTC",
          "Sun, 6 Nov 1994 08:49:37 GMT",
          "Sun, 06 Foo 1994 08:49:37 GMT",
          "Sun, 31 Nov 1994 08:49:37 GMT",
          "Sun, 29 Feb 2023 08:49:37 GMT",
          "Sun, 06 Nov 1994 24:00:00 GMT",
          "Sun, 06 Nov 1994 08:49:37 GMT junk",
          "sun, 06 nov 1994 08:49:37 gmt",
          "Sun, 06 Nov 94 08:49:37 GMT",
          "Sun Nov 6 08:49:37 1994",
          "Xyz, 06 Nov 1994 08:49:37 GMT"})
        EXPECT_FALSE(parse_retry_after(v, example)) << '"' << v << '"';
}

TEST(retry_after, a_wait_over_the_maximum_fails_at_once_as_rate_limited)
{
    agentctx::test::fake_provider_server server;
    server.push(
        {.status = 429,
         .headers = {{"retry-after", "86400"}},
         .body = R"({"error":{"type":"rate_limit_error"}})"}
    );
    server.push({.status = 503, .headers = {{"retry-after", "9999999999"}}, .body = "{}"}
    );  // overflowed chrono before
    server.push(
        {.status = 429, .headers = {{"retry-after", "."}}, .body = R"({"error":{"type":"rate_limit_error"}})"}
    );
    server.push({.body = agentctx::test::openai_body("## Goal\nafter a malformed Retry-After")});
    boost::asio::io_context ioc(1);
    provider_config c;
    c.base_url = server.base_url() + "/v1";
    c.model = "m";
    c.api_key = "k";
    c.stream = false;
    c.base_delay = milliseconds(10);
    http_summarizer s(ioc.get_executor(), c);
    auto call = [&] {
        boost::system::error_code got;
        bool done = false;
        s.async_summarize(
            agentctx::compaction::summary_prompt{"SYS", "hi", 100},
            [&](boost::system::error_code ec, agentctx::compaction::summary_output) {
                got = ec;
                done = true;
            }
        );
        ioc.restart();
        while (!done)
            ioc.run_one();
        return got;
    };
    EXPECT_EQ(call(), make_error_code(errc::rate_limited));
    EXPECT_EQ(s.last_failure().attempts, 1);
    EXPECT_NE(s.last_failure().message.find("Retry-After"), std::string::npos) << s.last_failure().message;
    EXPECT_NE(s.last_failure().message.find("86400 s"), std::string::npos) << s.last_failure().message;
    EXPECT_NE(s.last_failure().message.find("maximum of 60 s"), std::string::npos)
        << s.last_failure().message;
    EXPECT_EQ(
        call(), make_error_code(errc::rate_limited)
    );  // a 503 asking for centuries: no overflow, no wait
    EXPECT_EQ(s.last_failure().http_status, 503);
    EXPECT_FALSE(call()) << s.last_failure().message;  // "." is ignored: the backoff applies, then success
    EXPECT_EQ(server.requests().size(), 4u);
}
