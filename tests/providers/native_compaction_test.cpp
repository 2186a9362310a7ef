// Native compaction and exact counting: request shapes, strict response checks, stored state, replay, and the
// loopback fakes.
#include <agentctx/compaction/json_text.hpp>
#include <agentctx/providers/chat_messages.hpp>
#include <agentctx/providers/http_summarizer.hpp>
#include "native_compaction.hpp"

#include "fake_provider_server.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

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

context_message text_message(role r, std::string text, std::string entry)
{
    auto m = std::make_shared<message>();
    m->role = r;
    m->content.blocks.push_back(compaction::text_block{std::move(text)});
    if (r == role::assistant)
        m->stop_reason = compaction::stop_reason::stop;
    return {m, std::move(entry)};
}

context_message summary_message(std::string text, std::string entry)
{
    auto m = std::make_shared<message>();
    m->role = role::compaction_summary;
    m->summary = std::move(text);
    return {m, std::move(entry)};
}

context_message call_message(std::string id, std::string entry)
{
    auto m = std::make_shared<message>();
    m->role = role::assistant;
    m->stop_reason = compaction::stop_reason::tool_use;
    m->content.blocks.push_back(compaction::tool_call_block{id, "bash", json::object{{"command", "ls"}}});
    return {m, std::move(entry)};
}

context_message result_message(std::string id, std::string text, std::string entry)
{
    auto m = std::make_shared<message>();
    m->role = role::tool_result;
    m->tool_call_id = std::move(id);
    m->tool_name = "bash";
    m->content.blocks.push_back(compaction::text_block{std::move(text)});
    return {m, std::move(entry)};
}

std::vector<context_message> window()
{
    return {
        text_message(role::user, "fix the build", "u1"),
        call_message("call_1", "a1"),
        result_message("call_1", "Makefile src", "r1"),
        text_message(role::assistant, "Found it.", "a2")};
}

provider_config config(wire_format f, std::string base = "http://127.0.0.1:9")
{
    provider_config c;
    c.format = f;
    c.name = f == wire_format::openai ? "openai" : "anthropic";
    c.base_url = std::move(base) + (f == wire_format::openai ? "/v1" : "");
    c.model = "configured-model";
    c.api_key = "sk-secret-KEY-12345";
    c.stream = false;
    c.base_delay = std::chrono::milliseconds(5);
    c.idle_timeout = std::chrono::seconds(2);
    c.native = native_mode::on;
    c.exact_counting = true;
    return c;
}

std::string header(const http_request& r, const std::string& name)
{
    for (const auto& [k, v] : r.headers)
        if (k == name)
            return v;
    return {};
}

native_state anthropic_state(std::string content = "## Goal\nShip it.")
{
    native_state s;
    s.format = wire_format::anthropic;
    s.model = "claude-loop";
    s.item = json::parse(test::anthropic_compaction_block(content, "ENC-abc"));
    return s;
}

native_state openai_state()
{
    native_state s;
    s.format = wire_format::openai;
    s.model = "gpt-loop";
    s.item =
        json::parse(test::openai_compact_body({"fix the build"}, {test::openai_compaction_item("ENC-xyz")}))
            .at("output");
    return s;
}

// `body` is refused as native_invalid, with `why` in the message.
void expect_native_invalid(wire_format f, const std::string& body, const std::string& why)
{
    diagnostics d;
    auto r = parse_native_response(f, body, "m", d);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), make_error_code(errc::native_invalid));
    EXPECT_NE(d.message.find(why), std::string::npos) << d.message;
}

}  // namespace

