// Wire formats without a network: request shapes, SSE parsing, error classification, backoff.
#include <agentctx/providers/http_summarizer.hpp>
#include "wire_format.hpp"

#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

#include <limits>
#include <map>

using namespace agentctx;
using namespace agentctx::providers;

namespace {

compaction::summary_prompt prompt()
{
    compaction::summary_prompt p;
    p.system_prompt = "SYS";
    p.prompt = "<conversation>\n[User]: hi\n</conversation>";
    p.max_output_tokens = 13107;
    return p;
}

}  // namespace

TEST(wire_format, openai_request_shape)
{
    provider_config c;
    c.base_url = "http://localhost:8000/v1/";
    c.model = "qwen";
    c.api_key = "sk-1";
    auto p = prompt();
    p.reasoning_effort = "high";
    const auto r = build_request(c, p);
    EXPECT_EQ(r.url, "http://localhost:8000/v1/chat/completions");
    EXPECT_EQ(r.headers[1], (std::pair<std::string, std::string>{"authorization", "Bearer sk-1"}));
    const auto b = boost::json::parse(r.body).as_object();
    EXPECT_EQ(b.at("model"), "qwen");
    EXPECT_EQ(b.at("messages").as_array()[0].at("role"), "system");
    EXPECT_EQ(b.at("messages").as_array()[1].at("content").as_string(), p.prompt);
    EXPECT_EQ(b.at("max_tokens"), 13107);
    EXPECT_EQ(b.at("reasoning_effort"), "high");
    EXPECT_EQ(b.at("stream"), true);
    EXPECT_EQ(b.at("stream_options").at("include_usage"), true);
}

TEST(wire_format, anthropic_request_shape)
{
    provider_config c;
    c.format = wire_format::anthropic;
    c.base_url = "https://api.anthropic.com";
    c.model = "claude";
    c.api_key = "k";
    c.stream = false;
    const auto r = build_request(c, prompt());
    EXPECT_EQ(r.url, "https://api.anthropic.com/v1/messages");
    std::map<std::string, std::string> h(r.headers.begin(), r.headers.end());
    EXPECT_EQ(h["x-api-key"], "k");
    EXPECT_EQ(h["anthropic-version"], "2023-06-01");
    EXPECT_EQ(h.count("authorization"), 0u);
    const auto b = boost::json::parse(r.body).as_object();
    EXPECT_EQ(b.at("system"), "SYS");
    EXPECT_EQ(b.at("max_tokens"), 13107);
    EXPECT_FALSE(b.contains("stream"));
}

TEST(wire_format, sse_events_split_across_chunks)
{
    sse_parser p;
    EXPECT_TRUE(p.feed("event: message_st").empty());
    EXPECT_TRUE(p.feed("art\ndata: {\"a\":").empty());
    auto ev = p.feed("1}\r\n\r\n: comment\n\ndata: x\ndata: y\n\n");
    ASSERT_EQ(ev.size(), 2u);
    EXPECT_EQ(ev[0].name, "message_start");
    EXPECT_EQ(ev[0].data, "{\"a\":1}");
    EXPECT_EQ(ev[1].data, "x\ny");
}

TEST(wire_format, error_classification)
{
    struct row
    {
        long status;
        const char* body;
        errc code;
    };
    const std::vector<row> rows{
        {400,
         R"({"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error","code":"context_length_exceeded"}})",
         errc::context_overflow},
        {400,
         R"({"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}})",
         errc::context_overflow},
        {413,
         R"({"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum size"}})",
         errc::context_overflow},
        {400, "", errc::context_overflow},  // Pi's "400 (no body)" pattern
        {429,
         R"({"error":{"message":"Rate limit reached: too many tokens per minute","type":"requests","code":"rate_limit_exceeded"}})",
         errc::rate_limited},
        {529,
         R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})",
         errc::transient},
        {500, "<html>oops</html>", errc::transient},
        {401,
         R"({"error":{"message":"Incorrect API key provided: sk-abc","type":"invalid_request_error","code":"invalid_api_key"}})",
         errc::auth},
        {404, R"({"error":{"message":"model not found"}})", errc::invalid_request},
    };
    for (const auto& r : rows)
    {
        diagnostics d;
        EXPECT_EQ(classify_error(r.status, r.body, d), make_error_code(r.code)) << r.body;
        EXPECT_EQ(d.http_status, r.status);
        EXPECT_EQ(d.message.find("sk-abc"), std::string::npos);  // the API's message text is not copied
    }
}

