// The agent server's provider-format routes: messages in each format round-trip through the context.
#include "server_fixture.hpp"

#include <agentctx/providers/http_summarizer.hpp>

#include <boost/json/serialize.hpp>

#include "fake_provider_server.hpp"
#include "loopback_http.hpp"
#include "server_contract.hpp"
#include "wire_turns.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <string>

using namespace agentctx;
namespace json = boost::json;
using test::agent_server_test;

using test::anthropic_turns;
using test::chat_turns;
using test::responses_turns;

namespace {

using server_wire = agent_server_test;

constexpr std::string_view responses_reasoning =
    R"({"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"Read both."}],"encrypted_content":"gAAAA"})";

std::string with_items(std::string_view key, std::string_view items, std::string_view extra = "")
{
    return "{\"" + std::string(key) + "\":" + std::string(items) + std::string(extra) + "}";
}

// The session file's message objects, in order.
std::vector<json::object> stored_messages(const std::string& text)
{
    std::vector<json::object> out;
    for (std::size_t p = 0; p < text.size();)
    {
        const auto nl = text.find('\n', p);
        const auto line = json::parse(text.substr(p, nl - p)).as_object();
        if (line.at("type") == "message")
            out.push_back(line.at("message").as_object());
        p = nl == std::string::npos ? text.size() : nl + 1;
    }
    return out;
}

}  // namespace

TEST_F(server_wire, openai_messages_round_trip_with_parallel_calls_images_and_usage)
{
    start();
    const auto id = new_session();
    const auto r = sync(
        "POST",
        "/v1/sessions/" + id + "/messages?format=openai",
        with_items(
            "messages",
            chat_turns,
            R"(,"usage":{"prompt_tokens":1200,"completion_tokens":30,"total_tokens":1230,"prompt_tokens_details":{"cached_tokens":200}},"stop_reason":"stop")"
        )
    );
    ASSERT_EQ(r->res.status, 201) << r->res.body;
    ASSERT_EQ(r->json().at("ids").as_array().size(), 8u);
    const auto ctx = sync("GET", "/v1/sessions/" + id + "/context?wire=openai")->json();
    EXPECT_EQ(ctx.at("wire"), json::parse(chat_turns));
    // The entries are the batch's ids, in order; the usage is on the last assistant message only.
    const auto& msgs = ctx.at("messages").as_array();
    ASSERT_EQ(msgs.size(), 8u);
    for (std::size_t i = 0; i < 8; ++i)
        EXPECT_EQ(msgs[i].at("entryId"), r->json().at("ids").at(i));
    const auto stored = stored_messages(file(id));
    ASSERT_EQ(stored.size(), 8u);
    EXPECT_EQ(stored[7].at("usage").at("input"), 1000);
    EXPECT_EQ(stored[7].at("usage").at("cacheRead"), 200);
    EXPECT_EQ(stored[7].at("usage").at("output"), 30);
    EXPECT_EQ(stored[7].at("usage").at("totalTokens"), 1230);
    EXPECT_EQ(stored[2].at("usage").at("totalTokens"), 0);
    EXPECT_EQ(stored[2].at("stopReason"), "toolUse");
    EXPECT_EQ(stored[4].at("toolName"), "bash");
    EXPECT_EQ(stored[7].at("provider"), "anthropic");  // the serving model by default
    EXPECT_EQ(stored[7].at("model"), "claude-sonnet-4-5");
}