TEST(native_request, anthropic_carries_the_edit_the_beta_header_the_loop_model_and_the_window)
{
    native_request req;
    req.window = window();
    req.system = "You are the coding agent.";
    req.model = "claude-loop";
    const auto r = build_native_request(config(wire_format::anthropic), req);
    EXPECT_EQ(r.url, "http://127.0.0.1:9/v1/messages");
    EXPECT_EQ(header(r, "anthropic-beta"), "compact-2026-01-12");
    EXPECT_EQ(header(r, "x-api-key"), "sk-secret-KEY-12345");
    const auto body = json::parse(r.body).as_object();
    EXPECT_EQ(body.at("model"), "claude-loop");
    EXPECT_EQ(body.at("system"), "You are the coding agent.");
    EXPECT_EQ(
        body.at("context_management"),
        json::parse(R"({"edits":[{"type":"compact_20260112","trigger":{"type":"input_tokens","value":50000},)"
                    R"("pause_after_compaction":true,"instructions":null}]})")
    );
    const auto& msgs = body.at("messages").as_array();
    ASSERT_EQ(msgs.size(), 5u) << json::serialize(msgs);
    EXPECT_EQ(msgs[1].at("content").at(0).at("type"), "tool_use");
    EXPECT_EQ(msgs[2].at("content").at(0).at("type"), "tool_result");
    EXPECT_EQ(msgs[3].at("content").at(0).at("text"), "Found it.");
    // The window ended with the assistant: the request ends with a user turn asking for it.
    EXPECT_EQ(
        msgs[4],
        json::parse(R"({"role":"user","content":[{"type":"text","text":"Compact the conversation so far."}]})"
        )
    );
    EXPECT_FALSE(body.contains("stream"));
}

TEST(native_request, openai_is_responses_compact_with_input_items_and_instructions)
{
    native_request req;
    req.window = window();
    req.system = "SYS";
    const auto r = build_native_request(config(wire_format::openai), req);
    EXPECT_EQ(r.url, "http://127.0.0.1:9/v1/responses/compact");
    EXPECT_EQ(header(r, "authorization"), "Bearer sk-secret-KEY-12345");
    const auto body = json::parse(r.body).as_object();
    EXPECT_EQ(body.at("model"), "configured-model");
    EXPECT_EQ(body.at("instructions"), "SYS");
    EXPECT_EQ(
        body.at("input"),
        json::parse(
            R"([{"role":"user","content":[{"type":"input_text","text":"fix the build"}]},)"
            R"({"type":"function_call","call_id":"call_1","name":"bash","arguments":"{\"command\":\"ls\"}"},)"
            R"({"type":"function_call_output","call_id":"call_1","output":"Makefile src"},)"
            R"({"type":"message","role":"assistant","content":[{"type":"output_text","text":"Found it."}]}])"
        )
    );
}

TEST(native_response, anthropic_needs_exactly_one_compaction_block_with_content)
{
    diagnostics d;
    const auto block = test::anthropic_compaction_block("## Goal\nShip it.", "ENC-abc");
    auto ok = parse_native_response(
        wire_format::anthropic, test::anthropic_compaction_body({block}), "claude-loop", d
    );
    ASSERT_TRUE(ok) << d.message;
    EXPECT_EQ(ok->readable, "## Goal\nShip it.");
    EXPECT_EQ(ok->state.item, json::parse(block));  // verbatim
    EXPECT_EQ(ok->state.model, "claude-loop");
    EXPECT_EQ(ok->usage.input, 61000);  // the compaction pass (iterations), not the top level's 12
    EXPECT_EQ(ok->usage.output, 900);
    EXPECT_EQ(ok->usage.cache_read, 300);

    const auto expect_invalid = [](const std::string& body, const std::string& why) {
        expect_native_invalid(wire_format::anthropic, body, why);
    };
    expect_invalid(
        test::anthropic_compaction_body({test::anthropic_compaction_block(std::nullopt, "E")}),
        "content is null"
    );
    expect_invalid(test::anthropic_compaction_body({block, block}), "2 compaction blocks");
    expect_invalid(
        test::anthropic_compaction_body({R"({"type":"text","text":"hello"})"}), "0 compaction blocks"
    );
    expect_invalid(
        test::anthropic_compaction_body({R"({"type":"compaction","content":""})"}), "non-empty string"
    );
    expect_invalid(
        test::anthropic_compaction_body({R"({"type":"compaction","content":"x","encrypted_content":7})"}),
        "encrypted_content"
    );
    expect_invalid(R"({"type":"message"})", "no content");
    auto bad = parse_native_response(wire_format::anthropic, "not json", "m", d);
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error(), make_error_code(errc::malformed_response));
}

