// The routes under hostile and careless input: usage counts, numbers JSON cannot hold, images, lone
// surrogates, unknown fields, item caps, large bodies off the io thread, unauthenticated
// connections, shutdown, a read-only data directory.
#include "server_fixture.hpp"

#include "loopback_http.hpp"
#include "run_process.hpp"
#include "server_binary.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <future>
#include <string>

#include <unistd.h>

using namespace agentctx;
namespace json = boost::json;
namespace fs = std::filesystem;
using test::agent_server_test;
using test::raw_conn;

namespace {

using hostile_routes = agent_server_test;

constexpr std::string_view count_bound = "a token count must be a whole number from 0 to 1000000000000";

std::string with_usage(const std::string& usage)
{
    return R"({"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"hi"}],)"
           R"("provider":"anthropic","model":"claude-sonnet-4-5","stopReason":"stop","timestamp":1,"usage":)" +
           usage + "}}";
}

// Holds the first caller of pass() after `armed` is set until the test releases it.
struct test_gate
{
    std::atomic<bool> armed{false};
    std::promise<void> entered;
    std::shared_future<void> entered_future = entered.get_future().share();
    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();

    void pass()
    {
        if (!armed.exchange(false))
            return;
        entered.set_value();
        released.wait();
    }
};

std::string error_of(const std::shared_ptr<test::reply>& r, std::string_view key)
{
    const auto v = r->json();
    const auto& e = v.at("error").as_object();
    return e.contains(key) ? std::string(e.at(key).as_string()) : std::string("<none>");
}

}  // namespace

TEST_F(hostile_routes, usage_counts_out_of_range_are_refused_on_every_route_with_the_field)
{
    start();
    const auto id = new_session();
    const auto before = file(id);
    const auto entries = "/v1/sessions/" + id + "/entries";
    auto huge = sync("POST", entries, with_usage(R"({"input":9223372036854775807,"output":1})"));
    EXPECT_EQ(huge->res.status, 400) << huge->res.body;
    EXPECT_EQ(error_of(huge, "code"), "invalid_value");
    EXPECT_EQ(error_of(huge, "field"), "message.usage.input");
    EXPECT_EQ(error_of(huge, "message"), "field 'message.usage.input': " + std::string(count_bound));
    auto negative = sync("POST", entries, with_usage(R"({"input":5,"output":1,"totalTokens":-9})"));
    EXPECT_EQ(negative->res.status, 400) << negative->res.body;
    EXPECT_EQ(error_of(negative, "field"), "message.usage.totalTokens");
    const auto wire = sync(
        "POST",
        "/v1/sessions/" + id + "/messages?format=openai",
        R"({"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a"}],)"
        R"("usage":{"prompt_tokens":9223372036854775807,"completion_tokens":1}})"
    );
    EXPECT_EQ(wire->res.status, 400) << wire->res.body;
    EXPECT_EQ(error_of(wire, "code"), "invalid_wire_message");
    EXPECT_EQ(error_of(wire, "message"), "usage.prompt_tokens: " + std::string(count_bound));
    const auto nested = sync(
        "POST",
        "/v1/sessions/" + id + "/messages?format=openai",
        R"({"messages":[{"role":"assistant","content":"a"}],)"
        R"("usage":{"prompt_tokens":10,"prompt_tokens_details":{"cached_tokens":-1}}})"
    );
    EXPECT_EQ(
        error_of(nested, "message"), "usage.prompt_tokens_details.cached_tokens: " + std::string(count_bound)
    );
    EXPECT_EQ(file(id), before);
    // The turn-end check refuses them too (it would switch the automatic check off).
    ASSERT_EQ(sync("POST", entries, with_usage(R"({"input":90,"output":10})"))->res.status, 201);
    const auto turn = sync(
        "POST", "/v1/sessions/" + id + "/turn-end", R"({"format":"anthropic","usage":{"input_tokens":-100}})"
    );
    EXPECT_EQ(turn->res.status, 400) << turn->res.body;
    EXPECT_EQ(error_of(turn, "message"), "usage.input_tokens: " + std::string(count_bound));
    const auto ok = sync(
        "POST", "/v1/sessions/" + id + "/turn-end", R"({"format":"anthropic","usage":{"input_tokens":50}})"
    );
    EXPECT_EQ(ok->res.status, 200) << ok->res.body;
    EXPECT_EQ(sync("GET", "/v1/sessions/" + id + "/context")->json().at("estimatedTokens"), 100);
}