TEST_F(server_wire, responses_items_round_trip_and_reasoning_is_stored)
{
    start();
    const auto id = new_session();
    auto items = json::parse(responses_turns).as_array();
    items.insert(items.begin() + 1, json::parse(responses_reasoning));
    const auto r = sync(
        "POST",
        "/v1/sessions/" + id + "/messages?format=responses",
        with_items("input", json::serialize(items), R"(,"usage":{"input_tokens":900,"output_tokens":40})")
    );
    ASSERT_EQ(r->res.status, 201) << r->res.body;
    EXPECT_EQ(
        r->json().at("ids").as_array().size(), 6u
    );  // one assistant message holds reasoning, text and both calls
    // Reasoning is stored (the whole item as its signature) and, as in every wire view, not sent back.
    EXPECT_EQ(
        sync("GET", "/v1/sessions/" + id + "/context?wire=responses")->json().at("wire"),
        json::parse(responses_turns)
    );
    const auto stored = stored_messages(file(id));
    ASSERT_EQ(stored.size(), 6u);
    EXPECT_EQ(stored[1].at("content").at(0).at("type"), "thinking");
    EXPECT_EQ(
        stored[1].at("content").at(0).at("thinkingSignature"),
        json::value(json::serialize(json::parse(responses_reasoning)))
    );
    EXPECT_EQ(stored[4].at("usage").at("totalTokens"), 940);
    EXPECT_EQ(stored[4].at("api"), "openai-responses");
}

TEST_F(server_wire, anthropic_messages_round_trip_with_tool_errors_and_thinking)
{
    start();
    const auto id = new_session();
    auto turns = json::parse(anthropic_turns).as_array();
    auto& blocks = turns[1].as_object()["content"].as_array();
    blocks.insert(
        blocks.begin(),
        json::parse(R"({"type":"thinking","thinking":"Check both files.","signature":"ErUBCkYIAx"})")
    );
    const auto r = sync(
        "POST",
        "/v1/sessions/" + id + "/messages?format=anthropic",
        with_items(
            "messages",
            json::serialize(turns),
            R"(,"usage":{"input_tokens":500,"output_tokens":20,"cache_read_input_tokens":3000,"cache_creation_input_tokens":100},"stop_reason":"end_turn")"
        )
    );
    ASSERT_EQ(r->res.status, 201) << r->res.body;
    EXPECT_EQ(r->json().at("ids").as_array().size(), 6u);
    EXPECT_EQ(
        sync("GET", "/v1/sessions/" + id + "/context?wire=anthropic")->json().at("wire"),
        json::parse(anthropic_turns)
    );
    const auto stored = stored_messages(file(id));
    ASSERT_EQ(stored.size(), 6u);
    EXPECT_EQ(
        stored[1].at("content").at(0),
        json::parse(R"({"type":"thinking","thinking":"Check both files.","thinkingSignature":"ErUBCkYIAx"})")
    );
    EXPECT_EQ(stored[3].at("isError"), true);
    EXPECT_EQ(stored[3].at("toolName"), "bash");
    EXPECT_EQ(stored[5].at("usage").at("cacheRead"), 3000);
    EXPECT_EQ(stored[5].at("usage").at("totalTokens"), 3620);
}