TEST(wire_format, retry_after_and_backoff)
{
    EXPECT_EQ(parse_retry_after("3"), std::chrono::milliseconds(3000));
    EXPECT_EQ(parse_retry_after(" 0"), std::chrono::milliseconds(0));
    const auto now = std::chrono::system_clock::from_time_t(1445412480);  // Wed, 21 Oct 2015 07:28:00 GMT
    EXPECT_EQ(parse_retry_after("Wed, 21 Oct 2015 07:28:10 GMT", now), std::chrono::milliseconds(10000));
    EXPECT_EQ(parse_retry_after("Wed, 21 Oct 2015 07:27:00 GMT", now), std::chrono::milliseconds(0));
    EXPECT_FALSE(parse_retry_after("soon"));
    provider_config c;  // base 2 s
    for (int attempt = 1; attempt <= 3; ++attempt)
        for (std::uint64_t seed = 0; seed < 50; ++seed)
        {
            const auto d = backoff_delay(c, attempt, seed).count();
            const auto base = 2000 << (attempt - 1);
            EXPECT_GE(d, base * 3 / 4);
            EXPECT_LE(d, base * 5 / 4);
        }
    EXPECT_NE(backoff_delay(c, 1, 1), backoff_delay(c, 1, 2));  // jitter
    c.max_delay = std::chrono::milliseconds(5000);
    EXPECT_EQ(backoff_delay(c, 10, 3), std::chrono::milliseconds(5000));
}

TEST(provider_config, from_settings_and_environment)
{
    std::map<std::string, std::string> env;
    auto get = [&](const char* n) -> const char* {
        auto it = env.find(n);
        return it == env.end() ? nullptr : it->second.c_str();
    };
    diagnostics d;
    EXPECT_FALSE(provider_from_environment(nullptr, get, d).value());  // nothing: offline
    env["OPENAI_API_KEY"] = "sk-env";
    auto c = provider_from_environment(nullptr, get, d).value();
    ASSERT_TRUE(c);
    EXPECT_EQ(c->name, "openai");
    EXPECT_EQ(c->base_url, "https://api.openai.com/v1");
    EXPECT_EQ(c->api_key, "sk-env");
    env["ANTHROPIC_API_KEY"] = "ant";
    c = provider_from_environment(nullptr, get, d).value();
    EXPECT_EQ(c->format, wire_format::anthropic);
    EXPECT_EQ(c->model, "claude-sonnet-4-5");
    const auto section =
        boost::json::parse(
            R"({"name":"vllm","baseUrl":"http://gpu:8000/v1","model":"qwen3","contextWindow":32768,"maxOutputTokens":4096,"stream":false})"
        )
            .as_object();
    c = provider_from_environment(&section, get, d).value();
    EXPECT_EQ(c->format, wire_format::openai);
    EXPECT_EQ(c->base_url, "http://gpu:8000/v1");
    EXPECT_EQ(c->context_window, 32768);
    EXPECT_FALSE(c->stream);
    env.clear();
    env["AGENTCTX_PROVIDER"] = "anthropic";
    auto missing = provider_from_environment(nullptr, get, d);
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error(), make_error_code(errc::not_configured));
    EXPECT_NE(d.message.find("ANTHROPIC_API_KEY"), std::string::npos);
    env["AGENTCTX_PROVIDER"] = "ollama";  // local servers need no key
    c = provider_from_environment(nullptr, get, d).value();
    EXPECT_EQ(c->base_url, "http://localhost:11434/v1");
    env["AGENTCTX_PROVIDER"] = "magic";
    EXPECT_FALSE(provider_from_environment(nullptr, get, d));
}