TEST(native_response, openai_needs_user_messages_then_exactly_one_compaction_item)
{
    diagnostics d;
    const auto item = test::openai_compaction_item("ENC-xyz");
    auto ok = parse_native_response(
        wire_format::openai, test::openai_compact_body({"a", "b"}, {item}), "gpt-loop", d
    );
    ASSERT_TRUE(ok) << d.message;
    EXPECT_FALSE(ok->readable);  // opaque
    ASSERT_EQ(ok->state.item.as_array().size(), 3u);
    EXPECT_EQ(ok->state.item.as_array()[2], json::parse(item));
    EXPECT_EQ(ok->usage.input, 63000);
    EXPECT_EQ(ok->usage.cache_read, 1000);
    EXPECT_EQ(ok->usage.output, 700);

    const auto expect_invalid = [](const std::string& body, const std::string& why) {
        expect_native_invalid(wire_format::openai, body, why);
    };
    expect_invalid(test::openai_compact_body({"a"}, {}), "0 compaction items");
    expect_invalid(test::openai_compact_body({"a"}, {item, item}), "2 compaction items");
    expect_invalid(
        test::openai_compact_body({}, {R"({"type":"compaction","id":"c"})"}), "no encrypted_content"
    );
    expect_invalid(
        test::openai_compact_body({}, {R"({"type":"message","role":"assistant","content":[]})", item}),
        "not a user message"
    );
    expect_invalid(
        test::openai_compact_body({}, {item, R"({"type":"message","role":"user","content":[]})"}),
        "follows the compaction item"
    );
    // A Response object is read as the inline form's reply: it still needs its compaction item.
    expect_invalid(R"({"object":"response","output":[]})", "0 compaction items");
    expect_invalid(R"({"object":"response.other","output":[]})", "not a response.compaction");
    expect_invalid(R"({"object":"response.compaction"})", "no output");
}

TEST(native_response, anthropic_stream_in_any_chunking_equals_the_plain_body)
{
    std::string all;
    for (const auto& c : test::anthropic_compaction_stream("## Goal\nStreamed.", "ENC-s"))
        all += c;
    for (std::size_t step : {all.size(), std::size_t{1}, std::size_t{7}})
    {
        native_stream_accumulator acc;
        for (std::size_t i = 0; i < all.size(); i += step)
            acc.feed(std::string_view(all).substr(i, step));
        ASSERT_TRUE(acc.complete());
        ASSERT_FALSE(acc.failed());
        diagnostics d;
        auto r = parse_native_response(wire_format::anthropic, acc.body(), "claude-loop", d);
        ASSERT_TRUE(r) << d.message;
        EXPECT_EQ(r->readable, "## Goal\nStreamed.");
        EXPECT_EQ(r->state.item.at("encrypted_content"), "ENC-s");
        EXPECT_EQ(r->usage.input, 70000);
        EXPECT_EQ(r->usage.output, 800);
    }
    native_stream_accumulator err;
    err.feed("event: error\ndata: "
             "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"busy\"}}\n\n");
    EXPECT_TRUE(err.failed());
    EXPECT_EQ(err.error(), make_error_code(errc::transient));
}

TEST(native_state, round_trips_and_stored_state_is_revalidated)
{
    for (const auto& s : {anthropic_state(), openai_state()})
    {
        diagnostics d;
        auto back = parse_native_state(to_json(s), d);
        ASSERT_TRUE(back) << d.message;
        EXPECT_EQ(*back, s);
    }
    const auto expect_invalid = [](const std::string& text, const std::string& why) {
        diagnostics d;
        auto r = parse_native_state(json::parse(text), d);
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error(), make_error_code(errc::native_invalid));
        EXPECT_NE(d.message.find(why), std::string::npos) << d.message;
    };
    expect_invalid(R"({"provider":"gemini","model":"m","block":{}})", "provider");
    expect_invalid(R"({"provider":"anthropic","block":{"type":"compaction","content":"x"}})", "model");
    expect_invalid(
        R"({"provider":"anthropic","model":"m","block":{"type":"compaction","content":null}})", "null"
    );
    expect_invalid(R"({"provider":"anthropic","model":"m"})", "block is missing");
    expect_invalid(
        R"({"provider":"openai","model":"m","output":[{"role":"user","content":[]}]})", "0 compaction items"
    );
    expect_invalid("[1]", "not an object");
}