TEST_F(server_wire, a_malformed_item_is_400_with_its_path_and_nothing_is_written)
{
    start();
    const auto id = new_session();
    const auto before = file(id);
    const auto path = "/v1/sessions/" + id + "/messages?format=openai";
    const auto bad_args = sync(
        "POST",
        path,
        with_items(
            "messages", R"([{"role":"user","content":"a"},
        {"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{not json"}}]}])"
        )
    );
    EXPECT_EQ(bad_args->res.status, 400) << bad_args->res.body;
    EXPECT_EQ(bad_args->json().at("error").at("code"), "invalid_wire_message");
    EXPECT_EQ(
        bad_args->json().at("error").at("message"),
        "messages[1].tool_calls[0].function.arguments: not valid JSON"
    );
    const auto third = sync(
        "POST",
        path,
        with_items("messages", R"([{"role":"user","content":"a"},{"role":"user","content":"b"},3])")
    );
    EXPECT_EQ(third->json().at("error").at("message"), "messages[2]: expected an object, got a number");
    const auto responses = sync(
        "POST",
        "/v1/sessions/" + id + "/messages?format=responses",
        with_items("input", R"([{"type":"web_search_call","id":"w"}])")
    );
    EXPECT_EQ(
        responses->json().at("error").at("message"), "input[0].type: unsupported item type 'web_search_call'"
    );
    // The body's shape and the format.
    EXPECT_EQ(
        sync("POST", path, with_items("input", "[]"))->json().at("error").at("message"),
        "input: unknown field"
    );
    EXPECT_EQ(sync("POST", path, R"({"usage":{}})")->json().at("error").at("message"), "messages: missing");
    EXPECT_EQ(
        sync("POST", path, with_items("messages", "[]"))->json().at("error").at("message"),
        "messages: no messages"
    );
    EXPECT_EQ(
        sync("POST", path, with_items("messages", R"([{"role":"user","content":"a"}])", R"(,"model":7)"))
            ->json()
            .at("error")
            .at("message"),
        "model: expected a string"
    );
    EXPECT_EQ(
        sync(
            "POST",
            path,
            with_items("messages", R"([{"role":"user","content":"a"}])", R"(,"usage":{"prompt_tokens":1})")
        )
            ->json()
            .at("error")
            .at("message"),
        "usage: the batch has no assistant message to attach it to"
    );
    const auto no_format =
        sync("POST", "/v1/sessions/" + id + "/messages?format=gemini", with_items("messages", "[]"));
    EXPECT_EQ(no_format->res.status, 400);
    EXPECT_EQ(no_format->json().at("error").at("code"), "invalid_request");
    EXPECT_EQ(
        sync("POST", "/v1/sessions/nosuchsession/messages?format=openai", with_items("messages", "[]"))
            ->res.status,
        404
    );
    EXPECT_EQ(file(id), before);
}

TEST_F(server_wire, a_result_for_an_earlier_batchs_call_takes_the_calls_tool_name)
{
    start();
    const auto id = new_session();
    const auto path = "/v1/sessions/" + id + "/messages?format=openai";
    ASSERT_EQ(
        sync(
            "POST",
            path,
            with_items(
                "messages", R"([{"role":"user","content":"list"},
        {"role":"assistant","content":null,"tool_calls":[{"id":"call_9","type":"function","function":{"name":"ls","arguments":"{}"}}]}])"
            )
        )
            ->res.status,
        201
    );
    ASSERT_EQ(
        sync(
            "POST",
            path,
            with_items("messages", R"([{"role":"tool","tool_call_id":"call_9","content":"a b"}])")
        )
            ->res.status,
        201
    );
    const auto stored = stored_messages(file(id));
    ASSERT_EQ(stored.size(), 3u);
    EXPECT_EQ(stored[2].at("toolName"), "ls");
    EXPECT_EQ(stored[2].at("toolCallId"), "call_9");
}

TEST_F(server_wire, a_batch_is_contiguous_among_concurrent_appends)
{
    start();
    const auto id = new_session();
    std::vector<std::shared_ptr<test::reply>> singles;
    for (int i = 0; i < 10; ++i)
        singles.push_back(
            request("POST", "/v1/sessions/" + id + "/entries", user("single " + std::to_string(i)))
        );
    const auto batch =
        request("POST", "/v1/sessions/" + id + "/messages?format=openai", with_items("messages", chat_turns));
    for (int i = 10; i < 20; ++i)
        singles.push_back(
            request("POST", "/v1/sessions/" + id + "/entries", user("single " + std::to_string(i)))
        );
    run_until([&] {
        return batch->done &&
               std::all_of(singles.begin(), singles.end(), [](const auto& r) { return r->done; });
    });
    ASSERT_EQ(batch->res.status, 201) << batch->res.body;
    // The file's entries: the batch's eight, one after the other, each the child of the one before.
    const auto text = file(id);
    const auto ids = batch->json().at("ids").as_array();
    ASSERT_EQ(ids.size(), 8u);
    std::vector<json::object> lines;
    for (std::size_t p = text.find('\n') + 1; p < text.size(); p = text.find('\n', p) + 1)
        lines.push_back(json::parse(text.substr(p, text.find('\n', p) - p)).as_object());
    ASSERT_EQ(lines.size(), 28u);
    std::size_t first = 0;
    while (first < lines.size() && lines[first].at("id") != ids[0])
        ++first;
    ASSERT_LE(first + 8, lines.size());
    for (std::size_t k = 1; k < 8; ++k)
    {
        EXPECT_EQ(lines[first + k].at("id"), ids[k]);
        EXPECT_EQ(lines[first + k].at("parentId"), ids[k - 1]);
    }
}

