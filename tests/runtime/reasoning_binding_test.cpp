// Reasoning after an edit: a provider's input_transformations recorded (evidence, event), the clearing that
// waits for the next compaction when it would drop more reasoning than it frees, and wire views that never
// replay reasoning.
#include <agentctx/providers/chat_messages.hpp>
#include <agentctx/providers/input_transformations.hpp>
#include <agentctx/providers/offline_summarizer.hpp>
#include <agentctx/providers/wire_input.hpp>
#include <agentctx/runtime/session.hpp>

#include "append_entry.hpp"
#include "clearing_messages.hpp"
#include "file_text.hpp"
#include "open_session.hpp"
#include "run_until.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

using namespace agentctx;
namespace json = boost::json;
namespace fs = std::filesystem;
using boost::system::error_code;

namespace {

using test::clearing::message;
using test::clearing::result;

// An Anthropic Messages reply with the binding beta, as the API returns it (recorded shape,
// shortened): the host replayed two thinking blocks after a cleared result; one was dropped.
const char* recorded_reply =
    R"({"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5",
  "content":[{"type":"thinking","thinking":"All reads are done.","signature":"sig-final"},
             {"type":"text","text":"done"}],
  "stop_reason":"end_turn","stop_sequence":null,
  "input_transformations":[
    {"type":"thinking_dropped","reason":"prefix_binding_mismatch","path":"messages.4.content.0"},
    {"type":"thinking_mismatch_allowed","reason":"prefix_binding_mismatch","path":"messages.6.content.0"}],
  "usage":{"input_tokens":25000,"output_tokens":100,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}})";

class reasoning_binding_test : public ::testing::Test
{
protected:
    void SetUp() override
    {
        path_ = test::new_session_file("agentctx-reasoning");
        config_.model = {"anthropic", "claude-sonnet-4-5", 100000, 8000};
        config_.settings.working_budget = compaction::token_amount{};
        config_.settings.background.enabled = false;
        auto& c = config_.settings.clear_tool_results;
        c.trigger = {20000, 0};
        c.keep = 2;
        c.clear_at_least = 1000;
        config_.summarizer = std::make_shared<providers::offline_summarizer>(ioc_.get_executor());
    }
    void TearDown() override
    {
        session_.reset();
        fs::remove(path_);
    }

    void open()
    {
        session_ = test::open_session(ioc_.get_executor(), path_, config_);
        ASSERT_TRUE(session_);
        session_->on_event([this](const runtime::session_event& e) {
            if (const auto* c = std::get_if<runtime::context_cleared_event>(&e))
                cleared_.push_back(*c);
            else if (const auto* d = std::get_if<runtime::clearing_deferred_event>(&e))
                deferred_.push_back(*d);
            else if (const auto* r = std::get_if<runtime::reasoning_transformed_event>(&e))
                transformed_.push_back(*r);
        });
    }

    std::string add(json::object fields) { return test::append_entry(ioc_, *session_, std::move(fields)); }

    // A prompt and `n` rounds of one 4,000-token read each, every call after thinking of
    // `thinking_chars` characters; the results' ids.
    std::vector<std::string> rounds(int n, std::size_t thinking_chars)
    {
        add(message({{"role", "user"}, {"content", "fix it"}}));
        std::vector<std::string> ids;
        for (int i = 1; i <= n; ++i)
        {
            const auto k = std::to_string(i);
            json::array content{
                json::object{
                    {"type", "thinking"},
                    {"thinking", std::string(thinking_chars, 't')},
                    {"thinkingSignature", "sig-" + k}},
                json::object{
                    {"type", "toolCall"},
                    {"id", "c" + k},
                    {"name", "read"},
                    {"arguments", json::object{{"path", "src/f" + k + ".cpp"}}}}};
            add(test::clearing::assistant(std::move(content)));
            ids.push_back(add(result("c" + k, 4000)));
        }
        return ids;
    }

    // The host appends the recorded reply the way the agent server does: converted with the
    // reply's usage and input_transformations.
    std::string append_reply(const json::object& reply)
    {
        providers::wire_input_options opt;
        opt.usage = reply.at("usage");
        opt.stop_reason = std::string(reply.at("stop_reason").as_string());
        opt.provider = "anthropic";
        opt.model = "claude-sonnet-4-5";
        opt.input_transformations = reply.at("input_transformations");
        providers::diagnostics diag;
        auto messages = providers::from_wire_messages(
            providers::input_format::anthropic,
            json::array{json::object{{"role", "assistant"}, {"content", reply.at("content")}}},
            opt,
            diag
        );
        EXPECT_TRUE(messages) << diag.message;
        if (!messages)
            return {};
        std::string id;
        bool done = false;
        session_->async_append_messages(
            std::move(*messages),
            [&](error_code ec, runtime::append_batch_result r) {
                EXPECT_FALSE(ec) << r.reason;
                if (!r.ids.empty())
                    id = r.ids.back();
                done = true;
            }
        );
        test::run_until(ioc_, [&] { return done; });
        return id;
    }

    std::pair<error_code, runtime::compaction_outcome> turn_end()
    {
        std::pair<error_code, runtime::compaction_outcome> out;
        bool done = false;
        session_->async_on_turn_end([&](error_code ec, runtime::compaction_outcome o) {
            out = {ec, std::move(o)};
            done = true;
        });
        test::run_until(ioc_, [&] { return done; });
        return out;
    }

