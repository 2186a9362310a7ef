// OpenAI inline compaction (`native.openai`): the request form, the strict reply check, the setting, and the
// loopback fake that implements it.
#include <agentctx/compaction/json_text.hpp>
#include <agentctx/providers/chat_messages.hpp>
#include <agentctx/providers/http_summarizer.hpp>
#include <agentctx/providers/provider_config.hpp>
#include "native_compaction.hpp"

#include "fake_provider_server.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

using namespace agentctx;
using namespace agentctx::providers;
namespace asio = boost::asio;
namespace json = boost::json;
using boost::system::error_code;
using compaction::context_message;
using compaction::message;
using compaction::role;

namespace {

context_message user_message(std::string text, std::string entry)
{
    auto m = std::make_shared<message>();
    m->role = role::user;
    m->content.blocks.push_back(compaction::text_block{std::move(text)});
    return {m, std::move(entry)};
}

provider_config inline_config(std::string base, openai_native_form form = openai_native_form::inline_request)
{
    provider_config c;
    c.format = wire_format::openai;
    c.name = "openai";
    c.base_url = std::move(base) + "/v1";
    c.model = "gpt-loop";
    c.api_key = "sk-secret";
    c.stream = false;
    c.base_delay = std::chrono::milliseconds(5);
    c.native = native_mode::on;
    c.openai_form = form;
    c.max_retries = 1;
    return c;
}

native_request request(std::int64_t threshold = 0)
{
    native_request req;
    req.window = {user_message("fix the build", "u1")};
    req.system = "SYS";
    req.compact_threshold = threshold;
    return req;
}

}  // namespace

TEST(inline_compaction, the_request_is_an_ordinary_responses_request_ending_with_the_trigger)
{
    const auto r = build_native_request(inline_config("http://127.0.0.1:9"), request(150000));
    EXPECT_EQ(r.url, "http://127.0.0.1:9/v1/responses");
    const auto body = json::parse(r.body).as_object();
    EXPECT_EQ(body.at("model"), "gpt-loop");
    EXPECT_EQ(body.at("instructions"), "SYS");
    EXPECT_EQ(body.at("store"), false);
    EXPECT_EQ(
        body.at("context_management"), json::parse(R"([{"type":"compaction","compact_threshold":150000}])")
    );
    const auto& input = body.at("input").as_array();
    ASSERT_EQ(input.size(), 2u);
    EXPECT_EQ(input.back(), json::parse(R"({"type":"compaction_trigger"})"));
    // Without a threshold the provider's default stands.
    const auto plain = json::parse(build_native_request(inline_config("http://127.0.0.1:9"), request()).body);
    EXPECT_EQ(plain.at("context_management"), json::parse(R"([{"type":"compaction"}])"));
    EXPECT_EQ(inline_context_management(0), json::parse(R"([{"type":"compaction"}])"));
    EXPECT_EQ(compaction_trigger_item(), json::parse(R"({"type":"compaction_trigger"})"));
}

TEST(inline_compaction, the_compact_endpoint_stays_the_default_form)
{
    auto c = inline_config("http://127.0.0.1:9", openai_native_form::compact_endpoint);
    EXPECT_EQ(build_native_request(c, request()).url, "http://127.0.0.1:9/v1/responses/compact");
    const auto get = [](const char* n) -> const char* {
        return std::string_view(n) == "OPENAI_API_KEY" ? "k" : nullptr;
    };
    diagnostics d;
    auto section = json::parse(R"({"name":"openai","nativeCompaction":true})").as_object();
    EXPECT_EQ(
        provider_from_environment(&section, get, d).value()->openai_form, openai_native_form::compact_endpoint
    );
    section["native"] = json::parse(R"({"openai":"inline"})");
    EXPECT_EQ(
        provider_from_environment(&section, get, d).value()->openai_form, openai_native_form::inline_request
    );
    section["native"] = json::parse(R"({"openai":"auto"})");
    EXPECT_EQ(
        provider_from_environment(&section, get, d).value()->openai_form, openai_native_form::automatic
    );
    section["native"] = json::parse(R"({"openai":"compact-endpoint"})");
    EXPECT_EQ(
        provider_from_environment(&section, get, d).value()->openai_form, openai_native_form::compact_endpoint
    );
    section["native"] = json::parse(R"({"openai":"sometimes"})");
    auto bad = provider_from_environment(&section, get, d);
    ASSERT_FALSE(bad);
    EXPECT_EQ(d.message, R"(provider.native.openai must be "inline", "compact-endpoint" or "auto")");
}