namespace {

// PUT on a raw connection (the test client sends a body with POST only), its answer checked
// against the OpenAPI document: the status and the JSON body.
std::pair<int, json::value> put(std::uint16_t port, const std::string& target, const std::string& body)
{
    const auto raw = test::checked_ask(port, "PUT", target, body);
    return {std::stoi(raw.substr(9, 3)), test::raw_body(raw)};
}

}  // namespace

// PUT: the whole conversation as the agent holds it now; the rewritten tool result becomes a branch.
TEST_F(server_wire, put_replaces_a_rewritten_tool_result_as_a_branch_and_the_same_list_writes_nothing)
{
    start();
    const auto id = new_session();
    const auto target = "/v1/sessions/" + id + "/messages?format=openai";
    const auto posted = sync("POST", target, with_items("messages", chat_turns));
    ASSERT_EQ(posted->res.status, 201) << posted->res.body;
    const auto ids = posted->json().at("ids").as_array();
    auto turns = json::parse(chat_turns).as_array();
    turns[6].as_object()["content"] = "ok, 2 files changed";  // call_3's result
    const auto [status, r] = put(port_, target, with_items("messages", json::serialize(turns)));
    ASSERT_EQ(status, 200) << r;
    EXPECT_EQ(r.at("changed"), true);
    EXPECT_EQ(r.at("shared"), 6);
    EXPECT_EQ(r.at("forkId"), ids[5]);
    EXPECT_EQ(r.at("oldLeafId"), ids[7]);
    ASSERT_EQ(r.at("ids").as_array().size(), 2u);  // the result and the reply after it
    EXPECT_EQ(sync("GET", "/v1/sessions/" + id + "/context?wire=openai")->json().at("wire"), turns);
    EXPECT_EQ(stored_messages(file(id)).size(), 10u);  // the old branch stays in the file
    const auto before = file(id);
    const auto [again_status, again] = put(port_, target, with_items("messages", json::serialize(turns)));
    ASSERT_EQ(again_status, 200) << again;
    EXPECT_EQ(again.at("changed"), false);
    EXPECT_EQ(again.at("shared"), 8);
    EXPECT_EQ(again.at("ids").as_array().size(), 0u);
    EXPECT_EQ(file(id), before);
}

TEST_F(server_wire, put_with_a_bad_body_names_the_field_and_writes_nothing)
{
    start();
    const auto id = new_session();
    const auto target = "/v1/sessions/" + id + "/messages?format=openai";
    ASSERT_EQ(sync("POST", target, with_items("messages", chat_turns))->res.status, 201);
    const auto before = file(id);
    const auto [bad_status, bad] =
        put(port_,
            target,
            R"({"messages":[{"role":"user","content":"fix the build"},{"role":"tool","content":"x"}]})");
    ASSERT_EQ(bad_status, 400) << bad;
    EXPECT_EQ(bad.at("error").at("code"), "invalid_wire_message");
    EXPECT_NE(std::string(bad.at("error").at("message").as_string()).find("messages[1]"), std::string::npos)
        << bad;
    const auto [missing_status, missing] = put(port_, target, R"({"input":[]})");
    ASSERT_EQ(missing_status, 400) << missing;
    EXPECT_EQ(missing.at("error").at("message"), "input: unknown field");
    EXPECT_EQ(file(id), before);
}