TEST(native_replay, anthropic_sends_the_block_first_then_the_kept_messages)
{
    const std::vector<context_message> ctx{
        summary_message("## Goal\nShip it.", "c1"),
        text_message(role::user, "next step", "u9"),
        text_message(role::assistant, "On it.", "a9")};
    const native_replay replay{anthropic_state(), "c1"};
    const auto msgs = to_wire_messages(wire_format::anthropic, ctx, &replay);
    ASSERT_EQ(msgs.size(), 3u);
    EXPECT_EQ(
        msgs[0],
        json::parse(
            R"({"role":"assistant","content":[)" +
            test::anthropic_compaction_block("## Goal\nShip it.", "ENC-abc") + "]}"
        )
    );
    EXPECT_EQ(msgs[1].at("role"), "user");
    EXPECT_EQ(msgs[1].at("content").at(0).at("text"), "next step");
    EXPECT_EQ(msgs[2].at("role"), "assistant");

    // Without state, another compaction's state, or an OpenAI state: the portable summary.
    const auto portable = to_wire_messages(wire_format::anthropic, ctx);
    const native_replay other{anthropic_state(), "c0"};
    const native_replay openai{openai_state(), "c1"};
    EXPECT_EQ(to_wire_messages(wire_format::anthropic, ctx, &other), portable);
    EXPECT_EQ(to_wire_messages(wire_format::anthropic, ctx, &openai), portable);
    EXPECT_EQ(
        to_wire_messages(wire_format::openai, ctx, &openai), to_wire_messages(wire_format::openai, ctx)
    );
    EXPECT_EQ(portable[0].at("role"), "user");
    EXPECT_NE(json::serialize(portable[0]).find("Ship it."), std::string::npos);
}

TEST(native_replay, openai_responses_input_starts_with_the_stored_output_unchanged)
{
    const std::vector<context_message> ctx{
        summary_message("portable note", "c1"), text_message(role::user, "next step", "u9")};
    const native_replay replay{openai_state(), "c1"};
    const auto input = to_responses_input(ctx, &replay);
    const auto& output = replay.state.item.as_array();
    ASSERT_EQ(input.size(), output.size() + 1);
    for (std::size_t i = 0; i < output.size(); ++i)
        EXPECT_EQ(input[i], output[i]);
    EXPECT_EQ(
        input.back(), json::parse(R"({"role":"user","content":[{"type":"input_text","text":"next step"}]})")
    );
    const auto portable = to_responses_input(ctx);
    ASSERT_EQ(portable.size(), 2u);
    EXPECT_NE(json::serialize(portable[0]).find("portable note"), std::string::npos);
    EXPECT_EQ(to_responses_input(ctx, nullptr), portable);
    const native_replay anthropic{anthropic_state(), "c1"};
    EXPECT_EQ(to_responses_input(ctx, &anthropic), portable);
}

TEST(counting, requests_and_replies_in_both_shapes)
{
    compaction::summary_prompt p;
    p.system_prompt = "SYS";
    p.prompt = "<conversation>hi</conversation>";
    const auto a = build_count_request(config(wire_format::anthropic), p);
    EXPECT_EQ(a.url, "http://127.0.0.1:9/v1/messages/count_tokens");
    EXPECT_EQ(
        json::parse(a.body),
        json::parse(
            R"({"model":"configured-model","system":"SYS","messages":[{"role":"user","content":"<conversation>hi</conversation>"}]})"
        )
    );
    const auto o = build_count_request(config(wire_format::openai), p);
    EXPECT_EQ(o.url, "http://127.0.0.1:9/v1/responses/input_tokens");
    EXPECT_EQ(
        json::parse(o.body),
        json::parse(
            R"({"model":"configured-model","instructions":"SYS","input":[{"role":"user","content":"<conversation>hi</conversation>"}]})"
        )
    );

    diagnostics d;
    EXPECT_EQ(
        parse_count_response(wire_format::anthropic, test::anthropic_count_body(1234), d).value(), 1234
    );
    EXPECT_EQ(parse_count_response(wire_format::openai, test::openai_count_body(99), d).value(), 99);
    for (const auto* bad : {R"({"input_tokens":-1})", R"({"input_tokens":"5"})", R"({})", "[]", "x"})
        EXPECT_FALSE(parse_count_response(wire_format::anthropic, bad, d)) << bad;
    EXPECT_FALSE(parse_count_response(wire_format::openai, R"({"input_tokens":5})", d));  // no object field

    EXPECT_EQ(parse_model_compaction_support(test::anthropic_model_body("m", true), d).value(), true);
    EXPECT_EQ(parse_model_compaction_support(test::anthropic_model_body("m", false), d).value(), false);
    EXPECT_EQ(parse_model_compaction_support(R"({"id":"m"})", d).value(), false);
    EXPECT_EQ(
        build_model_request(config(wire_format::anthropic), "claude-x").url,
        "http://127.0.0.1:9/v1/models/claude-x"
    );
}

