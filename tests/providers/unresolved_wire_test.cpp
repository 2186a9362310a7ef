// Unresolved calls on the wire: both request formats stay valid, the host's context answers the call,
// checkpoints stay clean.
#include <agentctx/compaction/checkpoint.hpp>
#include <agentctx/compaction/json_text.hpp>
#include <agentctx/compaction/request_view.hpp>
#include <agentctx/compaction/unresolved_calls.hpp>
#include <agentctx/providers/chat_messages.hpp>
#include <agentctx/providers/offline_summarizer.hpp>
#include <agentctx/runtime/memory_store.hpp>
#include <agentctx/runtime/session.hpp>

#include "session_text.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/json/serialize.hpp>

#include <gtest/gtest.h>

#include <set>

using namespace agentctx;
namespace json = boost::json;
using test::tokens;

namespace {

// u1, a batch whose second call never returned, then more input and completed work.
test::session_text interrupted(int exchanges)
{
    test::session_text s;
    s.user("u1", "deploy the service " + tokens(100));
    s.message(
        "a1",
        {{"role", "assistant"},
         {"content",
          json::array{
              json::object{{"type", "text"}, {"text", "Deploying."}},
              json::object{
                  {"type", "toolCall"},
                  {"id", "call_a"},
                  {"name", "bash"},
                  {"arguments", json::object{{"command", "make"}}}},
              json::object{
                  {"type", "toolCall"},
                  {"id", "call_lost"},
                  {"name", "bash"},
                  {"arguments", json::object{{"command", "kubectl apply"}}}}}},
         {"api", "anthropic-messages"},
         {"provider", "anthropic"},
         {"model", "claude-sonnet-4-5"},
         {"stopReason", "toolUse"}}
    );
    s.tool_result("r1", "call_a", "bash", "built");
    s.user("u2", "the agent crashed; continue");
    for (int i = 0; i < exchanges; ++i)
    {
        const std::string n = std::to_string(i);
        s.tool_call("x" + n, "done_" + n, "bash", {{"command", "step " + n}});
        s.tool_result("y" + n, "done_" + n, "bash", tokens(100));
    }
    s.assistant("fin", "all done", 3000);
    return s;
}

// Chat Completions: each assistant's tool_calls are answered by `tool` messages that follow it
// directly, and no `tool` message answers a call that was not just made.
void expect_valid_openai(const json::array& msgs)
{
    std::set<std::string> open;
    for (const auto& v : msgs)
    {
        const auto& m = v.as_object();
        const auto& r = m.at("role").as_string();
        if (r == "tool")
        {
            EXPECT_EQ(open.erase(std::string(m.at("tool_call_id").as_string())), 1u) << json::serialize(m);
            continue;
        }
        EXPECT_TRUE(open.empty()) << "unanswered calls before " << json::serialize(m);
        open.clear();
        if (const auto* calls = m.if_contains("tool_calls"))
            for (const auto& c : calls->as_array())
                open.insert(std::string(c.at("id").as_string()));
    }
    EXPECT_TRUE(open.empty());
}

// Messages: turns alternate starting with user; every tool_use is answered by a tool_result at
// the head of the next user turn, and every tool_result answers the previous turn's tool_use.
void expect_valid_anthropic(const json::array& msgs)
{
    ASSERT_FALSE(msgs.empty());
    std::set<std::string> open;
    for (std::size_t i = 0; i < msgs.size(); ++i)
    {
        const auto& m = msgs[i].as_object();
        EXPECT_EQ(m.at("role").as_string(), i % 2 == 0 ? "user" : "assistant") << i;
        bool head = true;
        for (const auto& b : m.at("content").as_array())
        {
            const auto& type = b.at("type").as_string();
            if (type == "tool_result")
            {
                EXPECT_TRUE(head) << "tool_result after other blocks";
                EXPECT_EQ(open.erase(std::string(b.at("tool_use_id").as_string())), 1u);
                continue;
            }
            head = false;
            if (type == "text")
            {
                EXPECT_FALSE(b.at("text").as_string().empty());
            }
        }
        EXPECT_TRUE(open.empty()) << "unanswered tool_use before turn " << i;
        for (const auto& b : m.at("content").as_array())
            if (b.at("type").as_string() == "tool_use")
                open.insert(std::string(b.at("id").as_string()));
    }
    EXPECT_TRUE(open.empty());
}

std::string observation_for(const json::array& msgs, std::string_view call)
{
    for (const auto& v : msgs)
    {
        const auto& m = v.as_object();
        if (m.at("role").as_string() == "tool" && m.at("tool_call_id").as_string() == call)
            return std::string(m.at("content").as_string());
    }
    return {};
}

}  // namespace