// A reply's input_transformations: recorded on the last assistant message, counted in the metrics,
// and a malformed list refused with its path before anything is written.
TEST_F(server_wire, a_replys_input_transformations_are_kept_and_counted)
{
    start();
    const auto id = new_session();
    const std::string list =
        R"([{"type":"thinking_dropped","reason":"prefix_binding_mismatch","path":"messages.1.content.0"},)"
        R"({"type":"thinking_mismatch_allowed","reason":"prefix_binding_mismatch","path":"messages.3.content.0"}])";
    const auto r = sync(
        "POST",
        "/v1/sessions/" + id + "/messages?format=anthropic",
        with_items(
            "messages",
            anthropic_turns,
            R"(,"usage":{"input_tokens":500,"output_tokens":20},"input_transformations":)" + list
        )
    );
    ASSERT_EQ(r->res.status, 201) << r->res.body;
    const auto stored = stored_messages(file(id));
    ASSERT_EQ(stored.size(), 6u);
    EXPECT_EQ(stored[5].at("usage").at("inputTransformations").at("removed"), 1);
    EXPECT_EQ(stored[5].at("usage").at("inputTransformations").at("allowed"), 1);
    EXPECT_FALSE(stored[1].at("usage").as_object().contains("inputTransformations"));
    const auto metrics = sync("GET", "/metrics")->res.body;
    EXPECT_NE(metrics.find("agentctx_reasoning_blocks_total{action=\"removed\"} 1\n"), std::string::npos)
        << metrics;
    EXPECT_NE(metrics.find("agentctx_reasoning_blocks_total{action=\"allowed\"} 1\n"), std::string::npos);
    EXPECT_NE(
        metrics.find("agentctx_reasoning_transformations_total{reason=\"prefix_binding_mismatch\"} 2\n"),
        std::string::npos
    );

    const auto bad = sync(
        "POST",
        "/v1/sessions/" + id + "/messages?format=anthropic",
        with_items("messages", anthropic_turns, R"(,"input_transformations":[{"type":"thinking_dropped"}])")
    );
    EXPECT_EQ(bad->res.status, 400);
    EXPECT_NE(bad->res.body.find("input_transformations[0].reason"), std::string::npos) << bad->res.body;
    EXPECT_EQ(stored_messages(file(id)).size(), 6u);
}

// A server whose summarizer uses OpenAI inline compaction against a loopback fake (threshold
// 60,000, the working budget), and a session whose history passes it.
class server_inline : public agent_server_test
{
protected:
    void start_inline()
    {
        provider_.route("/v1/chat/completions", [](const test::recorded_request&) {
            test::scripted_response r;
            r.body = test::openai_body("## Goal\nPortable note of the loop's compaction.");
            return r;
        });
        auto tweak = std::move(tweak_);
        tweak_ = [tweak](server::server_options& o) {
            o.host.model = {"openai", "gpt-loop", 100000, 0};
            if (tweak)
                tweak(o);
        };
        start(
            [this](boost::asio::any_io_executor ex) {
                providers::provider_config c;
                c.format = providers::wire_format::openai;
                c.name = "openai";
                c.base_url = provider_.base_url() + "/v1";
                c.model = "gpt-loop";
                c.api_key = "k";
                c.stream = false;
                c.native = providers::native_mode::on;
                c.openai_form = providers::openai_native_form::inline_request;
                return std::make_shared<providers::http_summarizer>(ex, c);
            },
            100000,
            16384
        );
    }