namespace {

class native_fake_test : public ::testing::Test
{
protected:
    std::shared_ptr<http_summarizer> make(
        wire_format f, bool stream = false, native_mode mode = native_mode::on
    )
    {
        auto c = config(f, server_.base_url());
        c.stream = stream;
        c.native = mode;
        c.max_retries = 2;
        return std::make_shared<http_summarizer>(ioc_.get_executor(), c);
    }

    std::pair<error_code, std::int64_t> count(http_summarizer& s)
    {
        std::optional<std::pair<error_code, std::int64_t>> out;
        compaction::summary_prompt p;
        p.system_prompt = "SYS";
        p.prompt = "hello";
        s.async_count_tokens(p, [&](error_code ec, std::int64_t n) { out.emplace(ec, n); });
        ioc_.restart();
        while (!out)
            ioc_.run_one_for(std::chrono::milliseconds(20));
        return *out;
    }

    std::pair<error_code, native_reply> compact(http_summarizer& s)
    {
        std::optional<std::pair<error_code, native_reply>> out;
        native_request req;
        req.window = window();
        req.model = "claude-loop";
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

    static test::fake_provider_server::responder fixed(std::string body, int status = 200)
    {
        return [body, status](const test::recorded_request&) {
            test::scripted_response r;
            r.status = status;
            r.body = body;
            return r;
        };
    }

    asio::io_context ioc_;
    test::fake_provider_server server_;
};

}  // namespace

TEST_F(native_fake_test, both_counting_endpoints_answer_and_fail_as_documented)
{
    server_.route("/v1/messages/count_tokens", fixed(test::anthropic_count_body(4321)));
    int openai_calls = 0;
    server_.route("/v1/responses/input_tokens", [&openai_calls](const test::recorded_request&) {
        test::scripted_response r;
        // First a 503 (retried), then the count.
        r.status = openai_calls++ == 0 ? 503 : 200;
        r.body = r.status == 200 ? test::openai_count_body(77) : R"({"error":{"type":"server_error"}})";
        return r;
    });
    auto a = make(wire_format::anthropic);
    EXPECT_TRUE(a->capabilities().exact_counting);
    EXPECT_EQ(count(*a), std::make_pair(error_code{}, std::int64_t{4321}));
    const auto rec = server_.requests().back();
    EXPECT_EQ(rec.header("x-api-key"), "sk-secret-KEY-12345");
    EXPECT_EQ(rec.header("anthropic-version"), "2023-06-01");
    EXPECT_EQ(json::parse(rec.body).at("messages").at(0).at("content"), "hello");

    auto o = make(wire_format::openai);
    EXPECT_EQ(count(*o), std::make_pair(error_code{}, std::int64_t{77}));
    EXPECT_EQ(openai_calls, 2);

    test::fake_provider_server other;  // 400 on counting: not retried
    other.route("/v1/messages/count_tokens", fixed(R"({"error":{"type":"invalid_request_error"}})", 400));
    auto c = config(wire_format::anthropic, other.base_url());
    auto bad = std::make_shared<http_summarizer>(ioc_.get_executor(), c);
    EXPECT_EQ(count(*bad).first, make_error_code(errc::invalid_request));
    EXPECT_EQ(other.requests().size(), 1u);

    auto off = config(wire_format::anthropic, server_.base_url());
    off.exact_counting = false;
    http_summarizer plain(ioc_.get_executor(), off);
    EXPECT_FALSE(plain.capabilities().exact_counting);
    EXPECT_EQ(count(plain).first, make_error_code(errc::not_supported));
}

TEST_F(native_fake_test, anthropic_native_plain_and_streamed)
{
    const auto block = test::anthropic_compaction_block("## Goal\nPlain.", "ENC-1");
    auto stream_rsp = [](const test::recorded_request& rec) {
        test::scripted_response r;
        if (json::parse(rec.body).as_object().contains("stream"))
            r.chunks = test::anthropic_compaction_stream("## Goal\nStreamed.", "ENC-2");
        else
            r.body =
                test::anthropic_compaction_body({test::anthropic_compaction_block("## Goal\nPlain.", "ENC-1")}
                );
        return r;
    };
    server_.route("/v1/messages", stream_rsp);
    auto plain = make(wire_format::anthropic, false);
    auto [ec, r] = compact(*plain);
    ASSERT_FALSE(ec) << r.failure_detail;
    EXPECT_EQ(r.readable, "## Goal\nPlain.");
    EXPECT_EQ(r.state.item, json::parse(block));
    EXPECT_EQ(server_.requests().back().header("anthropic-beta"), "compact-2026-01-12");

    auto streamed = make(wire_format::anthropic, true);
    auto [ec2, r2] = compact(*streamed);
    ASSERT_FALSE(ec2) << r2.failure_detail;
    EXPECT_EQ(r2.readable, "## Goal\nStreamed.");
    EXPECT_EQ(r2.state.item.at("encrypted_content"), "ENC-2");
    EXPECT_EQ(r2.usage.input, 70000);
}

TEST_F(native_fake_test, openai_compact_endpoint_and_its_failures)
{
    std::vector<std::string> bodies{
        test::openai_compact_body({"fix the build"}, {test::openai_compaction_item("E1")}),
        test::openai_compact_body({"fix the build"}, {}),
        R"({"error":{"type":"invalid_request_error","code":"unsupported_model"}})"};
    std::size_t at = 0;
    server_.route("/v1/responses/compact", [&](const test::recorded_request&) {
        test::scripted_response r;
        r.status = at == 2 ? 404 : 200;
        r.body = bodies[at++];
        return r;
    });
    auto s = make(wire_format::openai);
    auto [ec, r] = compact(*s);
    ASSERT_FALSE(ec) << r.failure_detail;
    EXPECT_EQ(r.state.format, wire_format::openai);
    EXPECT_EQ(r.state.model, "claude-loop");  // the request's (loop's) model
    EXPECT_EQ(json::parse(server_.requests().back().body).at("model"), "claude-loop");

    auto [ec2, r2] = compact(*s);
    EXPECT_EQ(ec2, make_error_code(errc::native_invalid));
    EXPECT_NE(r2.failure_detail.find("0 compaction items"), std::string::npos) << r2.failure_detail;
    auto [ec3, r3] = compact(*s);
    EXPECT_EQ(ec3, make_error_code(errc::invalid_request));
    EXPECT_EQ(requests_to("/responses/compact"), 3u);  // nothing invalid is retried
}

TEST_F(native_fake_test, anthropic_auto_asks_the_models_api_once_per_model)
{
    server_.route("/v1/models/claude-loop", fixed(test::anthropic_model_body("claude-loop", false)));
    server_.route(
        "/v1/messages", fixed(test::anthropic_compaction_body({test::anthropic_compaction_block("x", "E")}))
    );
    auto s = make(wire_format::anthropic, false, native_mode::probe);
    EXPECT_TRUE(s->capabilities().native_compaction);
    auto [ec, r] = compact(*s);
    EXPECT_EQ(ec, make_error_code(errc::not_supported));
    EXPECT_NE(r.failure_detail.find("does not support compact_20260112"), std::string::npos)
        << r.failure_detail;
    EXPECT_EQ(compact(*s).first, make_error_code(errc::not_supported));
    EXPECT_EQ(requests_to("/v1/models/claude-loop"), 1u);
    EXPECT_EQ(requests_to("/v1/messages"), 0u);  // never sent a native request

    test::fake_provider_server yes;
    yes.route("/v1/models/claude-loop", fixed(test::anthropic_model_body("claude-loop", true)));
    yes.route(
        "/v1/messages",
        fixed(test::anthropic_compaction_body({test::anthropic_compaction_block("## Goal\nOK", "E")}))
    );
    auto c = config(wire_format::anthropic, yes.base_url());
    c.native = native_mode::probe;
    http_summarizer ok(ioc_.get_executor(), c);
    auto [ec2, r2] = compact(ok);
    ASSERT_FALSE(ec2) << r2.failure_detail;
    EXPECT_EQ(r2.readable, "## Goal\nOK");

    auto off = config(wire_format::anthropic, server_.base_url());
    off.native = native_mode::off;
    http_summarizer none(ioc_.get_executor(), off);
    EXPECT_FALSE(none.capabilities().native_compaction);
    EXPECT_EQ(compact(none).first, make_error_code(errc::not_supported));
}

TEST_F(native_fake_test, truncated_streams_resets_and_bad_counts_are_reported_as_such)
{
    // A compaction stream that stops before message_stop: transient, retried, then reported.
    auto chunks = test::anthropic_compaction_stream("## Goal\nCut.", "E");
    chunks.pop_back();
    server_.route("/v1/messages", [chunks](const test::recorded_request&) {
        test::scripted_response r;
        r.chunks = chunks;
        return r;
    });
    auto s = make(wire_format::anthropic, true);
    auto [ec, r] = compact(*s);
    EXPECT_EQ(ec, make_error_code(errc::transient));
    EXPECT_NE(r.failure_detail.find("ended before the compaction was complete"), std::string::npos)
        << r.failure_detail;
    EXPECT_EQ(requests_to("/v1/messages"), 3u);  // max_retries 2

    // A connection reset in the middle of the body, and a count reply of the wrong shape.
    test::fake_provider_server other;
    other.route("/v1/responses/compact", [](const test::recorded_request&) {
        test::scripted_response r;
        r.body = test::openai_compact_body({"u"}, {test::openai_compaction_item("E")});
        r.reset_after = 20;
        return r;
    });
    other.route("/v1/responses/input_tokens", fixed(R"({"object":"response","input_tokens":5})"));
    auto c = config(wire_format::openai, other.base_url());
    c.max_retries = 0;
    http_summarizer o(ioc_.get_executor(), c);
    EXPECT_EQ(compact(o).first, make_error_code(errc::transient));
    EXPECT_EQ(count(o).first, make_error_code(errc::malformed_response));
}

namespace {

// The window of window() as an Anthropic request sends it, with the closing ask.
constexpr std::string_view anthropic_window_messages = R"([
  {"role":"user","content":[{"type":"text","text":"fix the build"}]},
  {"role":"assistant","content":[{"type":"tool_use","id":"call_1","name":"bash","input":{"command":"ls"}}]},
  {"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1","content":[{"type":"text","text":"Makefile src"}]}]},
  {"role":"assistant","content":[{"type":"text","text":"Found it."}]},
  {"role":"user","content":[{"type":"text","text":"Compact the conversation so far."}]}])";

