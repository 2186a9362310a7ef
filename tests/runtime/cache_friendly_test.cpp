// Cache-friendly summary requests against a loopback fake with the cost model's prompt cache:
// the share read from the cache, the request shape, every fallback, and the standalone cases.
#include <agentctx/compaction/unresolved_calls.hpp>
#include <agentctx/providers/chat_messages.hpp>
#include <agentctx/providers/http_summarizer.hpp>
#include <agentctx/runtime/session.hpp>

#include "fake_provider_server.hpp"
#include "long_session.hpp"
#include "open_session.hpp"
#include "prompt_cache_model.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>

using namespace agentctx;
using namespace agentctx::runtime;
namespace asio = boost::asio;
namespace json = boost::json;
namespace fs = std::filesystem;
using boost::system::error_code;
using providers::wire_format;

namespace {

const std::string checkpoint = "## Goal\nShip the parser.\n\n## Next Steps\n1. Benchmark it.";

// How the fake answers the next summary request.
enum class answer
{
    ok,
    tool_call,
    length,
    empty,
};

class cache_friendly_test : public ::testing::Test
{
protected:
    void SetUp() override
    {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        dir_ = fs::temp_directory_path() /
               ("agentctx-cachefriendly-" + std::to_string(::getpid()) + "-" + info->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
        path_ = dir_ / "s.jsonl";
        for (const char* suffix : {"/v1/messages", "/chat/completions"})
        {
            const bool anthropic = std::string_view(suffix) == "/v1/messages";
            server_.route(suffix, [this, anthropic](const test::recorded_request& r) {
                const auto body = json::parse(r.body).as_object();
                const double t = now_.load();
                const auto billed = anthropic ? cache_.anthropic(body, t) : cache_.openai(body, t);
                answer a = answer::ok;
                {
                    std::lock_guard lock(mu_);
                    billed_.push_back(billed);
                    if (!answers_.empty())
                    {
                        a = answers_.front();
                        answers_.pop_front();
                    }
                }
                test::scripted_response out;
                const std::string text = a == answer::empty ? std::string() : checkpoint;
                if (anthropic)
                    out.body = test::prompt_cache_model::anthropic_reply(
                        billed,
                        text,
                        a == answer::length ? "max_tokens"
                                            : (a == answer::tool_call ? "tool_use" : "end_turn"),
                        a == answer::tool_call
                    );
                else
                    out.body = test::prompt_cache_model::openai_reply(
                        billed, text, a == answer::length ? "length" : "stop"
                    );
                return out;
            });
        }
    }
    void TearDown() override { fs::remove_all(dir_); }

    void write_session(std::size_t turns, std::size_t pad)
    {
        std::ofstream(path_, std::ios::binary) << test::long_session(turns, pad);
    }

    providers::provider_config provider(wire_format f)
    {
        providers::provider_config c;
        c.format = f;
        c.name = f == wire_format::openai ? "openai" : "anthropic";
        c.base_url = server_.base_url() + (f == wire_format::openai ? "/v1" : "");
        c.model = "loop-model";
        c.api_key = "sk-test";
        c.stream = false;
        c.max_retries = 0;
        return c;
    }

    session_config config(wire_format f, std::int64_t window = 200000)
    {
        session_config c;
        c.settings.keep_recent_tokens = 3000;
        c.model = {f == wire_format::openai ? "openai" : "anthropic", "loop-model", window, 0};
        c.summarizer = std::make_shared<providers::http_summarizer>(ioc_.get_executor(), provider(f));
        return c;
    }

    std::shared_ptr<session> open(session_config c)
    {
        auto s = test::open_session(ioc_.get_executor(), path_, std::move(c));
        if (s)
            s->on_event([this](const session_event& e) {
                if (const auto* f = std::get_if<compaction_finished_event>(&e))
                    finished_.push_back(f->evidence);
            });
        return s;
    }

    // The conversation's last request: the context before its last message (the reply it got),
    // with a breakpoint on its last block, as a host caching its prompt sends it.
    test::prompt_cache_model::billed last_conversation_request(const session& s, double t)
    {
        const auto context = compaction::with_unknown_outcomes(s.current()->messages.to_vector());
        auto messages = providers::to_wire_messages(
            wire_format::anthropic,
            std::span(context).first(context.size() - 1),
            nullptr,
            providers::summary_framing_for(compaction::compat_mode::agentctx)
        );
        auto& last = messages.back().as_object()["content"].as_array();
        last.back().as_object()["cache_control"] = json::object{{"type", "ephemeral"}};
        return cache_.anthropic(
            json::object{{"model", "loop-model"}, {"max_tokens", 1000}, {"messages", std::move(messages)}}, t
        );
    }

    std::pair<error_code, compaction_outcome> compact(session& s)
    {
        bool done = false;
        std::pair<error_code, compaction_outcome> r;
        s.async_compact(std::nullopt, [&](error_code ec, compaction_outcome o) {
            done = true;
            r = {ec, std::move(o)};
        });
        ioc_.restart();
        const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (!done && std::chrono::steady_clock::now() < limit)
            ioc_.run_one_for(std::chrono::milliseconds(20));
        EXPECT_TRUE(done) << "timed out";
        return r;
    }

    // Closes and releases the session, so its file lock is free for the next open.
    void close(std::shared_ptr<session>& s)
    {
        s->close();
        s.reset();
        ioc_.restart();
        ioc_.poll();
    }

    // One compaction whose cache-friendly reply is `a`: one standalone request replaces it and commits.
    void expect_one_fallback(answer a, const std::string& evidence)
    {
        write_session(20, 3000);
        script({a});
        auto s = open(config(wire_format::anthropic));
        ASSERT_TRUE(s);
        auto [ec, out] = compact(*s);
        ASSERT_FALSE(ec) << out.message;
        ASSERT_TRUE(out.compacted);
        const auto bodies = summary_bodies();
        ASSERT_EQ(bodies.size(), 2u);
        EXPECT_TRUE(cache_friendly(bodies[0]));
        EXPECT_FALSE(cache_friendly(bodies[1]));
        ASSERT_EQ(finished_.size(), 1u);
        EXPECT_EQ(finished_[0].request, evidence);
    }

    void script(std::initializer_list<answer> a)
    {
        std::lock_guard lock(mu_);
        answers_.assign(a.begin(), a.end());
    }

    std::vector<json::object> summary_bodies() const
    {
        std::vector<json::object> out;
        for (const auto& r : server_.requests())
            out.push_back(json::parse(r.body).as_object());
        return out;
    }

    static bool cache_friendly(const json::object& body) { return body.at("messages").as_array().size() > 2; }

    asio::io_context ioc_;
    test::fake_provider_server server_;
    test::prompt_cache_model cache_;
    std::atomic<double> now_{0};
    std::mutex mu_;
    std::deque<answer> answers_;
    std::vector<test::prompt_cache_model::billed> billed_;
    fs::path dir_, path_;
    std::vector<compaction_evidence> finished_;
};

}  // namespace

TEST_F(cache_friendly_test, a_150k_token_conversation_is_summarized_with_over_90_percent_read_from_the_cache)
{
    write_session(85, 3000);  // ~150k tokens at chars/4
    auto s = open(config(wire_format::anthropic));
    ASSERT_TRUE(s);
    const auto before = last_conversation_request(*s, 0);
    const auto context = compaction::with_unknown_outcomes(s->current()->messages.to_vector());
    EXPECT_GT(before.written, 140000);
    EXPECT_EQ(before.read, 0);
    now_ = 40;  // the compaction starts 40 s after the conversation's last request
    auto [ec, out] = compact(*s);
    ASSERT_FALSE(ec) << ec.message() << " " << out.message;
    ASSERT_TRUE(out.compacted);

    // The cut splits a turn: the history and the turn prefix, each the conversation plus its instructions.
    ASSERT_EQ(billed_.size(), 2u);
    test::prompt_cache_model::billed sum;
    EXPECT_EQ(billed_[0].read, before.written);                        // the whole previous request is read
    EXPECT_EQ(billed_[1].read, billed_[0].read + billed_[0].written);  // and what the first wrote
    for (const auto& b : billed_)
    {
        EXPECT_GE(static_cast<double>(b.read) / static_cast<double>(b.input), 0.9);
        sum.input += b.input;
        sum.read += b.read;
        sum.written += b.written;
    }
    EXPECT_GE(static_cast<double>(sum.read) / static_cast<double>(sum.input), 0.9);
    RecordProperty("input", std::to_string(sum.input));
    RecordProperty("read", std::to_string(sum.read));
    RecordProperty("written", std::to_string(sum.written));
    ASSERT_EQ(finished_.size(), 1u);
    const auto& ev = finished_[0];
    EXPECT_EQ(ev.request, "cache-friendly");
    EXPECT_EQ(ev.method, "single");
    EXPECT_EQ(ev.calls, 2);
    // The provider's reported cache buckets reach the evidence unchanged.
    EXPECT_EQ(ev.usage.cache_read, sum.read);
    EXPECT_EQ(ev.usage.cache_write, sum.written);
    EXPECT_EQ(ev.usage.input, sum.uncached());
    EXPECT_EQ(ev.usage.output, 600);
    EXPECT_EQ(billed_[1].written, 0);

    // The request: the conversation with one breakpoint on its last block, then the instructions.
    const auto body = summary_bodies().at(0);
    EXPECT_FALSE(body.contains("system"));  // the session has no system prompt
    const auto& messages = body.at("messages").as_array();
    EXPECT_EQ(messages.size(), providers::to_wire_messages(wire_format::anthropic, context).size() + 1);
    const auto& last_conversation = messages[messages.size() - 2].as_object().at("content").as_array();
    EXPECT_TRUE(last_conversation.back().as_object().contains("cache_control"));
    const std::string instructions(
        messages.back().as_object().at("content").as_array()[0].as_object().at("text").as_string()
    );
    EXPECT_NE(instructions.find("The part to checkpoint is messages 1 to "), std::string::npos);
    EXPECT_NE(instructions.find("## Critical Context"), std::string::npos);  // the same template
    const auto prefix_body = summary_bodies().at(1);
    const auto& prefix_messages = prefix_body.at("messages").as_array();
    const std::string prefix_instructions(
        prefix_messages.back().as_object().at("content").as_array()[0].as_object().at("text").as_string()
    );
    EXPECT_NE(prefix_instructions.find("## Original Request"), std::string::npos);  // the split-turn template
    EXPECT_EQ(instructions.find("<conversation>"), std::string::npos);
}

TEST_F(cache_friendly_test, the_instructions_name_the_first_kept_message)
{
    write_session(20, 3000);
    auto s = open(config(wire_format::anthropic));
    ASSERT_TRUE(s);
    const auto context = compaction::with_unknown_outcomes(s->current()->messages.to_vector());
    auto [ec, out] = compact(*s);
    ASSERT_FALSE(ec) << out.message;
    std::size_t kept_at = 0;
    while (kept_at < context.size() && context[kept_at].entry_id != out.result->first_kept_entry_id)
        ++kept_at;
    ASSERT_LT(kept_at, context.size());
    const auto kept_position =
        providers::to_wire_messages(wire_format::anthropic, std::span(context).first(kept_at)).size() + 1;
    const auto body = summary_bodies().at(0);
    const auto& messages = body.at("messages").as_array();
    const std::string instructions(
        messages.back().as_object().at("content").as_array()[0].as_object().at("text").as_string()
    );
    EXPECT_NE(
        instructions.find(
            "messages 1 to " + std::to_string(kept_position - 1) +
            " of the conversation above. Messages from " + std::to_string(kept_position) +
            " on (the first begins \u201C" + compaction::message_quote(*context[kept_at].msg) + "\u201D)"
        ),
        std::string::npos
    ) << instructions.substr(0, 800);
    // That message of the request is the first kept one.
    const auto& kept_block = messages[kept_position - 1].as_object().at("content").as_array()[0].as_object();
    EXPECT_EQ(kept_block.at("text").as_string(), compaction::content_text(context[kept_at].msg->content));
}

TEST_F(cache_friendly_test, a_tool_call_reply_falls_back_to_one_standalone_request)
{
    expect_one_fallback(answer::tool_call, "fallback: summary_tool_call");
    if (HasFatalFailure())
        return;
    EXPECT_EQ(summary_bodies()[1].at("system").as_string(), compaction::summarization_system_prompt);
    EXPECT_EQ(finished_[0].calls, 2);
    EXPECT_EQ(finished_[0].usage.output, 600);  // both calls are billed in the evidence
}

TEST_F(cache_friendly_test, a_reply_cut_at_length_falls_back)
{
    expect_one_fallback(answer::length, "fallback: summary_truncated");
}

TEST_F(cache_friendly_test, an_invalid_reply_falls_back)
{
    expect_one_fallback(answer::empty, "fallback: summary_empty");
}

TEST_F(cache_friendly_test, a_refused_fallback_fails_the_compaction_and_writes_nothing)
{
    write_session(20, 3000);
    script({answer::tool_call, answer::tool_call});
    auto s = open(config(wire_format::anthropic));
    ASSERT_TRUE(s);
    const auto before = test::read_text(path_);
    auto [ec, out] = compact(*s);
    EXPECT_EQ(ec, make_error_code(compaction::errc::summary_tool_call));
    EXPECT_EQ(summary_bodies().size(), 2u);  // one fallback, never more
    EXPECT_EQ(test::read_text(path_), before);
    ASSERT_EQ(finished_.size(), 1u);
    EXPECT_EQ(finished_[0].request, "fallback: summary_tool_call");
}

TEST_F(cache_friendly_test, a_conversation_that_does_not_fit_goes_standalone)
{
    write_session(20, 3000);  // ~35k tokens: the conversation does not fit a 36k window with output room
    auto s = open(config(wire_format::anthropic, 36000));
    ASSERT_TRUE(s);
    auto [ec, out] = compact(*s);
    ASSERT_FALSE(ec) << out.message;
    ASSERT_FALSE(summary_bodies().empty());
    for (const auto& b : summary_bodies())
        EXPECT_FALSE(cache_friendly(b));
    ASSERT_EQ(finished_.size(), 1u);
    EXPECT_EQ(finished_[0].request, "standalone: the conversation and instructions do not fit the window");
}

TEST_F(cache_friendly_test, the_setting_and_pi_mode_keep_standalone_requests)
{
    write_session(20, 3000);
    auto c = config(wire_format::anthropic);
    c.settings.summary_request = compaction::summary_request_mode::standalone;
    auto s = open(std::move(c));
    ASSERT_TRUE(s);
    auto [ec, out] = compact(*s);
    ASSERT_FALSE(ec) << out.message;
    ASSERT_EQ(summary_bodies().size(), 1u);
    EXPECT_FALSE(cache_friendly(summary_bodies()[0]));
    ASSERT_EQ(finished_.size(), 1u);
    EXPECT_EQ(finished_[0].request, "standalone");
    close(s);

    write_session(20, 3000);
    auto p = config(wire_format::anthropic);
    p.compat = compaction::compat_mode::pi;
    auto pi = open(std::move(p));
    ASSERT_TRUE(pi);
    auto [pec, pout] = compact(*pi);
    ASSERT_FALSE(pec) << pout.message;
    ASSERT_EQ(summary_bodies().size(), 2u);
    EXPECT_FALSE(cache_friendly(summary_bodies()[1]));
    ASSERT_EQ(finished_.size(), 2u);
    EXPECT_FALSE(finished_[1].request.has_value());  // the evidence is as before in --compat pi
}

TEST_F(cache_friendly_test, the_default_is_standalone_for_another_model_or_a_local_server)
{
    write_session(20, 3000);
    auto c = config(wire_format::anthropic);
    c.model.model_id = "another-model";  // the conversation's cache belongs to another model
    auto s = open(std::move(c));
    ASSERT_TRUE(s);
    auto [ec, out] = compact(*s);
    ASSERT_FALSE(ec) << out.message;
    EXPECT_FALSE(cache_friendly(summary_bodies().at(0)));
    EXPECT_EQ(finished_.at(0).request, "standalone");
    close(s);

    write_session(20, 3000);
    auto local = config(wire_format::openai);
    auto p = provider(wire_format::openai);
    p.name = "vllm";
    local.model.provider = "vllm";
    local.summarizer = std::make_shared<providers::http_summarizer>(ioc_.get_executor(), p);
    auto l = open(std::move(local));
    ASSERT_TRUE(l);
    auto [lec, lout] = compact(*l);
    ASSERT_FALSE(lec) << lout.message;
    EXPECT_FALSE(cache_friendly(summary_bodies().at(1)));
    EXPECT_EQ(finished_.at(1).request, "standalone");

    // Asked for explicitly, a local server gets it too.
    write_session(20, 3000);
    close(l);
    auto forced = config(wire_format::openai);
    forced.summarizer = std::make_shared<providers::http_summarizer>(ioc_.get_executor(), p);
    forced.settings.summary_request = compaction::summary_request_mode::cache_friendly;
    auto f = open(std::move(forced));
    ASSERT_TRUE(f);
    auto [fec, fout] = compact(*f);
    ASSERT_FALSE(fec) << fout.message;
    EXPECT_TRUE(cache_friendly(summary_bodies().at(2)));
    EXPECT_EQ(finished_.at(2).request, "cache-friendly");
}

TEST_F(cache_friendly_test, openai_requests_carry_the_hosts_tools_and_prompt_cache_key)
{
    write_session(20, 3000);
    auto c = config(wire_format::openai);
    const json::array tools{json::object{
        {"type", "function"},
        {"function", json::object{{"name", "read"}, {"parameters", json::object{{"type", "object"}}}}}}};
    c.conversation = [tools] {
        conversation_request r;
        r.system = "You are a coding agent.";
        r.tools = tools;
        r.prompt_cache_key = "conv-42";
        return std::optional(r);
    };
    auto s = open(std::move(c));
    ASSERT_TRUE(s);
    // The conversation's last request, as the host sent it (same key, system, tools).
    const auto context = compaction::with_unknown_outcomes(s->current()->messages.to_vector());
    json::array messages{json::object{{"role", "system"}, {"content", "You are a coding agent."}}};
    for (auto& m :
         providers::to_wire_messages(wire_format::openai, std::span(context).first(context.size() - 1)))
        messages.push_back(m);
    const auto before = cache_.openai(
        json::object{
            {"model", "loop-model"},
            {"messages", messages},
            {"tools", tools},
            {"prompt_cache_key", "conv-42"}},
        0
    );
    now_ = 10;
    auto [ec, out] = compact(*s);
    ASSERT_FALSE(ec) << out.message;
    const auto body = summary_bodies().at(0);
    EXPECT_EQ(body.at("prompt_cache_key").as_string(), "conv-42");
    EXPECT_EQ(body.at("tools").as_array(), tools);
    EXPECT_EQ(
        body.at("messages").as_array()[0].as_object().at("content").as_string(), "You are a coding agent."
    );
    ASSERT_EQ(billed_.size(), 1u);
    EXPECT_EQ(billed_[0].read, before.input);  // everything the conversation sent is read
    ASSERT_EQ(finished_.size(), 1u);
    EXPECT_EQ(finished_[0].usage.cache_read, before.input);
    EXPECT_EQ(finished_[0].usage.input, billed_[0].input - before.input);
}

TEST_F(cache_friendly_test, the_recall_follow_up_reads_the_conversation_from_the_cache)
{
    // A rule in the first turn that the fake's checkpoint leaves out: one follow-up, in the same
    // conversation, then the rule carried verbatim.
    test::session_text st;
    st.user("u0", "Never push to main.").assistant("a0", "Understood.");
    for (int i = 1; i <= 20; ++i)
    {
        const std::string n = std::to_string(i);
        st.user("u" + n, "MARK " + std::string(3000, 'q'))
            .assistant("a" + n, "answer " + std::string(3000, 'a'), i == 20 ? 5000 : 0);
    }
    std::ofstream(path_, std::ios::binary) << st.text;
    auto s = open(config(wire_format::anthropic));
    ASSERT_TRUE(s);
    now_ = 40;
    auto [ec, out] = compact(*s);
    ASSERT_FALSE(ec) << out.message;
    ASSERT_TRUE(out.result);
    const auto bodies = summary_bodies();
    const auto instructions = [](const json::object& body) {
        const auto& last = body.at("messages").as_array().back().as_object().at("content");
        return std::string(
            last.is_string() ? last.as_string() : last.as_array()[0].as_object().at("text").as_string()
        );
    };
    std::optional<std::size_t> history, follow_up;
    for (std::size_t i = 0; i < bodies.size(); ++i)
        if (instructions(bodies[i]).find("The part to checkpoint is messages 1 to ") != std::string::npos)
            history = i;
        else if (instructions(bodies[i]).starts_with("Your checkpoint above leaves out"))
            follow_up = i;
    ASSERT_TRUE(history && follow_up);
    EXPECT_GT(*follow_up, *history);
    // The follow-up is the history request plus its instructions and the draft: it reads all that
    // the history request wrote.
    const auto& h = bodies[*history].at("messages").as_array();
    const auto& f = bodies[*follow_up].at("messages").as_array();
    ASSERT_EQ(f.size(), h.size() + 2);
    EXPECT_EQ(f[h.size() - 1].as_object().at("role"), "user");
    EXPECT_EQ(f[h.size()].as_object().at("role"), "assistant");
    EXPECT_EQ(billed_[*follow_up].read, billed_[*history].read + billed_[*history].written);
    EXPECT_GE(
        static_cast<double>(billed_[*follow_up].read) / static_cast<double>(billed_[*follow_up].input), 0.9
    );
    for (const auto& [name, at] : {std::pair{"history", *history}, std::pair{"follow_up", *follow_up}})
    {
        RecordProperty(std::string(name) + "_input", std::to_string(billed_[at].input));
        RecordProperty(std::string(name) + "_read", std::to_string(billed_[at].read));
        RecordProperty(std::string(name) + "_written", std::to_string(billed_[at].written));
    }
    EXPECT_NE(out.result->summary.find("## User rules (verbatim)\n- Never push to main."), std::string::npos);
    ASSERT_EQ(finished_.size(), 1u);
    ASSERT_TRUE(finished_[0].recall);
    EXPECT_EQ(finished_[0].recall->repaired, 0u);
    EXPECT_EQ(finished_[0].recall->verbatim, 1u);
    EXPECT_EQ(finished_[0].calls, static_cast<int>(bodies.size()));
}