    std::string loaded_session()
    {
        const auto id = new_session();
        const std::string history =
            R"([{"role":"user","content":"first )" + std::string(250000, 'u') +
            R"("},{"role":"assistant","content":"a1"},{"role":"user","content":"next"}])";
        EXPECT_EQ(
            sync("POST", "/v1/sessions/" + id + "/messages?format=responses", with_items("input", history))
                ->res.status,
            201
        );
        return id;
    }

    // The host's loop request, built from `view` as it advertises it, answered by the loopback
    // fake's inline compaction: the reply's output (reasoning, compaction, the answer).
    static json::array loop_output(const json::value& view)
    {
        test::recorded_request loop;
        loop.body = json::serialize(json::object{
            {"model", "gpt-loop"},
            {"input", view.at("wire")},
            {"context_management", view.at("contextManagement")},
            {"store", false}});
        return json::parse(test::openai_inline_reply(loop, "ENC-LOOP").body).at("output").as_array();
    }

    std::shared_ptr<test::reply> append_output(
        const std::string& id, const json::array& output, std::string_view extra = ""
    )
    {
        return sync(
            "POST",
            "/v1/sessions/" + id + "/messages?format=responses",
            with_items(
                "input",
                json::serialize(output),
                std::string(R"(,"usage":{"input_tokens":62000,"output_tokens":5})") + std::string(extra)
            )
        );
    }

    test::fake_provider_server provider_;
};

// OpenAI inline compaction in the host's own loop: the loop's request carries the view's
// contextManagement, the provider compacts inside it, and the appended reply's compaction item
// becomes the session's native state, replayed verbatim by the next Responses view.
TEST_F(server_inline, a_replys_compaction_item_is_adopted_and_replayed_by_the_next_responses_view)
{
    start_inline();
    const auto id = loaded_session();
    const auto view = sync("GET", "/v1/sessions/" + id + "/context?wire=responses")->json();
    ASSERT_TRUE(view.as_object().contains("contextManagement"));
    const auto output = loop_output(view);
    ASSERT_EQ(output.size(), 3u);  // reasoning, compaction, the answer
    ASSERT_EQ(output[1].at("type"), "compaction");

    const auto r = append_output(id, output);
    ASSERT_EQ(r->res.status, 201) << r->res.body;
    const auto appended = r->json();
    const auto& ids = appended.at("ids").as_array();
    ASSERT_EQ(ids.size(), 2u);  // the reasoning's message, the answer's
    const auto& adopted = appended.at("compaction");
    ASSERT_EQ(adopted.at("adopted"), true) << json::serialize(adopted);
    const auto entry = std::string(adopted.at("entryId").as_string());

    // The next view replays the item verbatim, then the answer; the entry keeps from the answer.
    const auto next = sync("GET", "/v1/sessions/" + id + "/context?wire=responses")->json();
    EXPECT_EQ(next.at("native"), json::parse(R"({"provider":"openai","entryId":")" + entry + R"("})"));
    const auto& wire = next.at("wire").as_array();
    ASSERT_GE(wire.size(), 2u);
    EXPECT_EQ(wire[0], output[1]);
    EXPECT_NE(json::serialize(wire.back()).find("ok"), std::string::npos);
    const auto text = file(id);
    EXPECT_NE(
        text.find(R"("firstKeptEntryId":")" + std::string(ids[1].as_string()) + "\""), std::string::npos
    );
    EXPECT_NE(text.find("Portable note of the loop's compaction."), std::string::npos);
    EXPECT_NE(text.find(R"("encrypted_content":"ENC-LOOP")"), std::string::npos);
}