TEST(unresolved_wire, the_request_view_is_valid_in_both_formats_and_carries_the_observation)
{
    const auto ctx = compaction::build_session_context(interrupted(3).path());
    const auto fit = compaction::fit_request(ctx, {.max_tokens = 100000});
    const auto openai = providers::to_wire_messages(providers::wire_format::openai, fit.messages);
    const auto anthropic = providers::to_wire_messages(providers::wire_format::anthropic, fit.messages);
    expect_valid_openai(openai);
    expect_valid_anthropic(anthropic);
    EXPECT_EQ(
        observation_for(openai, "call_lost"), compaction::unknown_outcome_text({"call_lost", "bash", "a1"})
    );
    // The raw projection would not be valid: the lost call has no answer.
    const auto raw = providers::to_wire_messages(providers::wire_format::openai, ctx.messages);
    EXPECT_TRUE(observation_for(raw, "call_lost").empty());
}

TEST(unresolved_wire, an_anthropic_batch_answer_is_one_user_turn_with_the_results_first)
{
    const auto ctx = compaction::build_session_context(interrupted(0).path());
    const auto msgs = providers::to_wire_messages(
        providers::wire_format::anthropic, compaction::with_unknown_outcomes(ctx.messages)
    );
    expect_valid_anthropic(msgs);
    // user u1 | assistant a1 | user [result call_a, observation call_lost, text u2] | assistant fin
    ASSERT_EQ(msgs.size(), 4u);
    const auto& turn = msgs[2].at("content").as_array();
    ASSERT_EQ(turn.size(), 3u);
    EXPECT_EQ(turn[0].at("tool_use_id"), "call_a");
    EXPECT_EQ(turn[1].at("tool_use_id"), "call_lost");
    EXPECT_EQ(turn[1].at("is_error"), true);
    EXPECT_EQ(turn[2].at("type"), "text");
}

class unresolved_session : public ::testing::Test
{
protected:
    std::shared_ptr<runtime::session> open(const std::string& text, std::int64_t keep)
    {
        runtime::session_config c;
        c.settings.keep_recent_tokens = keep;
        c.model = {"anthropic", "claude-sonnet-4-5", 200000, 0};
        c.summarizer = std::make_shared<providers::offline_summarizer>(ioc_.get_executor());
        compaction::diagnostics diag;
        auto s = runtime::session::open(
            ioc_.get_executor(), std::make_unique<runtime::memory_store>(text), std::move(c), diag
        );
        EXPECT_TRUE(s) << diag.message;
        return *s;
    }
    template <class Init>
    auto run(Init init)
    {
        ioc_.restart();
        auto r = init();
        ioc_.run();
        return r;
    }
    boost::asio::io_context ioc_;
};