// A signed block with tool changes, as the newer API returns it (field order as sent).
constexpr std::string_view signed_block =
    R"({"type":"compaction","content":"## Goal\nSigned.","encrypted_content":"ENC-s","signature":"SIG-4f2a==",)"
    R"("tool_changes":[{"type":"tool_addition","name":"grep"},{"type":"tool_removal","name":"write"}]})";

// The parameter form's reply: the block alone, the usage without `iterations`.
std::string parameter_reply()
{
    return R"({"id":"msg_2","type":"message","role":"assistant","model":"claude-test","content":[)" +
           std::string(signed_block) +
           R"(],"stop_reason":"compaction","usage":{"input_tokens":61000,"output_tokens":900}})";
}

// The request body without its per-request routing id (checked to be present).
json::object without_routing_id(const std::string& text)
{
    auto body = json::parse(text).as_object();
    const auto& id = body.at("metadata").at("user_id").as_string();
    EXPECT_EQ(id.size(), 36u);
    body.erase("metadata");
    return body;
}

}  // namespace

TEST(native_request, anthropic_parameter_form_replaces_the_edit_with_the_summarize_parameter)
{
    auto cfg = config(wire_format::anthropic);
    cfg.compaction_parameter = true;
    native_request req;
    req.window = window();
    req.system = "You are the coding agent.";
    req.model = "claude-loop";
    req.instructions = "Keep file paths.";
    const auto r = build_native_request(cfg, req);
    EXPECT_EQ(r.url, "http://127.0.0.1:9/v1/messages");
    EXPECT_EQ(header(r, "anthropic-beta"), "compact-2026-01-12");
    const auto expected = json::parse(
        R"({"model":"claude-loop","max_tokens":4096,"system":"You are the coding agent.",)"
        R"("messages":)" +
        std::string(anthropic_window_messages) +
        R"(,"compaction":{"type":"summarize","instructions":"Keep file paths."}})"
    );
    EXPECT_EQ(json::value(without_routing_id(r.body)), expected);

    // No trigger, no pause flag; blank or absent instructions are left out (the server's prompt).
    for (const std::optional<std::string>& none :
         {std::optional<std::string>(), std::optional<std::string>(" \n\t")})
    {
        req.instructions = none;
        EXPECT_EQ(
            json::value(without_routing_id(build_native_request(cfg, req).body).at("compaction")),
            json::parse(R"({"type":"summarize"})")
        );
    }
    // The default stays the edit form, without the parameter.
    const auto edit = without_routing_id(build_native_request(config(wire_format::anthropic), req).body);
    EXPECT_FALSE(edit.contains("compaction"));
    EXPECT_EQ(edit.at("context_management").at("edits").at(0).at("type"), "compact_20260112");
    EXPECT_EQ(edit.at("messages"), json::parse(anthropic_window_messages));
}

