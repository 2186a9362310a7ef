// Auxiliary calls (summary, count, native): `auto_continue: false` where offered, no read deadline unless
// streamed.
#include <agentctx/providers/http_summarizer.hpp>
#include <agentctx/providers/provider_config.hpp>

#include "native_compaction.hpp"
#include "wire_format.hpp"

#include "fake_provider_server.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

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

provider_config config(wire_format f, bool auto_continue)
{
    provider_config c;
    c.format = f;
    c.name = f == wire_format::openai ? "openai" : "anthropic";
    c.base_url = "http://127.0.0.1:9/v1";
    c.model = "m";
    c.auto_continue = auto_continue;
    return c;
}

// The body of every auxiliary request agentctx builds for `c`.
std::vector<json::object> auxiliary_bodies(const provider_config& c)
{
    native_request native;
    native.trigger_tokens = 50000;
    std::vector<json::object> out;
    for (const auto& r :
         {build_request(c, prompt()), build_count_request(c, prompt()), build_native_request(c, native)})
        out.push_back(json::parse(r.body).as_object());
    return out;
}

provider_config settings(const char* text, diagnostics& d, error_code* ec = nullptr)
{
    const auto get = [](const char* n) -> const char* {
        return std::string_view(n) == "OPENAI_API_KEY" ? "k" : nullptr;
    };
    auto section = json::parse(text).as_object();
    auto c = provider_from_environment(&section, get, d);
    if (!c)
    {
        if (ec)
            *ec = c.error();
        return {};
    }
    return **c;
}

}  // namespace

TEST(auxiliary_calls, a_provider_with_auto_continue_gets_auto_continue_false_on_every_auxiliary_call)
{
    for (const auto f : {wire_format::openai, wire_format::anthropic})
    {
        for (const auto& body : auxiliary_bodies(config(f, true)))
            EXPECT_EQ(body.at("auto_continue"), false) << json::serialize(body);
        for (const auto& body : auxiliary_bodies(config(f, false)))
            EXPECT_FALSE(body.contains("auto_continue")) << json::serialize(body);
    }
}

TEST(auxiliary_calls, only_streams_have_an_idle_deadline)
{
    auto c = config(wire_format::anthropic, false);
    c.idle_timeout = std::chrono::seconds(7);
    c.keepalive_interval = std::chrono::seconds(11);
    c.stream = true;
    EXPECT_EQ(build_request(c, prompt()).idle_timeout, std::chrono::seconds(7));
    EXPECT_EQ(build_native_request(c, native_request{}).idle_timeout, std::chrono::seconds(7));
    EXPECT_EQ(build_count_request(c, prompt()).idle_timeout, std::chrono::seconds(0));
    EXPECT_EQ(build_count_request(c, prompt()).keepalive_interval, std::chrono::seconds(11));
    c.stream = false;
    EXPECT_EQ(build_request(c, prompt()).idle_timeout, std::chrono::seconds(0));
    EXPECT_EQ(build_native_request(c, native_request{}).idle_timeout, std::chrono::seconds(0));
    // OpenAI's /responses/compact never streams.
    auto o = config(wire_format::openai, false);
    o.stream = true;
    EXPECT_EQ(build_native_request(o, native_request{}).idle_timeout, std::chrono::seconds(0));
}

TEST(auxiliary_calls, the_timing_and_auto_continue_are_settings_checked_by_field)
{
    diagnostics d;
    const auto c =
        settings(R"({"name":"openai","autoContinue":true,"idleTimeoutMs":1500,"keepAliveSeconds":20})", d);
    EXPECT_TRUE(c.auto_continue);
    EXPECT_EQ(c.idle_timeout, std::chrono::seconds(2));  // rounded up to whole seconds
    EXPECT_EQ(c.keepalive_interval, std::chrono::seconds(20));
    const auto defaults = settings(R"({"name":"openai"})", d);
    EXPECT_FALSE(defaults.auto_continue);
    EXPECT_EQ(defaults.idle_timeout, std::chrono::seconds(0));  // no read deadline unless asked for
    for (const auto* bad :
         {R"({"name":"openai","idleTimeoutMs":-1})",
          R"({"name":"openai","idleTimeoutMs":"5s"})",
          R"({"name":"openai","keepAliveSeconds":-1})",
          R"({"name":"openai","autoContinue":"yes"})"})
    {
        diagnostics why;
        error_code ec;
        settings(bad, why, &ec);
        EXPECT_EQ(ec, make_error_code(errc::not_configured)) << bad;
        EXPECT_TRUE(why.message.starts_with("provider.")) << why.message;  // the field, then what it must be
    }
}

TEST(auxiliary_calls, a_silent_non_streamed_summary_is_not_cut_by_the_idle_timeout)
{
    // Nine silent seconds (curl's low-speed check needs a few seconds past the 1 s limit to fire,
    // as the stalled-stream test shows): a streamed call would fail as transient.
    test::fake_provider_server server;
    server.push(
        {.body = test::openai_body("## Goal\nslow but fine"), .delay = std::chrono::milliseconds(9000)}
    );
    boost::asio::io_context ioc{1};
    auto c = config(wire_format::openai, false);
    c.base_url = server.base_url() + "/v1";
    c.api_key = "k";
    c.stream = false;
    c.max_retries = 0;
    c.idle_timeout = std::chrono::seconds(1);
    http_summarizer s(ioc.get_executor(), c);
    bool done = false;
    error_code got;
    std::string text;
    s.async_summarize(prompt(), [&](error_code ec, compaction::summary_output out) {
        done = true;
        got = ec;
        text = out.text;
    });
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!done && std::chrono::steady_clock::now() < end)
        ioc.run_one_for(std::chrono::milliseconds(50));
    ASSERT_TRUE(done);
    EXPECT_FALSE(got) << got.message();
    EXPECT_EQ(text, "## Goal\nslow but fine");
    EXPECT_EQ(server.requests().size(), 1u);
}