// A before_compact hook's result wins over the item: the answer says the item was not adopted
// (`hook_result`) with the committed entry, and the next view replays the hook's summary, no item.
TEST_F(server_inline, a_hooks_result_is_committed_and_the_answer_says_the_item_was_not_adopted)
{
    tweak_ = [](server::server_options& o) {
        o.after_open = [](runtime::session& s) {
            s.on_before_compact([](const runtime::before_compact_event&) {
                compaction::compaction_result r;
                r.summary = "## Goal\nThe host's own summary.";
                return runtime::hook_decision{.result = r};
            });
        };
    };
    start_inline();
    const auto id = loaded_session();
    const auto output = loop_output(sync("GET", "/v1/sessions/" + id + "/context?wire=responses")->json());
    const auto r = append_output(id, output);
    ASSERT_EQ(r->res.status, 201) << r->res.body;
    const auto answer = r->json();
    const auto& c = answer.at("compaction");
    EXPECT_EQ(c.at("adopted"), false) << json::serialize(c);
    EXPECT_EQ(c.at("reason"), "hook_result");
    ASSERT_TRUE(c.at("entryId").is_string());
    EXPECT_FALSE(c.as_object().contains("error"));

    const auto next = sync("GET", "/v1/sessions/" + id + "/context?wire=responses")->json();
    EXPECT_FALSE(next.as_object().contains("native"));
    EXPECT_EQ(json::serialize(next.at("wire")).find("ENC-LOOP"), std::string::npos);
    EXPECT_NE(json::serialize(next.at("wire")).find("The host's own summary."), std::string::npos);
    const auto text = file(id);
    EXPECT_NE(text.find(R"("id":")" + std::string(c.at("entryId").as_string()) + "\""), std::string::npos);
    EXPECT_EQ(text.find("ENC-LOOP"), std::string::npos);
}

// Another compaction in flight: the reply's messages are appended, the adoption is refused with
// `compaction_running` and writes nothing more, and the running compaction still commits.
TEST_F(server_inline, an_adoption_while_a_compaction_runs_is_refused_and_the_running_one_commits)
{
    std::promise<void> release;
    auto released = release.get_future().share();
    const auto unblock = std::shared_ptr<void>(nullptr, [&release, released](void*) {
        if (released.wait_for(std::chrono::seconds(0)) != std::future_status::ready)
            release.set_value();  // however the test ends, the fake's thread is let go
    });
    auto arrived = std::make_shared<std::atomic<bool>>(false);
    provider_.route("/v1/responses", [released, arrived](const test::recorded_request& r) {
        *arrived = true;
        released.wait();  // the running compaction's request is in flight until released
        return test::openai_inline_reply(r, "ENC-RUNNING");
    });
    start_inline();
    const auto id = loaded_session();
    // A newer exchange past keepRecentTokens: the manual compaction has a prefix to summarize.
    const std::string more = R"([{"role":"assistant","content":"a2"},{"role":"user","content":")" +
                             std::string(1200, 'n') + R"("}])";
    ASSERT_EQ(
        sync("POST", "/v1/sessions/" + id + "/messages?format=responses", with_items("input", more))
            ->res.status,
        201
    );
    const auto output = loop_output(sync("GET", "/v1/sessions/" + id + "/context?wire=responses")->json());
    const auto compacting = request("POST", "/v1/sessions/" + id + "/compact", "{}");
    run_until([&] { return arrived->load() || compacting->done; });
    ASSERT_FALSE(compacting->done) << compacting->res.body;

    const auto r = append_output(id, output);
    ASSERT_EQ(r->res.status, 201) << r->res.body;
    const auto answer = r->json();
    EXPECT_EQ(answer.at("ids").as_array().size(), 2u);
    const auto& c = answer.at("compaction");
    EXPECT_EQ(c.at("adopted"), false) << json::serialize(c);
    EXPECT_EQ(c.at("error"), "compaction_running");
    EXPECT_EQ(file(id).find(R"("type":"compaction")"), std::string::npos);

    release.set_value();
    run_until([&] { return compacting->done; });
    ASSERT_EQ(compacting->res.status, 200) << compacting->res.body;
    const auto text = file(id);
    EXPECT_NE(text.find(R"("encrypted_content":"ENC-RUNNING")"), std::string::npos);
    EXPECT_EQ(text.find("ENC-LOOP"), std::string::npos);
}