TEST(native_response, anthropic_signature_and_tool_changes_are_kept_verbatim)
{
    for (const std::string& body :
         {test::anthropic_compaction_body({std::string(signed_block)}), parameter_reply()})
    {
        diagnostics d;
        auto r = parse_native_response(wire_format::anthropic, body, "claude-loop", d);
        ASSERT_TRUE(r) << d.message;
        EXPECT_EQ(compaction::stringify(r->state.item), signed_block);
        EXPECT_EQ(r->usage.input, 61000);
        EXPECT_EQ(r->usage.output, 900);
        // Stored and reloaded, then sent back: the same bytes.
        auto stored = parse_native_state(json::parse(compaction::stringify(to_json(r->state))), d);
        ASSERT_TRUE(stored) << d.message;
        EXPECT_EQ(compaction::stringify(stored->item), signed_block);
        const native_replay replay{*stored, "c1"};
        const std::vector<context_message> ctx{
            summary_message("## Goal\nSigned.", "c1"), text_message(role::user, "next", "u9")};
        const auto msgs = to_wire_messages(wire_format::anthropic, ctx, &replay);
        ASSERT_EQ(msgs.size(), 2u);
        EXPECT_EQ(
            compaction::stringify(msgs[0]),
            R"({"role":"assistant","content":[)" + std::string(signed_block) + "]}"
        );
    }
}