TEST_F(hostile_routes, a_number_json_cannot_hold_is_refused_with_its_path)
{
    start();
    const auto id = new_session();
    const auto before = file(id);
    const auto entry = sync(
        "POST",
        "/v1/sessions/" + id + "/entries",
        R"({"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"f","arguments":{"x":[1,1e400]}}],"provider":"p","model":"m","stopReason":"toolUse","timestamp":1}})"
    );
    EXPECT_EQ(entry->res.status, 400) << entry->res.body;
    EXPECT_EQ(error_of(entry, "code"), "invalid_value");
    EXPECT_EQ(error_of(entry, "field"), "message.content[0].arguments.x[1]");
    const auto anthropic = sync(
        "POST",
        "/v1/sessions/" + id + "/messages?format=anthropic",
        R"({"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{"n":-1e999}}]}]})"
    );
    EXPECT_EQ(anthropic->res.status, 400) << anthropic->res.body;
    EXPECT_EQ(error_of(anthropic, "field"), "messages[0].content[0].input.n");
    // Chat Completions carries the arguments as a string of JSON.
    const auto chat = sync(
        "POST",
        "/v1/sessions/" + id + "/messages?format=openai",
        R"({"messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"x\":1e400}"}}]}]})"
    );
    EXPECT_EQ(chat->res.status, 400) << chat->res.body;
    EXPECT_EQ(
        error_of(chat, "message"),
        "messages[0].tool_calls[0].function.arguments: x: a number out of the range of a double"
    );
    EXPECT_EQ(file(id), before);
}

TEST_F(hostile_routes, images_need_base64_data_and_an_accepted_media_type)
{
    start();
    const auto id = new_session();
    const auto before = file(id);
    const auto path = "/v1/sessions/" + id + "/messages?format=openai";
    auto image_url = [](const std::string& url) {
        return R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":")" + url +
               R"("}}]}]})";
    };
    const auto bad_data = sync("POST", path, image_url("data:image/png;base64,not base64!"));
    EXPECT_EQ(bad_data->res.status, 400) << bad_data->res.body;
    EXPECT_EQ(error_of(bad_data, "message"), "messages[0].content[0].image_url.url: not base64 image data");
    const auto bad_type = sync("POST", path, image_url("data:text/html;base64,aGk="));
    EXPECT_EQ(
        error_of(bad_type, "message"),
        "messages[0].content[0].image_url.url: not an accepted image type (image/png, image/jpeg, image/gif, "
        "image/webp)"
    );
    const auto anthropic = sync(
        "POST",
        "/v1/sessions/" + id + "/messages?format=anthropic",
        R"({"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/tiff","data":"aGk="}}]}]})"
    );
    EXPECT_EQ(
        error_of(anthropic, "message"),
        "messages[0].content[0].source.media_type: not an accepted image type (image/png, image/jpeg, "
        "image/gif, image/webp)"
    );
    const auto entry = sync(
        "POST",
        "/v1/sessions/" + id + "/entries",
        R"({"type":"message","message":{"role":"user","content":[{"type":"image","data":"aGk$","mimeType":"image/png"}],"timestamp":1}})"
    );
    EXPECT_EQ(entry->res.status, 400) << entry->res.body;
    EXPECT_EQ(error_of(entry, "field"), "message.content[0].data");
    EXPECT_EQ(file(id), before);
    EXPECT_EQ(sync("POST", path, image_url("data:image/png;base64,iVBORw0KGgo="))->res.status, 201);
}