TEST_F(unresolved_session, the_hosts_context_answers_the_call_and_the_checkpoint_holds_no_trace_of_it)
{
    auto s = open(interrupted(6).text, 250);
    // Before compacting: the host's context answers the lost call; the projection does not.
    const auto before = s->context();
    EXPECT_EQ(before.size(), s->current()->messages.size() + 1);
    expect_valid_openai(providers::to_wire_messages(providers::wire_format::openai, before));

    runtime::compaction_outcome out;
    s->async_compact(std::nullopt, [&](boost::system::error_code ec, runtime::compaction_outcome o) {
        EXPECT_FALSE(ec) << ec.message() << ": " << o.message;
        out = std::move(o);
    });
    ioc_.restart();
    ioc_.run();
    ASSERT_TRUE(out.compacted) << out.message;
    // The cut passed the interrupted batch: it lies in the summarized prefix now.
    EXPECT_EQ(out.result->first_kept_entry_id, "x3");
    const auto after = s->context();
    expect_valid_openai(providers::to_wire_messages(providers::wire_format::openai, after));
    expect_valid_anthropic(providers::to_wire_messages(providers::wire_format::anthropic, after));

    runtime::checkpoint_outcome exported;
    s->async_export_checkpoint([&](boost::system::error_code ec, runtime::checkpoint_outcome o) {
        EXPECT_FALSE(ec) << ec.message();
        exported = std::move(o);
    });
    ioc_.restart();
    ioc_.run();
    ASSERT_TRUE(exported.record);
    const std::string record = json::serialize(compaction::to_json(*exported.record));
    EXPECT_EQ(record.find("call_lost"), std::string::npos) << record;
    EXPECT_EQ(record.find("outcome is unknown"), std::string::npos);
    EXPECT_EQ(record.find("before repeating"), std::string::npos);
    EXPECT_EQ(out.result->summary.find("call_lost"), std::string::npos);
}

// An assistant that called a tool and then stopped on an error (a content filter, a refusal, a
// failed or cancelled response) is left out of every request; the results the agent posted for
// its calls leave with it, as does a result that answers no call, and the view stays valid.
TEST(unresolved_wire, the_results_of_a_dropped_assistants_calls_leave_the_view_with_it)
{
    test::session_text s;
    s.user("u1", "read it");
    s.tool_call("a1", "call_0", "read", {{"path", "a.txt"}});
    s.tool_result("r1", "call_0", "read", "first");
    s.assistant("f1", "read");
    s.user("u2", "now build");
    for (const char* stop : {"error", "aborted"})
    {
        const std::string k = stop;
        s.message(
            "a2" + k,
            {{"role", "assistant"},
             {"content",
              json::array{json::object{
                  {"type", "toolCall"},
                  {"id", "call_0"},
                  {"name", "bash"},
                  {"arguments", json::object{{"command", "make"}}}}}},
             {"api", "openai-completions"},
             {"provider", "openai"},
             {"model", "gpt-4.1"},
             {"stopReason", stop}}
        );
        s.tool_result("r2" + k, "call_0", "bash", "refused " + k);
    }
    s.tool_result("r3", "call_nobody", "bash", "orphan");
    s.user("u3", "try again").assistant("a3", "done");
    const auto ctx = compaction::build_session_context(s.path());
    const auto openai = providers::to_wire_messages(providers::wire_format::openai, ctx.messages);
    expect_valid_openai(openai);
    std::vector<std::string> roles;
    for (const auto& m : openai)
        roles.emplace_back(m.at("role").as_string());
    EXPECT_EQ(
        roles,
        (std::vector<std::string>{"user", "assistant", "tool", "assistant", "user", "user", "assistant"})
    );
    EXPECT_EQ(observation_for(openai, "call_0"), "first");
    const auto anthropic = providers::to_wire_messages(providers::wire_format::anthropic, ctx.messages);
    expect_valid_anthropic(anthropic);
    const auto anthropic_text = json::serialize(anthropic);
    EXPECT_EQ(anthropic_text.find("refused"), std::string::npos) << anthropic_text;
    EXPECT_EQ(anthropic_text.find("orphan"), std::string::npos) << anthropic_text;
    const auto responses = providers::to_responses_input(ctx.messages);
    std::vector<std::string> outputs;
    for (const auto& item : responses)
        if (const auto* t = item.as_object().if_contains("type"); t && *t == "function_call_output")
            outputs.emplace_back(item.at("output").as_string());
    EXPECT_EQ(outputs, (std::vector<std::string>{"first"}));
}