TEST(wire_format, summary_requests_write_no_prompt_cache_entries)
{
    // Pi 1.6 (cacheRetention "none"): nothing in a summary request asks for caching.
    for (const auto f : {wire_format::openai, wire_format::anthropic})
    {
        provider_config c;
        c.format = f;
        c.base_url = "http://localhost:1";
        c.model = "m";
        const auto r = build_request(c, prompt());
        for (const char* key : {"cache_control", "prompt_cache_key", "prompt_cache_retention"})
            EXPECT_EQ(r.body.find(key), std::string::npos) << key << " in " << r.body;
        for (const auto& [name, value] : r.headers)
            EXPECT_EQ(name.find("anthropic-beta"), std::string::npos) << name;
    }
}

TEST(wire_format, anthropic_requests_carry_a_fresh_routing_id_each)
{
    provider_config c;
    c.format = wire_format::anthropic;
    c.base_url = "https://api.anthropic.com";
    c.model = "claude";
    const auto a = boost::json::parse(build_request(c, prompt()).body).as_object();
    const auto b = boost::json::parse(build_request(c, prompt()).body).as_object();
    const std::string ida(a.at("metadata").at("user_id").as_string());
    const std::string idb(b.at("metadata").at("user_id").as_string());
    EXPECT_NE(ida, idb);  // the two split-turn requests never share a route
    EXPECT_EQ(ida.size(), 36u);
    EXPECT_EQ(ida[14], '7');
    auto p = prompt();
    p.routing_id = "caller-route";
    EXPECT_EQ(boost::json::parse(build_request(c, p).body).at("metadata").at("user_id"), "caller-route");
    // Chat Completions has no routing field; nothing is sent.
    c.format = wire_format::openai;
    const auto o = boost::json::parse(build_request(c, prompt()).body).as_object();
    EXPECT_FALSE(o.contains("metadata"));
    EXPECT_FALSE(o.contains("user"));
}

TEST(wire_format, routing_ids_are_uuid_v7)
{
    const auto before = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch()
    )
                            .count();
    const std::string id = new_routing_id();
    ASSERT_EQ(id.size(), 36u);
    for (std::size_t i : {8u, 13u, 18u, 23u})
        EXPECT_EQ(id[i], '-');
    EXPECT_EQ(id[14], '7');
    EXPECT_NE(std::string("89ab").find(id[19]), std::string::npos) << id;
    const auto ms = std::stoll(id.substr(0, 8) + id.substr(9, 4), nullptr, 16);
    EXPECT_GE(ms, before);
    EXPECT_LE(ms, before + 60000);
    EXPECT_NE(new_routing_id(), new_routing_id());
}