TEST_F(hostile_routes, a_lone_surrogate_escape_is_accepted_and_read_as_the_session_file_reads_it)
{
    start();
    const auto id = new_session();
    // What JSON.stringify and json.dumps write for an emoji cut in half.
    const auto cut = sync(
        "POST",
        "/v1/sessions/" + id + "/messages?format=openai",
        R"({"messages":[{"role":"user","content":"cut \ud83d"},{"role":"assistant","content":"ok \udc00 end"}]})"
    );
    ASSERT_EQ(cut->res.status, 201) << cut->res.body;
    const auto entry = sync("POST", "/v1/sessions/" + id + "/entries", user(R"(half \ud800)"));
    ASSERT_EQ(entry->res.status, 201) << entry->res.body;
    const auto wire =
        sync("GET", "/v1/sessions/" + id + "/context?wire=openai")->json().at("wire").as_array();
    ASSERT_EQ(wire.size(), 3u);
    EXPECT_EQ(wire[0].at("content"), "cut \xEF\xBF\xBD");
    EXPECT_EQ(wire[1].at("content"), "ok \xEF\xBF\xBD end");
    EXPECT_EQ(wire[2].at("content"), "half \xEF\xBF\xBD");
    // A body that is not JSON for another reason is still invalid_json.
    EXPECT_EQ(
        error_of(sync("POST", "/v1/sessions/" + id + "/entries", R"({"a":"\ud800)"), "code"), "invalid_json"
    );
}

TEST_F(hostile_routes, turn_end_and_overflow_refuse_unknown_fields)
{
    start();
    const auto id = new_session();
    const auto turn = sync("POST", "/v1/sessions/" + id + "/turn-end", R"({"format":"openai","usage2":{}})");
    EXPECT_EQ(turn->res.status, 400) << turn->res.body;
    EXPECT_EQ(error_of(turn, "message"), "usage2: unknown field");
    const auto overflow = sync("POST", "/v1/sessions/" + id + "/overflow", R"({"status":413,"retry":true})");
    EXPECT_EQ(overflow->res.status, 400) << overflow->res.body;
    EXPECT_EQ(error_of(overflow, "message"), "retry: unknown field");
    const auto doc = json::parse(test::read_text(AGENTCTX_OPENAPI_DOC));
    const auto& schemas = doc.at("components").at("schemas");
    EXPECT_EQ(schemas.at("OverflowRequest").at("properties").at("status").at("maximum"), 599);
    EXPECT_EQ(schemas.at("OverflowRequest").at("additionalProperties"), false);
    EXPECT_EQ(schemas.at("TurnEndRequest").at("additionalProperties"), false);
}

TEST_F(hostile_routes, a_stored_entry_read_is_labelled_by_its_route_in_the_metrics)
{
    start();
    const auto id = new_session();
    const auto e = sync("POST", "/v1/sessions/" + id + "/entries", user("hello"));
    ASSERT_EQ(e->res.status, 201);
    const std::string entry(e->json().at("id").as_string());
    ASSERT_EQ(sync("GET", "/v1/sessions/" + id + "/entries/" + entry)->res.status, 200);
    const auto metrics = sync("GET", "/metrics")->res.body;
    EXPECT_NE(
        metrics.find(
            R"(agentctx_http_requests_total{route="GET /v1/sessions/{id}/entries/{entryId}",status="200"} 1)"
        ),
        std::string::npos
    ) << metrics;
    EXPECT_EQ(metrics.find(R"(route="GET other")"), std::string::npos) << metrics;
}

TEST_F(hostile_routes, items_per_request_are_capped_naming_the_field)
{
    start();
    const auto id = new_session();
    const auto before = file(id);
    std::string many = R"({"messages":[)";
    for (int i = 0; i < 10001; ++i)
        many += std::string(i ? "," : "") + R"({"role":"user","content":""})";
    many += "]}";
    const auto batch = sync("POST", "/v1/sessions/" + id + "/messages?format=openai", many);
    EXPECT_EQ(batch->res.status, 413) << batch->res.body;
    EXPECT_EQ(error_of(batch, "code"), "too_many_items");
    EXPECT_EQ(error_of(batch, "field"), "messages");
    EXPECT_EQ(error_of(batch, "message"), "messages: 10001 items, at most 10000 per request");
    // A replacement too (the loopback client sends no PUT body: a raw request).
    const auto put = test::checked_ask(port_, "PUT", "/v1/sessions/" + id + "/messages?format=openai", many);
    EXPECT_EQ(put.rfind("HTTP/1.1 413", 0), 0u) << put.substr(0, 300);
    EXPECT_EQ(test::raw_body(put).at("error").at("code"), "too_many_items");
    EXPECT_EQ(file(id), before);
    std::string ids = R"({"maxTokens":100000,"requiredEntryIds":[)";
    for (int i = 0; i < 10001; ++i)
        ids += std::string(i ? "," : "") + "\"e" + std::to_string(i) + "\"";
    const auto view = sync("POST", "/v1/sessions/" + id + "/view", ids + "]}");
    EXPECT_EQ(view->res.status, 413) << view->res.body;
    EXPECT_EQ(error_of(view, "field"), "requiredEntryIds");
    // At the cap: served.
    ids.erase(ids.rfind(','));
    EXPECT_EQ(sync("POST", "/v1/sessions/" + id + "/view", ids + "]}")->res.status, 200);
}

TEST_F(hostile_routes, metrics_answer_while_the_largest_accepted_body_is_parsed)
{
    auto gate = std::make_shared<test_gate>();
    gate->armed = true;
    tweak_ = [gate](server::server_options& o) { o.before_body_parse = [gate] { gate->pass(); }; };
    start();
    const auto id = new_session();
    // 10,000 messages (the cap) in just under the 16 MiB body limit.
    std::string body = R"({"messages":[)";
    const std::string text(1640, 'w');
    for (int i = 0; i < 10000; ++i)
        body += std::string(i ? "," : "") + R"({"role":"user","content":")" + text + R"("})";
    body += "]}";
    ASSERT_LT(body.size(), 16u * 1024 * 1024);
    raw_conn big(port_);
    ASSERT_TRUE(big.send(
        "POST /v1/sessions/" + id +
        "/messages?format=openai HTTP/1.1\r\nHost: t\r\nConnection: close\r\n"
        "Content-Type: application/json\r\nContent-Length: " +
        std::to_string(body.size()) + "\r\n\r\n" + body
    ));
    gate->entered_future.wait();  // the server holds the body on its worker, the io thread is free
    const auto metrics = sync("GET", "/metrics");
    EXPECT_EQ(metrics->res.status, 200);
    EXPECT_EQ(sync("GET", "/v1/sessions/" + id + "/context")->res.status, 200);
    gate->release.set_value();
    std::string res;
    EXPECT_TRUE(big.read_to_close(res));
    EXPECT_EQ(res.rfind("HTTP/1.1 201", 0), 0u) << res.substr(0, 300);
}

TEST_F(hostile_routes, an_append_in_flight_at_shutdown_is_a_retryable_503)
{
    // The session is opening (its file held on the open thread) when the server stops.
    auto gate = std::make_shared<test_gate>();
    tweak_ = [gate](server::server_options& o) {
        o.max_open_sessions = 1;
        o.before_load = [gate](const std::string&) { gate->pass(); };
    };
    start();
    const auto id = new_session();
    new_session();  // closes the first one to make room
    gate->armed = true;
    auto append = request("POST", "/v1/sessions/" + id + "/entries", user("in flight"));
    run_until([&] {
        return gate->entered_future.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
    });
    std::promise<void> stopped;
    boost::asio::post(server_ioc_, [&] {
        server_->stop();
        stopped.set_value();
    });
    stopped.get_future().wait();
    gate->release.set_value();
    run_until([&] { return append->done; });
    EXPECT_EQ(append->res.status, 503) << append->res.body;
    EXPECT_EQ(append->res.header("retry-after"), "1");
    EXPECT_EQ(error_of(append, "code"), "session_closed");
    EXPECT_EQ(
        error_of(append, "message"), "the server is shutting down and did not carry out the request; retry"
    );
}

TEST(hostile_server_process, a_data_directory_it_cannot_write_stops_the_start)
{
    // A directory even root cannot create files in (procfs); an unprivileged run uses its own.
    fs::path dir = "/proc/self/fdinfo";
    const auto own = fs::temp_directory_path() / ("agentctx-readonly-" + std::to_string(::getpid()));
    if (::geteuid() != 0)
    {
        fs::create_directories(own);
        fs::permissions(own, fs::perms::owner_read | fs::perms::owner_exec);
        dir = own;
    }
    const std::string bin = AGENTCTX_SERVER_BIN;
    const auto r = test::run_process(bin + " --no-auth --port 0 --data-dir " + dir.string());
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(
        r.err.find("agent_server: the data directory " + dir.string() + " is not writable: "),
        std::string::npos
    ) << r.err;
    EXPECT_EQ(r.err.find("listening on"), std::string::npos) << r.err;
    if (fs::exists(own))
    {
        fs::permissions(own, fs::perms::owner_all);
        fs::remove_all(own);
    }
}