    std::size_t edit_lines() const
    {
        const auto text = test::read_text(path_);
        std::size_t n = 0;
        for (auto p = text.find("\"type\":\"context_edit\""); p != std::string::npos;
             p = text.find("\"type\":\"context_edit\"", p + 1))
            ++n;
        return n;
    }

    boost::asio::io_context ioc_;
    fs::path path_;
    runtime::session_config config_;
    std::shared_ptr<runtime::session> session_;
    std::vector<runtime::context_cleared_event> cleared_;
    std::vector<runtime::clearing_deferred_event> deferred_;
    std::vector<runtime::reasoning_transformed_event> transformed_;
};

}  // namespace

TEST_F(reasoning_binding_test, a_recorded_reply_is_kept_as_evidence_reported_and_the_costly_clearing_waits)
{
    open();
    rounds(5, 12000);  // ~3,000 tokens of reasoning per call: four calls after the first result
    const auto id = append_reply(json::parse(recorded_reply).as_object());
    ASSERT_FALSE(id.empty());

    // The evidence: the entry's usage, in the file.
    const auto text = test::read_text(path_);
    const auto line_at = text.find("\"id\":\"" + id + "\"");
    ASSERT_NE(line_at, std::string::npos);
    const auto line = json::parse(
        text.substr(text.rfind('\n', line_at) + 1, text.find('\n', line_at) - text.rfind('\n', line_at) - 1)
    );
    EXPECT_EQ(
        line.at("message").at("usage").at("inputTransformations"),
        json::parse(R"({"removed":1,"allowed":1,"items":[
            {"action":"removed","reason":"prefix_binding_mismatch","path":"messages.4.content.0"},
            {"action":"allowed","reason":"prefix_binding_mismatch","path":"messages.6.content.0"}]})")
    );
    EXPECT_EQ(line.at("message").at("usage").at("input"), 25000);

    // The event.
    ASSERT_EQ(transformed_.size(), 1u);
    EXPECT_EQ(transformed_[0].entry_id, id);
    EXPECT_EQ(transformed_[0].removed, 1);
    EXPECT_EQ(transformed_[0].allowed, 1);
    EXPECT_EQ(
        transformed_[0].reasons,
        (std::vector<std::string>{"prefix_binding_mismatch", "prefix_binding_mismatch"})
    );

    // The clearing decision: three results (~11,900 tokens) would cost the reasoning of the four
    // later calls and the reply (4 x 3,000 + 5 tokens): it waits for the next compaction.
    const auto [ec, outcome] = turn_end();
    EXPECT_FALSE(ec);
    EXPECT_FALSE(outcome.compacted);
    EXPECT_TRUE(cleared_.empty());
    ASSERT_EQ(deferred_.size(), 1u);
    EXPECT_EQ(deferred_[0].results, 3);
    EXPECT_EQ(deferred_[0].reasoning_blocks, 5);
    EXPECT_EQ(deferred_[0].reasoning_tokens, 4 * 3000 + 5);
    EXPECT_LT(deferred_[0].tokens, deferred_[0].reasoning_tokens);
    EXPECT_EQ(edit_lines(), 0u);
}

TEST_F(reasoning_binding_test, a_clearing_that_frees_more_than_the_reasoning_it_drops_goes_ahead)
{
    open();
    rounds(5, 400);  // ~100 tokens of reasoning per call
    append_reply(json::parse(recorded_reply).as_object());
    const auto [ec, outcome] = turn_end();
    EXPECT_FALSE(ec);
    EXPECT_TRUE(deferred_.empty());
    ASSERT_EQ(cleared_.size(), 1u);
    EXPECT_EQ(cleared_[0].results, 3);
    EXPECT_EQ(edit_lines(), 3u);
}

TEST_F(reasoning_binding_test, a_model_that_does_not_bind_reasoning_clears_as_before)
{
    config_.model = {"vllm", "qwen3", 100000, 8000};
    open();
    rounds(5, 12000);
    add(test::clearing::assistant(json::array{json::object{{"type", "text"}, {"text", "done"}}}, 25000));
    turn_end();
    EXPECT_TRUE(deferred_.empty());
    ASSERT_EQ(cleared_.size(), 1u);
}

TEST_F(reasoning_binding_test, wire_views_after_a_clearing_replay_no_reasoning_a_binding_check_could_refuse)
{
    open();
    rounds(5, 400);
    append_reply(json::parse(recorded_reply).as_object());
    turn_end();
    ASSERT_EQ(cleared_.size(), 1u);
    const auto context = session_->context();
    bool has_thinking = false;
    for (const auto& m : context)
        for (const auto& b : m.msg->content.blocks)
            has_thinking = has_thinking || std::holds_alternative<compaction::thinking_block>(b);
    ASSERT_TRUE(has_thinking);  // the session keeps the reasoning ...
    // ... and no view sends it back: the edited prefix cannot be followed by a bound block.
    const auto anthropic =
        json::serialize(providers::to_wire_messages(providers::wire_format::anthropic, context));
    EXPECT_EQ(anthropic.find("\"thinking\""), std::string::npos);
    EXPECT_EQ(anthropic.find("redacted_thinking"), std::string::npos);
    const auto responses = json::serialize(providers::to_responses_input(context));
    EXPECT_EQ(responses.find("\"reasoning\""), std::string::npos);
    EXPECT_NE(anthropic.find("[Tool result cleared"), std::string::npos);
}