TEST(wire_format, tool_calls_are_counted_in_every_response_shape)
{
    diagnostics diag;
    auto r = parse_response(
        wire_format::openai,
        R"({"choices":[{"message":{"content":null,"tool_calls":[{"id":"a","type":"function"},{"id":"b","type":"function"}]},"finish_reason":"tool_calls"}]})",
        diag
    );
    ASSERT_TRUE(r);
    EXPECT_EQ(r->output.tool_calls, 2u);
    r = parse_response(
        wire_format::openai, R"({"choices":[{"message":{"content":"## Goal"},"finish_reason":"stop"}]})", diag
    );
    EXPECT_EQ(r->output.tool_calls, 0u);
    r = parse_response(
        wire_format::anthropic,
        R"({"content":[{"type":"text","text":"SUM"},{"type":"tool_use","id":"t","name":"read","input":{}}],"stop_reason":"tool_use"})",
        diag
    );
    ASSERT_TRUE(r);
    EXPECT_EQ(r->output.text, "SUM");
    EXPECT_EQ(r->output.tool_calls, 1u);

    stream_accumulator oa(wire_format::openai);
    oa.feed(
        "data: "
        "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"function\":{\"name\":\"read\"}"
        "}]}}]}\n\n"
        "data: "
        "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{}\"}}]}}]}\n\n"
        "data: "
        "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"b\"}]},\"finish_reason\":\"tool_"
        "calls\"}]}\n\n"
    );
    EXPECT_EQ(oa.reply().output.tool_calls, 2u);

    stream_accumulator an(wire_format::anthropic);
    an.feed("event: content_block_start\ndata: "
            "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":"
            "\"\"}}\n\n"
            "event: content_block_delta\ndata: "
            "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":"
            "\"SUM\"}}\n\n"
            "event: content_block_start\ndata: "
            "{\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":"
            "\"t\",\"name\":\"read\",\"input\":{}}}\n\n"
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
    EXPECT_EQ(an.reply().output.text, "SUM");
    EXPECT_EQ(an.reply().output.tool_calls, 1u);
}

TEST(wire_format, the_summary_output_carries_the_usage)
{
    diagnostics diag;
    auto r = parse_response(
        wire_format::openai,
        R"({"choices":[{"message":{"content":"S"},"finish_reason":"stop"}],"usage":{"prompt_tokens":100,"completion_tokens":7,"total_tokens":107}})",
        diag
    );
    ASSERT_TRUE(r);
    ASSERT_TRUE(r->output.usage);
    EXPECT_EQ(r->output.usage->input, 100);
    EXPECT_EQ(r->output.usage->output, 7);
    EXPECT_EQ(r->output.usage->total_tokens, 107);
    stream_accumulator an(wire_format::anthropic);
    an.feed(
        R"(data: {"type":"message_start","message":{"model":"c","usage":{"input_tokens":50,"output_tokens":1}}})"
        "\n\n"
        R"(data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}})"
        "\n\n"
    );
    ASSERT_TRUE(an.reply().output.usage);
    EXPECT_EQ(an.reply().output.usage->output, 9);
    EXPECT_EQ(an.reply().output.usage->total_tokens, 59);
}

TEST(wire_format, odd_usage_counts_neither_throw_nor_overflow)
{
    // Found by fuzz_response: a fractional or out-of-range count threw from parse_response (and
    // from a stream event), and sums of huge counts were signed overflow.
    diagnostics diag;
    auto r = parse_response(
        wire_format::openai,
        R"({"choices":[{"message":{"content":"S"}}],"usage":{"prompt_tokens":100.9,"completion_tokens":1e300,)"
        R"("prompt_tokens_details":{"cached_tokens":-9223372036854775808}}})",
        diag
    );
    ASSERT_TRUE(r) << diag.message;
    EXPECT_EQ(r->usage.input, std::numeric_limits<std::int64_t>::max());  // 100 - INT64_MIN saturates
    EXPECT_EQ(r->usage.output, std::numeric_limits<std::int64_t>::max());
    EXPECT_EQ(r->usage.total_tokens, std::numeric_limits<std::int64_t>::max());
    auto a = parse_response(
        wire_format::anthropic,
        R"({"content":[],"usage":{"input_tokens":9223372036854775807,"output_tokens":18446744073709551615,"cache_read_input_tokens":2.5}})",
        diag
    );
    ASSERT_TRUE(a) << diag.message;
    EXPECT_EQ(a->usage.cache_read, 2);
    EXPECT_EQ(a->usage.output, std::numeric_limits<std::int64_t>::max());
    EXPECT_EQ(a->usage.total_tokens, std::numeric_limits<std::int64_t>::max());
    stream_accumulator an(wire_format::anthropic);
    an.feed(R"(data: {"type":"message_delta","usage":{"output_tokens":-1e30}})"
            "\n\n");
    EXPECT_FALSE(an.failed());
    EXPECT_EQ(an.reply().usage.output, std::numeric_limits<std::int64_t>::min());
}

TEST(wire_format, a_long_error_message_is_classified_without_exhausting_the_stack)
{
    // Found by fuzz_response: the overflow patterns ran on std::regex, which recurses per
    // character; a 200 KB provider message overflowed the stack (and 2 MB took seconds).
    const std::string filler(4u << 20, 'x');
    diagnostics diag;
    const std::string overflow =
        R"({"error":{"message":"Input token count )" + filler + R"( exceeds the maximum"}})";
    EXPECT_EQ(classify_error(400, overflow, diag), make_error_code(errc::context_overflow));
    const std::string other = R"({"error":{"type":"invalid_request_error","message":")" + filler + R"("}})";
    EXPECT_EQ(classify_error(400, other, diag), make_error_code(errc::invalid_request));
    // The CR rule of ECMAScript's `.` holds: the words must be on one line.
    EXPECT_EQ(
        classify_error(400, R"({"error":{"message":"input token count\r exceeds the maximum"}})", diag),
        make_error_code(errc::invalid_request)
    );
    EXPECT_EQ(
        classify_error(400, R"({"error":{"message":"INPUT TOKEN COUNT 5 exceeds the maximum"}})", diag),
        make_error_code(errc::context_overflow)
    );
}

namespace {

compaction::summary_prompt cache_friendly_prompt()
{
    auto head = std::make_shared<compaction::request_head>();
    head->system = "You are a coding agent.";
    head->tools = boost::json::array{
        boost::json::object{{"name", "read"}, {"input_schema", boost::json::object{{"type", "object"}}}}};
    head->messages = boost::json::array{
        boost::json::object{{"role", "user"}, {"content", "Fix the parser"}},
        boost::json::object{
            {"role", "assistant"},
            {"content",
             boost::json::array{boost::json::object{
                 {"type", "text"},
                 {"text", "Done"},
                 {"cache_control", boost::json::object{{"type", "ephemeral"}}}}}}},
        boost::json::object{
            {"role", "user"},
            {"content", boost::json::array{boost::json::object{{"type", "text"}, {"text", "Thanks"}}}}}};
    head->prompt_cache_key = "conv-7";
    compaction::summary_prompt p;
    p.system_prompt = "SYS";  // not sent: the conversation's system prompt is
    p.prompt = "INSTRUCTIONS";
    p.max_output_tokens = 9000;
    p.head = head;
    return p;
}

}  // namespace

TEST(wire_format, anthropic_cache_friendly_request_puts_breakpoints_on_the_shared_prefix)
{
    provider_config c;
    c.format = wire_format::anthropic;
    c.base_url = "https://api.anthropic.com";
    c.model = "claude";
    c.stream = false;
    const auto b = boost::json::parse(build_request(c, cache_friendly_prompt()).body).as_object();
    const boost::json::object eph{{"type", "ephemeral"}};
    EXPECT_EQ(
        b.at("system"),
        (boost::json::array{boost::json::object{
            {"type", "text"}, {"text", "You are a coding agent."}, {"cache_control", eph}}})
    );
    EXPECT_EQ(b.at("tools").as_array()[0].at("cache_control"), eph);
    const auto& m = b.at("messages").as_array();
    ASSERT_EQ(m.size(), 4u);
    // A string content becomes one text block; the host's own marker inside the messages is dropped.
    EXPECT_EQ(
        m[0].at("content"),
        (boost::json::array{boost::json::object{{"type", "text"}, {"text", "Fix the parser"}}})
    );
    EXPECT_FALSE(m[1].at("content").as_array()[0].as_object().contains("cache_control"));
    EXPECT_EQ(m[2].at("content").as_array()[0].at("cache_control"), eph);  // the conversation's last block
    EXPECT_EQ(
        m[3],
        (boost::json::object{
            {"role", "user"},
            {"content", boost::json::array{boost::json::object{{"type", "text"}, {"text", "INSTRUCTIONS"}}}}})
    );
    EXPECT_EQ(b.at("max_tokens"), 9000);
    EXPECT_FALSE(b.contains("prompt_cache_key"));
}

TEST(wire_format, openai_cache_friendly_request_carries_the_conversation_and_its_key)
{
    provider_config c;
    c.base_url = "https://api.openai.com/v1";
    c.model = "gpt";
    c.stream = false;
    const auto b = boost::json::parse(build_request(c, cache_friendly_prompt()).body).as_object();
    const auto& m = b.at("messages").as_array();
    ASSERT_EQ(m.size(), 5u);
    EXPECT_EQ(m[0], (boost::json::object{{"role", "system"}, {"content", "You are a coding agent."}}));
    EXPECT_EQ(m[1].at("content"), "Fix the parser");  // as the host rendered it
    EXPECT_EQ(m[4], (boost::json::object{{"role", "user"}, {"content", "INSTRUCTIONS"}}));
    EXPECT_EQ(b.at("tools").as_array().size(), 1u);
    EXPECT_EQ(b.at("prompt_cache_key"), "conv-7");
}