TEST(inline_compaction, the_reply_must_hold_exactly_one_compaction_item_and_only_reasoning_beside_it)
{
    const std::string item = test::openai_compaction_item("ENC-1");
    const auto reply = [&](const std::string& output) {
        return R"({"id":"resp_1","object":"response","status":"completed","output":)" + output +
               R"(,"usage":{"input_tokens":52000,"output_tokens":900}})";
    };
    diagnostics d;
    auto ok = parse_native_response(
        wire_format::openai, reply(R"([{"type":"reasoning","id":"rs_1"},)" + item + "]"), "gpt-loop", d
    );
    ASSERT_TRUE(ok) << d.message;
    EXPECT_EQ(ok->state.item, json::array{json::parse(item)});  // the item alone is the state
    EXPECT_EQ(ok->usage.input, 52000);
    diagnostics d2;
    auto state = parse_native_state(to_json(ok->state), d2);
    EXPECT_TRUE(state) << d2.message;  // stored and revalidated like the compact endpoint's output

    const std::pair<std::string, std::string> refused[] = {
        {reply("[]"), "0 compaction items"},
        {reply("[" + item + "," + item + "]"), "2 compaction items"},
        {reply(R"([{"type":"message","role":"assistant","content":[]},)" + item + "]"), "is a 'message'"},
        {reply(R"([{"type":"compaction","id":"c"}])"), "no encrypted_content"}};
    for (const auto& [body, why] : refused)
    {
        diagnostics e;
        auto r = parse_native_response(wire_format::openai, body, "gpt-loop", e);
        ASSERT_FALSE(r) << body;
        EXPECT_EQ(r.error(), make_error_code(errc::native_invalid));
        EXPECT_NE(e.message.find(why), std::string::npos) << e.message;
    }
}

namespace {

class inline_fake_test : public ::testing::Test
{
protected:
    std::pair<error_code, native_reply> compact(http_summarizer& s, native_request req)
    {
        std::optional<std::pair<error_code, native_reply>> out;
        s.async_compact_native(req, [&](error_code ec, native_reply r) { out.emplace(ec, std::move(r)); });
        ioc_.restart();
        while (!out)
            ioc_.run_one_for(std::chrono::milliseconds(20));
        return std::move(*out);
    }

    std::size_t requests_to(const std::string& suffix) const
    {
        std::size_t n = 0;
        for (const auto& r : server_.requests())
            n += r.target.ends_with(suffix);
        return n;
    }

    asio::io_context ioc_;
    test::fake_provider_server server_;
};

}  // namespace

TEST_F(inline_fake_test, the_fake_compacts_on_the_trigger_and_refuses_a_trigger_that_is_not_last)
{
    server_.route("/v1/responses", [](const test::recorded_request& r) {
        return test::openai_inline_reply(r, "ENC-IN");
    });
    auto s = std::make_shared<http_summarizer>(ioc_.get_executor(), inline_config(server_.base_url()));
    EXPECT_TRUE(s->capabilities().inline_compaction);
    auto [ec, r] = compact(*s, request(90000));
    ASSERT_FALSE(ec) << r.failure_detail;
    EXPECT_EQ(r.state.item.as_array().size(), 1u);
    EXPECT_EQ(r.state.item.as_array()[0].at("encrypted_content"), "ENC-IN");
    EXPECT_EQ(requests_to("/v1/responses"), 1u);

    // The fake enforces the documented rule: the trigger is the final input item.
    test::recorded_request misplaced;
    misplaced.body = R"({"model":"m","input":[{"type":"compaction_trigger"},{"role":"user","content":"x"}]})";
    EXPECT_EQ(test::openai_inline_reply(misplaced, "E").status, 400);
}

TEST_F(inline_fake_test, auto_falls_back_to_the_compact_endpoint_when_the_inline_request_is_refused)
{
    server_.route("/v1/responses", [](const test::recorded_request&) {
        test::scripted_response r;
        r.status = 400;
        r.body =
            R"({"error":{"type":"invalid_request_error","message":"context_management is not supported"}})";
        return r;
    });
    server_.route("/v1/responses/compact", [](const test::recorded_request&) {
        test::scripted_response r;
        r.body = test::openai_compact_body({"fix the build"}, {test::openai_compaction_item("ENC-EP")});
        return r;
    });
    auto s = std::make_shared<http_summarizer>(
        ioc_.get_executor(), inline_config(server_.base_url(), openai_native_form::automatic)
    );
    auto [ec, r] = compact(*s, request(90000));
    ASSERT_FALSE(ec) << r.failure_detail;
    EXPECT_EQ(requests_to("/v1/responses"), 1u);
    EXPECT_EQ(requests_to("/v1/responses/compact"), 1u);
    EXPECT_EQ(r.state.item.as_array().back().at("encrypted_content"), "ENC-EP");

    // `inline` alone never asks the compact endpoint.
    auto strict = std::make_shared<http_summarizer>(ioc_.get_executor(), inline_config(server_.base_url()));
    auto [ec2, r2] = compact(*strict, request(90000));
    EXPECT_EQ(ec2, make_error_code(errc::invalid_request));
    EXPECT_EQ(requests_to("/v1/responses/compact"), 1u);
}