TEST_F(native_fake_test, anthropic_both_request_forms_return_the_signed_block_verbatim)
{
    // Each form gets its own reply shape.
    server_.route("/v1/messages", [](const test::recorded_request& rec) {
        test::scripted_response r;
        r.body = json::parse(rec.body).as_object().contains("compaction")
                     ? parameter_reply()
                     : test::anthropic_compaction_body({std::string(signed_block)});
        return r;
    });
    for (const bool parameter : {false, true})
    {
        auto c = config(wire_format::anthropic, server_.base_url());
        c.compaction_parameter = parameter;
        http_summarizer s(ioc_.get_executor(), c);
        auto [ec, r] = compact(s);
        ASSERT_FALSE(ec) << r.failure_detail;
        EXPECT_EQ(compaction::stringify(r.state.item), signed_block) << parameter;
        EXPECT_EQ(r.readable, "## Goal\nSigned.");
        EXPECT_EQ(r.usage.input, 61000);
        const auto sent = without_routing_id(server_.requests().back().body);
        EXPECT_EQ(sent.contains("compaction"), parameter);
        EXPECT_EQ(sent.contains("context_management"), !parameter);
        if (parameter)
        {
            EXPECT_EQ(sent.at("compaction"), json::parse(R"({"type":"summarize"})"));
        }
        EXPECT_EQ(sent.at("messages"), json::parse(anthropic_window_messages));
    }
}

TEST(provider_config, compaction_parameter_is_a_setting_off_by_default)
{
    const auto get = [](const char* n) -> const char* {
        return std::string_view(n) == "ANTHROPIC_API_KEY" ? "k" : nullptr;
    };
    diagnostics d;
    auto section = json::parse(R"({"name":"anthropic","nativeCompaction":true})").as_object();
    EXPECT_FALSE(provider_from_environment(&section, get, d).value()->compaction_parameter);
    section["compactionParameter"] = true;
    EXPECT_TRUE(provider_from_environment(&section, get, d).value()->compaction_parameter);
}