// A reply whose compaction item cannot be adopted (here the item has no encrypted_content) is
// refused whole as any malformed item is, and without the item nothing would record it.
TEST_F(server_wire, a_malformed_compaction_item_is_400_with_its_path)
{
    start();
    const auto id = new_session();
    const auto r = sync(
        "POST",
        "/v1/sessions/" + id + "/messages?format=responses",
        with_items("input", R"([{"type":"compaction"},{"role":"assistant","content":"ok"}])")
    );
    ASSERT_EQ(r->res.status, 400);
    EXPECT_EQ(r->json().at("error").at("message"), "input[0].encrypted_content: required field is missing");
    // A replacement is the host's whole transcript: a compaction item there stays unsupported.
    const auto [put_status, put_body] =
        put(port_,
            "/v1/sessions/" + id + "/messages?format=responses",
            R"({"input":[{"type":"compaction","encrypted_content":"E"},{"role":"assistant","content":"ok"}]})"
        );
    ASSERT_EQ(put_status, 400) << put_body;
    EXPECT_EQ(put_body.at("error").at("message"), "input[0].type: unsupported item type 'compaction'");
}

// A session whose summarizer does not use inline compaction never advertised the threshold: the
// reply's messages are appended, the item is not adopted, and no compaction entry is written.
TEST_F(server_wire, a_compaction_item_is_not_adopted_without_inline_compaction_and_nothing_else_is_written)
{
    start();  // the offline summarizer
    const auto id = new_session();
    const auto r = sync(
        "POST",
        "/v1/sessions/" + id + "/messages?format=responses",
        with_items(
            "input",
            R"([{"role":"user","content":"q"},{"type":"compaction","encrypted_content":"E"},{"role":"assistant","content":"ok"}])"
        )
    );
    ASSERT_EQ(r->res.status, 201) << r->res.body;
    const auto answer = r->json();
    EXPECT_EQ(answer.at("ids").as_array().size(), 2u);
    const auto& c = answer.at("compaction");
    EXPECT_EQ(c.at("adopted"), false);
    EXPECT_NE(std::string(c.at("message").as_string()).find("inline compaction"), std::string::npos);
    EXPECT_EQ(file(id).find(R"("type":"compaction")"), std::string::npos);
}

// A steering message appended between the view the loop's request was built from and its reply:
// with the view's leafId as `coveredLeafId`, the item covers the path up to that leaf, and the
// steering message stays after the compaction, replayed between the item and the answer.
TEST_F(server_inline, the_covered_leaf_keeps_a_message_appended_meanwhile_after_the_adopted_item)
{
    start_inline();
    const auto id = loaded_session();
    const auto view = sync("GET", "/v1/sessions/" + id + "/context?wire=responses")->json();
    const auto output = loop_output(view);
    const auto steer = sync(
        "POST",
        "/v1/sessions/" + id + "/messages?format=responses",
        with_items("input", R"([{"role":"user","content":"steer: the other file"}])")
    );
    ASSERT_EQ(steer->res.status, 201) << steer->res.body;
    const auto steering = std::string(steer->json().at("ids").at(0).as_string());
    const auto r = append_output(id, output, R"(,"coveredLeafId":)" + json::serialize(view.at("leafId")));
    ASSERT_EQ(r->res.status, 201) << r->res.body;
    const auto answer = r->json();
    ASSERT_EQ(answer.at("compaction").at("adopted"), true) << json::serialize(answer);
    EXPECT_NE(file(id).find(R"("firstKeptEntryId":")" + steering + "\""), std::string::npos);
    const auto next = sync("GET", "/v1/sessions/" + id + "/context?wire=responses")->json();
    const auto& wire = next.at("wire").as_array();
    ASSERT_GE(wire.size(), 3u);
    EXPECT_EQ(wire[0], output[1]);
    EXPECT_NE(json::serialize(wire[1]).find("steer: the other file"), std::string::npos);

    // A covered leaf that is not on the path is refused by name; the messages stay appended.
    const auto again = append_output(id, output, R"(,"coveredLeafId":"nope")");
    ASSERT_EQ(again->res.status, 201) << again->res.body;
    EXPECT_EQ(again->json().at("compaction").at("error"), "adoption_invalid_cut");
}
