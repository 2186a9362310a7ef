// Native compaction and exact counting in the session, against the loopback fakes: commit, replay,
// fallback with native_selection, the oversized preflight, and counted portable bounds.
#include <agentctx/compaction/llm_convert.hpp>
#include <agentctx/compaction/session_log.hpp>
#include <agentctx/compaction/working_budget.hpp>
#include <agentctx/providers/chat_messages.hpp>
#include <agentctx/providers/http_summarizer.hpp>
#include <agentctx/runtime/error.hpp>
#include <agentctx/runtime/jsonl_store.hpp>
#include <agentctx/runtime/session.hpp>

#include "fake_provider_server.hpp"
#include "long_session.hpp"
#include "open_session.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <future>
#include <fstream>
#include <sstream>

using namespace agentctx;
using namespace agentctx::runtime;
namespace asio = boost::asio;
namespace json = boost::json;
namespace fs = std::filesystem;
using boost::system::error_code;
using providers::wire_format;

namespace {

json::object last_compaction(const std::string& text)
{
    json::object found;
    for (auto& o : test::json_lines(text))
        if (o.at("type") == "compaction")
            found = std::move(o);
    return found;
}

test::fake_provider_server::responder fixed(std::string body, int status = 200)
{
    return [body, status](const test::recorded_request&) {
        test::scripted_response r;
        r.status = status;
        r.body = body;
        return r;
    };
}

class native_session_test : public ::testing::Test
{
protected:
    void SetUp() override
    {
        write_session(40, 3000);
        server_.check_anthropic_requests(true
        );  // tool_use blocks without tools are refused, as Anthropic does
    }
    void TearDown() override { fs::remove_all(dir_); }

    // `turns` numbered turns of ~3.3 * pad characters: 40 x 3000 is ~100k estimated tokens.
    void write_session(std::size_t turns, std::size_t pad, const std::string& extra_user_text = {})
    {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        dir_ = fs::temp_directory_path() /
               ("agentctx-native-" + std::to_string(::getpid()) + "-" + info->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
        path_ = dir_ / "s.jsonl";
        std::string text = test::long_session(turns, pad);
        if (!extra_user_text.empty())
        {
            // Put the text into the first user message (a secret in the summarized range).
            const auto at = text.find("MARK-000 ");
            text.insert(at + 9, extra_user_text + " ");
        }
        std::ofstream(path_, std::ios::binary) << text;
    }

    providers::provider_config provider(
        wire_format f, providers::native_mode native = providers::native_mode::on, bool counting = false
    )
    {
        providers::provider_config c;
        c.format = f;
        c.name = f == wire_format::openai ? "openai" : "anthropic";
        c.base_url = server_.base_url() + (f == wire_format::openai ? "/v1" : "");
        c.model = "claude-loop";  // the serving model: native compaction runs on it only
        c.api_key = "sk-test";
        c.stream = false;
        c.max_retries = 0;
        c.native = native;
        c.exact_counting = counting;
        return c;
    }

    session_config config(const providers::provider_config& p, std::int64_t window = 200000)
    {
        session_config c;
        c.settings.keep_recent_tokens = 3000;
        c.settings.summary_request =
            compaction::summary_request_mode::standalone;  // portable requests as before
        c.model = {p.name, p.model, window, 0};
        c.summarizer = std::make_shared<providers::http_summarizer>(ioc_.get_executor(), p);
        c.conversation = [] {
            conversation_request r;
            r.tools = loop_tools();
            return std::optional(r);
        };
        return c;
    }

    // The loop's tool definitions (the session's tool calls are to `read`).
    static json::array loop_tools()
    {
        return json::parse(R"([{"name":"read","description":"Read a file",
            "input_schema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}])")
            .as_array();
    }

    std::shared_ptr<session> open(session_config c)
    {
        auto s = test::open_session(ioc_.get_executor(), path_, std::move(c));
        if (!s)
            return nullptr;
        s->on_event([this](const session_event& e) {
            if (const auto* f = std::get_if<compaction_finished_event>(&e))
                finished_.push_back(f->evidence);
        });
        return s;
    }

    template <class Pred>
    void run_until(Pred done)
    {
        ioc_.restart();
        const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (!done() && std::chrono::steady_clock::now() < limit)
            ioc_.run_one_for(std::chrono::milliseconds(20));
        ASSERT_TRUE(done()) << "timed out";
    }

    std::pair<error_code, compaction_outcome> compact(session& s)
    {
        bool done = false;
        std::pair<error_code, compaction_outcome> r;
        s.async_compact(std::nullopt, [&](error_code ec, compaction_outcome o) {
            done = true;
            r = {ec, std::move(o)};
        });
        run_until([&] { return done; });
        return r;
    }

    // A session whose OpenAI summarizer uses inline compaction; `note` is the portable note the
    // chat route answers.
    std::shared_ptr<session> open_inline(const std::string& note)
    {
        server_.route("/v1/chat/completions", fixed(test::openai_body(note)));
        auto p = provider(wire_format::openai);
        p.openai_form = providers::openai_native_form::inline_request;
        return open(config(p));
    }

    // Adopts a compaction item (with the covered leaf when given) and waits for the outcome.
    std::pair<error_code, compaction_outcome> adopt(
        session& s,
        json::object item,
        const std::string& first_kept,
        std::optional<std::string> covered = std::nullopt
    )
    {
        bool done = false;
        std::pair<error_code, compaction_outcome> r;
        const auto finish = [&](error_code ec, compaction_outcome o) {
            done = true;
            r = {ec, std::move(o)};
        };
        s.async_adopt_compaction(std::move(item), first_kept, std::move(covered), finish);
        run_until([&] { return done; });
        return r;
    }

    // Appends one message entry and returns its id.
    std::string append_message(session& s, json::object m)
    {
        std::string id;
        bool done = false;
        s.async_append({{"type", "message"}, {"message", std::move(m)}}, [&](error_code ec, std::string i) {
            EXPECT_FALSE(ec) << ec.message();
            id = std::move(i);
            done = true;
        });
        run_until([&] { return done; });
        return id;
    }

    void append_turn(session& s, const std::string& text)
    {
        for (const auto& m :
             {json::object{{"role", "user"}, {"content", text}, {"timestamp", 1}},
              json::object{
                  {"role", "assistant"},
                  {"content", json::array{json::object{{"type", "text"}, {"text", "ok " + text}}}},
                  {"api", "anthropic-messages"},
                  {"provider", "anthropic"},
                  {"model", "claude-loop"},
                  {"stopReason", "stop"},
                  {"timestamp", 2}}})
        {
            bool done = false;
            s.async_append({{"type", "message"}, {"message", m}}, [&](error_code ec, std::string) {
                EXPECT_FALSE(ec) << ec.message();
                done = true;
            });
            run_until([&] { return done; });
        }
    }

    // Closes and releases the session, so its file lock is free for the next open.
    void close(std::shared_ptr<session>& s)
    {
        s->close();
        s.reset();
        ioc_.restart();
        ioc_.poll();
    }

    std::vector<test::recorded_request> requests_to(const std::string& suffix) const
    {
        std::vector<test::recorded_request> out;
        for (const auto& r : server_.requests())
            if (r.target.ends_with(suffix))
                out.push_back(r);
        return out;
    }

    std::string file() const { return test::read_text(path_); }

    // Summary requests of the history (a split turn's prefix request is `# Conversation`).
    std::size_t history_requests() const
    {
        std::size_t n = 0;
        for (const auto& r : requests_to("/chat/completions"))
            n += r.body.find("<conversation>") != std::string::npos;
        return n;
    }

    asio::io_context ioc_;
    test::fake_provider_server server_;
    fs::path dir_, path_;
    std::vector<compaction_evidence> finished_;
};

}  // namespace

TEST_F(native_session_test, anthropic_native_commits_the_block_and_replays_it_in_the_next_request)
{
    const auto block = test::anthropic_compaction_block("## Goal\nNative note.", "ENC-1");
    server_.route("/v1/messages", fixed(test::anthropic_compaction_body({block})));
    auto s = open(config(provider(wire_format::anthropic)));
    auto [ec, out] = compact(*s);
    ASSERT_FALSE(ec) << ec.message() << " " << out.message;
    ASSERT_TRUE(out.compacted);

    const auto sent = requests_to("/v1/messages");
    ASSERT_EQ(sent.size(), 1u);  // one native request, no portable summary
    const auto body = json::parse(sent[0].body).as_object();
    EXPECT_EQ(body.at("model"), "claude-loop");  // the loop's model, which is the summarizer's
    EXPECT_EQ(body.at("tools"), loop_tools());
    EXPECT_EQ(sent[0].header("anthropic-beta"), "compact-2026-01-12");
    EXPECT_EQ(body.at("context_management").at("edits").at(0).at("type"), "compact_20260112");
    EXPECT_NE(json::serialize(body.at("messages").at(0)).find("MARK-000"), std::string::npos);

    const auto entry = last_compaction(file());
    EXPECT_TRUE(entry.at("summary").as_string().starts_with("## Goal\nNative note."));
    const auto& ours = entry.at("details").at("agentctx").as_object();
    EXPECT_EQ(
        ours.at("native"),
        json::parse(R"({"provider":"anthropic","model":"claude-loop","block":)" + block + "}")
    );
    EXPECT_EQ(ours.at("evidence").at("method"), "native");
    EXPECT_TRUE(ours.at("evidence").at("nativeSelection").as_string().starts_with("native: "))
        << ours.at("evidence");
    EXPECT_EQ(ours.at("evidence").at("usage").at("input"), 61000);  // the compaction pass
    ASSERT_EQ(finished_.size(), 1u);
    EXPECT_EQ(finished_[0].method, "native");

    // The host's next request: the block first, then the kept messages.
    const auto snap = s->current();
    ASSERT_TRUE(snap->native);
    EXPECT_EQ(snap->native->entry_id, entry.at("id").as_string());
    const auto ctx = s->context();
    const auto msgs = providers::to_wire_messages(wire_format::anthropic, ctx, snap->native.get());
    // The cut kept the end of turn 38 (its assistant answer), which joins the block's assistant turn.
    EXPECT_EQ(msgs[0].at("role"), "assistant");
    EXPECT_EQ(msgs[0].at("content").at(0), json::parse(block));
    EXPECT_NE(json::serialize(msgs[0].at("content").at(1)).find("answer 38"), std::string::npos);
    EXPECT_NE(json::serialize(msgs[1]).find("MARK-039"), std::string::npos);
    EXPECT_EQ(json::serialize(msgs).find("compacted into the following summary"), std::string::npos)
        << "the portable summary is not sent";
    EXPECT_NE(
        json::serialize(providers::to_wire_messages(wire_format::anthropic, ctx))
            .find("compacted into the following summary"),
        std::string::npos
    );

    // Resume: the state is revalidated from the file and replays the same way.
    close(s);
    auto again = open(config(provider(wire_format::anthropic)));
    ASSERT_TRUE(again->current()->native);
    EXPECT_EQ(
        providers::to_wire_messages(wire_format::anthropic, again->context(), again->current()->native.get()),
        msgs
    );

    // The next native compaction sends the previous block back first.
    for (int i = 0; i < 30; ++i)
        append_turn(*again, "MORE-" + std::to_string(i) + " " + std::string(8000, 'm'));
    server_.route(
        "/v1/messages",
        fixed(test::anthropic_compaction_body({test::anthropic_compaction_block("## Goal\nSecond.", "ENC-2")})
        )
    );
    auto [ec2, out2] = compact(*again);
    ASSERT_FALSE(ec2) << out2.message;
    const auto second = requests_to("/v1/messages");
    ASSERT_EQ(second.size(), 2u);
    const auto next = json::parse(second[1].body);
    const auto& first_msg = next.at("messages").at(0);
    EXPECT_EQ(first_msg.at("role"), "assistant");
    EXPECT_EQ(first_msg.at("content").at(0), json::parse(block));
    EXPECT_EQ(json::serialize(next).find("compacted into the following summary"), std::string::npos);
}

TEST_F(native_session_test, openai_native_keeps_the_output_and_commits_a_portable_note)
{
    const auto item = test::openai_compaction_item("ENC-OAI");
    const auto compact_body = test::openai_compact_body({"MARK-000 user text"}, {item});
    server_.route("/v1/responses/compact", fixed(compact_body));
    server_.route("/v1/chat/completions", fixed(test::openai_body("## Goal\nPortable note.")));
    auto s = open(config(provider(wire_format::openai)));
    auto [ec, out] = compact(*s);
    ASSERT_FALSE(ec) << out.message;
    ASSERT_EQ(requests_to("/responses/compact").size(), 1u);
    // The cut splits turn 38: the note is a history summary and a turn-prefix summary.
    ASSERT_EQ(requests_to("/chat/completions").size(), 2u);
    const auto input = json::parse(requests_to("/responses/compact")[0].body).at("input").as_array();
    EXPECT_NE(json::serialize(input.at(0)).find("MARK-000"), std::string::npos);

    const auto entry = last_compaction(file());
    EXPECT_TRUE(entry.at("summary").as_string().starts_with("## Goal\nPortable note."));
    const auto& ours = entry.at("details").at("agentctx").as_object();
    EXPECT_EQ(ours.at("native").at("output"), json::parse(compact_body).at("output"));  // unchanged
    EXPECT_EQ(ours.at("evidence").at("method"), "native");
    EXPECT_EQ(ours.at("evidence").at("calls"), 3);
    // Usage: the compact call's (64000 in, 1000 of it cached) and each note request's (100 in, 40 cached).
    EXPECT_EQ(ours.at("evidence").at("usage").at("input"), 63000 + 2 * 60);
    EXPECT_EQ(ours.at("evidence").at("usage").at("cacheRead"), 1000 + 2 * 40);
    EXPECT_EQ(
        entry.at("usage").at("input"), 63000 + 2 * 60
    );  // the entry's own usage includes the compact call

    const auto snap = s->current();
    ASSERT_TRUE(snap->native);
    const auto replay = providers::to_responses_input(s->context(), snap->native.get());
    const auto parsed = json::parse(compact_body);
    const auto& output = parsed.at("output").as_array();
    for (std::size_t i = 0; i < output.size(); ++i)
        EXPECT_EQ(replay.at(i), output[i]);
    EXPECT_EQ(replay.size() > output.size(), true);
    // Chat Completions cannot take the item: the portable note goes there.
    EXPECT_NE(
        json::serialize(providers::to_wire_messages(wire_format::openai, s->context(), snap->native.get()))
            .find("Portable note"),
        std::string::npos
    );

    // The next compaction sends the stored output back first.
    for (int i = 0; i < 30; ++i)
        append_turn(*s, "MORE-" + std::to_string(i) + " " + std::string(8000, 'm'));
    auto [ec2, out2] = compact(*s);
    ASSERT_FALSE(ec2) << out2.message;
    const auto again = requests_to("/responses/compact");
    ASSERT_EQ(again.size(), 2u);
    const auto next_input = json::parse(again[1].body).at("input").as_array();
    for (std::size_t i = 0; i < output.size(); ++i)
        EXPECT_EQ(next_input.at(i), output[i]);
}

TEST_F(native_session_test, an_invalid_or_failed_native_reply_falls_back_to_portable_and_says_why)
{
    struct bad_case
    {
        wire_format format;
        std::string body;
        int status;
        std::string why;
    };
    const std::vector<bad_case> cases{
        {wire_format::anthropic,
         test::anthropic_compaction_body({test::anthropic_compaction_block(std::nullopt, "E")}),
         200,
         "content is null"},
        {wire_format::anthropic,
         test::anthropic_compaction_body({R"({"type":"text","text":"hi"})"}),
         200,
         "0 compaction blocks"},
        {wire_format::anthropic,
         test::anthropic_compaction_body(
             {test::anthropic_compaction_block("a", "E"), test::anthropic_compaction_block("b", "F")}
         ),
         200,
         "2 compaction blocks"},
        {wire_format::openai, test::openai_compact_body({"u"}, {}), 200, "0 compaction items"},
        {wire_format::openai,
         R"({"error":{"type":"invalid_request_error","code":"unsupported"}})",
         400,
         "rejected"},
    };
    for (const auto& c : cases)
    {
        SCOPED_TRACE(c.why);
        write_session(40, 3000);
        test::fake_provider_server server;
        const bool anthropic = c.format == wire_format::anthropic;
        const std::string native_path = anthropic ? "/v1/messages" : "/v1/responses/compact";
        std::size_t native_calls = 0;
        server.route(native_path, [&](const test::recorded_request& r) {
            test::scripted_response rsp;
            // The native request carries the edit; the portable summary request does not.
            if (!anthropic || r.body.find("compact_20260112") != std::string::npos)
            {
                ++native_calls;
                rsp.status = c.status;
                rsp.body = c.body;
            }
            else
                rsp.body = test::anthropic_body("## Goal\nPortable fallback.");
            return rsp;
        });
        server.route("/v1/chat/completions", fixed(test::openai_body("## Goal\nPortable fallback.")));
        server.check_anthropic_requests(true);
        auto p = provider(c.format);
        p.base_url = server.base_url() + (anthropic ? "" : "/v1");
        finished_.clear();
        auto s = open(config(p));
        auto [ec, out] = compact(*s);
        ASSERT_FALSE(ec) << out.message;
        EXPECT_EQ(native_calls, 1u);
        const auto entry = last_compaction(file());
        EXPECT_TRUE(entry.at("summary").as_string().starts_with("## Goal\nPortable fallback."));
        const auto& ours = entry.at("details").at("agentctx").as_object();
        EXPECT_FALSE(ours.contains("native"));
        EXPECT_EQ(ours.at("evidence").at("method"), "single");
        const std::string selection(ours.at("evidence").at("nativeSelection").as_string());
        EXPECT_TRUE(selection.starts_with("portable: native compaction failed")) << selection;
        EXPECT_NE(selection.find(c.why), std::string::npos) << selection;
        EXPECT_FALSE(s->current()->native);
        if (c.why == "content is null")  // the rejected reply's compaction pass is billed too
        {
            const auto calls =
                ours.at("evidence").at("calls").as_int64();  // the native call and the portable ones
            EXPECT_EQ(ours.at("evidence").at("usage").at("input").as_int64(), 61000 + 50 * (calls - 1));
        }
        close(s);
    }
}

TEST_F(native_session_test, an_oversized_window_never_sends_a_native_request)
{
    std::size_t native_calls = 0;
    server_.route("/v1/responses/compact", [&](const test::recorded_request&) {
        ++native_calls;
        test::scripted_response r;
        r.body = test::openai_compact_body({}, {test::openai_compaction_item("E")});
        return r;
    });
    server_.route("/v1/chat/completions", fixed(test::openai_body("## Goal\nRecovered piecewise.")));
    // A 60k window: one request may carry 60000 - 16384 tokens; the window is ~70k.
    auto s = open(config(provider(wire_format::openai), 60000));
    auto [ec, out] = compact(*s);
    ASSERT_FALSE(ec) << out.message;
    EXPECT_EQ(native_calls, 0u);
    const auto entry = last_compaction(file());
    const auto& ev = entry.at("details").at("agentctx").at("evidence").as_object();
    EXPECT_EQ(ev.at("method"), "piecewise");
    const std::string selection(ev.at("nativeSelection").as_string());
    EXPECT_NE(selection.find("native compaction is never split"), std::string::npos) << selection;
    EXPECT_GT(requests_to("/chat/completions").size(), 1u);
}

TEST_F(native_session_test, small_windows_and_windows_with_secrets_stay_portable)
{
    server_.route("/v1/messages", [](const test::recorded_request& r) {
        EXPECT_EQ(r.body.find("compact_20260112"), std::string::npos) << "no native request expected";
        test::scripted_response rsp;
        rsp.body = test::anthropic_body("## Goal\nPortable.");
        return rsp;
    });
    write_session(30, 300);  // ~8k tokens: under Anthropic's 50000 minimum
    {
        auto s = open(config(provider(wire_format::anthropic)));
        auto [ec, out] = compact(*s);
        ASSERT_FALSE(ec) << out.message;
        const std::string selection(last_compaction(file())
                                        .at("details")
                                        .at("agentctx")
                                        .at("evidence")
                                        .at("nativeSelection")
                                        .as_string());
        EXPECT_NE(
            selection.find("under the provider's minimum for native compaction (50000 tokens)"),
            std::string::npos
        ) << selection;
        close(s);
    }
    write_session(40, 3000, "AKIAABCDEFGHIJKLMNOP");
    {
        auto s = open(config(provider(wire_format::anthropic)));
        auto [ec, out] = compact(*s);
        ASSERT_FALSE(ec) << out.message;
        const auto entry = last_compaction(file());
        const std::string selection(
            entry.at("details").at("agentctx").at("evidence").at("nativeSelection").as_string()
        );
        EXPECT_NE(
            selection.find("1 secret(s) that native compaction would send unredacted"), std::string::npos
        ) << selection;
        close(s);
    }
    auto off = provider(wire_format::anthropic, providers::native_mode::off);
    write_session(40, 3000);
    auto s = open(config(off));
    auto [ec, out] = compact(*s);
    ASSERT_FALSE(ec) << out.message;
    const std::string selection(
        last_compaction(file()).at("details").at("agentctx").at("evidence").at("nativeSelection").as_string()
    );
    EXPECT_EQ(selection, "portable: anthropic:claude-loop offers no native compaction");
}

TEST_F(native_session_test, an_exact_count_decides_single_or_measured_pieces)
{
    // ~60 KB of history in a 20k window: over the conservative bound (60% at 3 bytes per token,
    // 36 KB), so the estimate alone goes piecewise.
    write_session(30, 800);
    server_.route("/v1/chat/completions", fixed(test::openai_body("## Goal\nCounted note.")));
    std::int64_t answer = 9000;  // fits: 9000 + 4096..32000 headroom <= 20000 only with a small output cap
    server_.route("/v1/responses/input_tokens", [&](const test::recorded_request&) {
        test::scripted_response r;
        r.body = test::openai_count_body(answer);
        return r;
    });
    auto cfg = [&](bool counting) {
        auto c = config(provider(wire_format::openai, providers::native_mode::off, counting), 20000);
        c.model.max_output_tokens = 4096;
        c.settings.keep_recent_tokens = 1000;
        return c;
    };
    {
        auto s = open(cfg(false));
        auto [ec, out] = compact(*s);
        ASSERT_FALSE(ec) << out.message;
        EXPECT_EQ(finished_.back().method, "piecewise");
        EXPECT_EQ(finished_.back().preflight->method, "estimate");
        close(s);
    }
    write_session(30, 800);
    const auto before = history_requests();
    {
        auto s = open(cfg(true));
        auto [ec, out] = compact(*s);
        ASSERT_FALSE(ec) << out.message;
        EXPECT_EQ(requests_to("/responses/input_tokens").size(), 1u);
        EXPECT_EQ(history_requests() - before, 1u);  // the count says it fits: one history request
        const auto& ev = finished_.back();
        EXPECT_EQ(ev.method, "single");
        ASSERT_TRUE(ev.preflight);
        EXPECT_EQ(ev.preflight->method, "count");
        EXPECT_EQ(ev.preflight->input_tokens, 9000);
        EXPECT_EQ(ev.preflight->fits, true);
        EXPECT_EQ(ev.counting_calls, 1);
        const auto entry = last_compaction(file());
        const auto& json_ev = entry.at("details").at("agentctx").at("evidence");
        EXPECT_EQ(
            json_ev.at("preflight"), json::parse(R"({"method":"count","inputTokens":9000,"fits":true})")
        );
        close(s);
    }
    // A count over the window: pieces measured by the count's bytes per token.
    write_session(30, 800);
    answer = 40000;
    const auto before2 = history_requests();
    {
        auto s = open(cfg(true));
        auto [ec, out] = compact(*s);
        ASSERT_FALSE(ec) << out.message;
        const auto& ev = finished_.back();
        EXPECT_EQ(ev.method, "piecewise");
        EXPECT_EQ(ev.preflight->fits, false);
        EXPECT_EQ(history_requests() - before2, ev.pieces_total);
        EXPECT_GT(ev.pieces_total, 2u);
        close(s);
    }
    // A failing count: the estimate decides, and says so.
    write_session(30, 800);
    test::fake_provider_server broken;
    broken.route("/v1/responses/input_tokens", fixed(R"({"error":{"type":"server_error"}})", 500));
    broken.route("/v1/chat/completions", fixed(test::openai_body("## Goal\nEstimated.")));
    auto p = provider(wire_format::openai, providers::native_mode::off, true);
    p.base_url = broken.base_url() + "/v1";
    auto c = config(p, 20000);
    c.model.max_output_tokens = 4096;
    c.settings.keep_recent_tokens = 1000;
    auto s = open(std::move(c));
    auto [ec, out] = compact(*s);
    ASSERT_FALSE(ec) << out.message;
    const auto& ev = finished_.back();
    EXPECT_EQ(ev.preflight->method, "estimate");
    EXPECT_NE(ev.preflight->note.find("the count failed"), std::string::npos) << ev.preflight->note;
    EXPECT_EQ(ev.method, "piecewise");
}

// ---- The native request is the loop's request.

namespace {

// Native compaction requests carry the edit; portable summary requests to the same path do not.
test::fake_provider_server::responder native_or_portable(
    const std::string& block, const std::string& portable
)
{
    return [block, portable](const test::recorded_request& r) {
        test::scripted_response rsp;
        rsp.body = r.body.find("compact_20260112") != std::string::npos
                       ? test::anthropic_compaction_body({block})
                       : test::anthropic_body(portable);
        return rsp;
    };
}

std::string selection_of(const json::object& entry)
{
    return std::string(entry.at("details").at("agentctx").at("evidence").at("nativeSelection").as_string());
}

}  // namespace

TEST_F(native_session_test, the_native_request_carries_the_loops_tools_tool_choice_and_parameters)
{
    server_.route(
        "/v1/messages",
        native_or_portable(
            test::anthropic_compaction_block("## Goal\nWith tools.", "ENC-T"), "## Goal\nPortable."
        )
    );
    auto c = config(provider(wire_format::anthropic));
    c.conversation = [] {
        conversation_request r;
        r.tools = loop_tools();
        r.tool_choice = json::parse(R"({"type":"auto"})");
        r.parameters = json::parse(R"({"temperature":0.25,"thinking":{"type":"enabled","budget_tokens":8000},
                                       "model":"not-this","max_tokens":7})")
                           .as_object();
        return std::optional(r);
    };
    auto s = open(std::move(c));
    auto [ec, out] = compact(*s);
    ASSERT_FALSE(ec) << out.message;
    const auto sent = requests_to("/v1/messages");
    ASSERT_EQ(sent.size(), 1u);  // accepted: no portable fallback
    EXPECT_EQ(test::anthropic_request_problem(sent[0].body), std::nullopt);
    const auto body = json::parse(sent[0].body).as_object();
    EXPECT_NE(
        json::serialize(body.at("messages")).find(R"("type":"tool_use")"), std::string::npos
    );  // the window's calls
    EXPECT_EQ(body.at("tools"), loop_tools());
    EXPECT_EQ(body.at("tool_choice"), json::parse(R"({"type":"auto"})"));
    EXPECT_EQ(body.at("temperature"), 0.25);
    // A thinking block whose prefix changed is dropped, never a 400 (the binding beta is named).
    EXPECT_EQ(
        body.at("thinking"),
        json::parse(
            R"({"type":"enabled","budget_tokens":8000,"block_binding":{"prefix_mismatch_behavior":"drop_block"}})"
        )
    );
    EXPECT_EQ(sent[0].header("anthropic-beta"), "compact-2026-01-12,thinking-binding-controls-2026-08-01");
    EXPECT_EQ(body.at("model"), "claude-loop");     // the request's own fields are not the parameters'
    EXPECT_EQ(body.at("max_tokens"), 8000 + 4096);  // above the thinking budget
    ASSERT_EQ(finished_.size(), 1u);
    EXPECT_EQ(finished_[0].method, "native");
}

TEST_F(native_session_test, without_the_loops_tools_a_window_with_tool_calls_stays_portable_and_says_why)
{
    server_.route(
        "/v1/messages",
        native_or_portable(test::anthropic_compaction_block("## Goal\nN.", "E"), "## Goal\nPortable.")
    );
    auto c = config(provider(wire_format::anthropic));
    c.conversation = nullptr;  // the host names no tools
    auto s = open(std::move(c));
    auto [ec, out] = compact(*s);
    ASSERT_FALSE(ec) << out.message;
    for (const auto& r : requests_to("/v1/messages"))
        EXPECT_EQ(r.body.find("compact_20260112"), std::string::npos) << "no native request expected";
    EXPECT_EQ(
        selection_of(last_compaction(file())),
        "portable: the eligible window holds tool calls and the session names no tools "
        "(session_config::conversation); Anthropic refuses tool_use blocks without them"
    );
}

TEST_F(native_session_test, native_compaction_runs_only_on_the_serving_model)
{
    server_.route(
        "/v1/messages",
        native_or_portable(test::anthropic_compaction_block("## Goal\nN.", "E"), "## Goal\nPortable.")
    );
    for (const auto& [provider_name, model] :
         {std::pair{"anthropic", "claude-other"}, std::pair{"bedrock", "claude-loop"}})
    {
        SCOPED_TRACE(std::string(provider_name) + ":" + model);
        write_session(40, 3000);
        auto c = config(provider(wire_format::anthropic));
        c.model = {provider_name, model, 200000, 0};
        auto s = open(std::move(c));
        auto [ec, out] = compact(*s);
        ASSERT_FALSE(ec) << out.message;
        EXPECT_EQ(
            selection_of(last_compaction(file())),
            "portable: the summarizer (anthropic:claude-loop) is not the serving model (" +
                std::string(provider_name) + ":" + model +
                "); native compaction runs only on the loop's own model"
        );
        close(s);
    }
    for (const auto& r : requests_to("/v1/messages"))
        EXPECT_EQ(r.body.find("compact_20260112"), std::string::npos) << "no native request expected";
}

TEST_F(native_session_test, the_providers_exact_count_decides_native_or_portable)
{
    // The estimate is ~100k tokens (native: over 50000, under 183616 = 200000 - 16384); the count decides.
    server_.route(
        "/v1/messages",
        native_or_portable(test::anthropic_compaction_block("## Goal\nN.", "E"), "## Goal\nPortable.")
    );
    std::int64_t answer = 40000;
    std::vector<std::string> native_counts;
    server_.route("/v1/messages/count_tokens", [&](const test::recorded_request& r) {
        if (json::parse(r.body).as_object().contains("tools"))  // the portable preflight's count has none
            native_counts.push_back(r.body);
        test::scripted_response rsp;
        rsp.body = test::anthropic_count_body(answer);
        return rsp;
    });
    const auto run = [&](std::int64_t tokens) {
        answer = tokens;
        write_session(40, 3000);
        auto s = open(config(provider(wire_format::anthropic, providers::native_mode::on, true)));
        auto [ec, out] = compact(*s);
        EXPECT_FALSE(ec) << out.message;
        close(s);
        return selection_of(last_compaction(file()));
    };
    EXPECT_EQ(
        run(40000),
        "portable: the eligible window (40000 tokens, counted by the provider) is under the provider's "
        "minimum for native compaction (50000 tokens)"
    );
    EXPECT_EQ(
        run(190000),
        "portable: the eligible window (190000 tokens, counted by the provider) is over what one request "
        "may carry (183616 = contextWindow - reserveTokens); native compaction is never split"
    );
    EXPECT_EQ(
        run(120000),
        "native: anthropic:claude-loop compacted the whole eligible window (120000 tokens, counted by the "
        "provider) in one request"
    );
    // The count is of the native request itself: its tools, its messages with their tool calls.
    ASSERT_EQ(native_counts.size(), 3u);
    const auto counted = json::parse(native_counts[0]).as_object();
    EXPECT_EQ(test::anthropic_request_problem(native_counts[0]), std::nullopt);
    EXPECT_EQ(counted.at("tools"), loop_tools());
    EXPECT_EQ(counted.at("model"), "claude-loop");
    EXPECT_NE(json::serialize(counted.at("messages")).find("MARK-000"), std::string::npos);
    EXPECT_FALSE(counted.contains("context_management"));

    // A failing count: the estimate decides, and the evidence says so.
    test::fake_provider_server broken;
    broken.check_anthropic_requests(true);
    broken.route("/v1/messages/count_tokens", fixed(R"({"type":"error","error":{"type":"api_error"}})", 500));
    broken.route(
        "/v1/messages",
        native_or_portable(test::anthropic_compaction_block("## Goal\nN.", "E"), "## Goal\nPortable.")
    );
    write_session(40, 3000);
    auto p = provider(wire_format::anthropic, providers::native_mode::on, true);
    p.base_url = broken.base_url();
    auto s = open(config(p));
    auto [ec, out] = compact(*s);
    ASSERT_FALSE(ec) << out.message;
    const auto selection = selection_of(last_compaction(file()));
    EXPECT_TRUE(selection.starts_with("native: anthropic:claude-loop compacted the whole eligible window (~"))
        << selection;
    EXPECT_NE(selection.find(" tokens, estimated: the count failed ("), std::string::npos) << selection;
}

TEST_F(native_session_test, a_previous_portable_summary_is_resent_as_reference_history)
{
    server_.route(
        "/v1/messages",
        native_or_portable(
            test::anthropic_compaction_block("## Goal\nSecond, native.", "E"), "## Goal\nFirst, portable."
        )
    );
    {
        auto s = open(config(provider(wire_format::anthropic, providers::native_mode::off)));
        auto [ec, out] = compact(*s);
        ASSERT_FALSE(ec) << out.message;
        close(s);
    }
    auto s = open(config(provider(wire_format::anthropic)));
    for (int i = 0; i < 30; ++i)
        append_turn(*s, "MORE-" + std::to_string(i) + " " + std::string(8000, 'm'));
    auto [ec, out] = compact(*s);
    ASSERT_FALSE(ec) << out.message;
    std::vector<test::recorded_request> native;
    for (const auto& r : requests_to("/v1/messages"))
        if (r.body.find("compact_20260112") != std::string::npos)
            native.push_back(r);
    ASSERT_EQ(native.size(), 1u);
    const auto first = json::parse(native[0].body).at("messages").at(0);
    EXPECT_EQ(first.at("role"), "user");
    const std::string text(first.at("content").at(0).at("text").as_string());
    EXPECT_TRUE(text.starts_with(
        std::string(compaction::reference_compaction_prefix) +
        std::string(compaction::reference_history_notice) + "## Goal\nFirst, portable."
    )) << text;
    EXPECT_NE(text.find(compaction::reference_history_suffix), std::string::npos);
}

TEST_F(
    native_session_test,
    openai_inline_compacts_with_the_trigger_at_the_sessions_threshold_and_replays_the_item
)
{
    server_.route("/v1/responses", [](const test::recorded_request& r) {
        return test::openai_inline_reply(r, "ENC-INLINE");
    });
    server_.route("/v1/chat/completions", fixed(test::openai_body("## Goal\nPortable note.")));
    auto p = provider(wire_format::openai);
    p.openai_form = providers::openai_native_form::inline_request;
    auto c = config(p);
    const auto threshold = compaction::automatic_threshold(c.model.context_window, c.settings, c.compat);
    auto s = open(std::move(c));
    auto [ec, out] = compact(*s);
    ASSERT_FALSE(ec) << out.message;
    EXPECT_TRUE(requests_to("/responses/compact").empty());
    const auto sent = requests_to("/v1/responses");
    ASSERT_EQ(sent.size(), 1u);
    const auto body = json::parse(sent[0].body).as_object();
    EXPECT_EQ(body.at("context_management").at(0).at("compact_threshold"), threshold);
    EXPECT_EQ(body.at("input").as_array().back(), json::parse(R"({"type":"compaction_trigger"})"));

    // Stored as native state (the item alone) with a portable note, and replayed verbatim.
    const auto entry = last_compaction(file());
    EXPECT_TRUE(entry.at("summary").as_string().starts_with("## Goal\nPortable note."));
    const auto& native = entry.at("details").at("agentctx").at("native");
    ASSERT_EQ(native.at("output").as_array().size(), 1u);
    EXPECT_EQ(native.at("output").at(0).at("encrypted_content"), "ENC-INLINE");
    const auto snap = s->current();
    ASSERT_TRUE(snap->native);
    const auto replay = providers::to_responses_input(s->context(), snap->native.get());
    EXPECT_EQ(replay.at(0), native.at("output").at(0));
}

// OpenAI inline compaction in the host's own loop: the reply's compaction item is adopted as the
// native state, cut at the reply, with a portable note; no native request is sent.
TEST_F(native_session_test, a_loop_replys_compaction_item_is_adopted_cut_at_the_reply_and_replayed)
{
    auto s = open_inline("## Goal\nPortable note of the loop.");
    append_turn(*s, "the loop's turn");
    const auto before = s->current();
    const std::string reply = *before->leaf_id;  // the reply's answer: the first kept entry
    const auto item = json::parse(test::openai_compaction_item("ENC-LOOP")).as_object();
    const auto r = adopt(*s, item, reply);
    ASSERT_FALSE(r.first) << r.second.message;
    ASSERT_TRUE(r.second.compacted) << r.second.message;
    EXPECT_TRUE(requests_to("/v1/responses").empty());
    EXPECT_TRUE(requests_to("/responses/compact").empty());

    const auto entry = last_compaction(file());
    EXPECT_EQ(entry.at("id").as_string(), r.second.entry_id);
    EXPECT_EQ(entry.at("firstKeptEntryId").as_string(), reply);
    EXPECT_TRUE(entry.at("summary").as_string().starts_with("## Goal\nPortable note of the loop."));
    const auto& native = entry.at("details").at("agentctx").at("native");
    EXPECT_EQ(native.at("output"), json::value(json::array{item}));
    ASSERT_EQ(finished_.size(), 1u);
    EXPECT_TRUE(finished_[0].native_selection.starts_with("native: adopted"));
    const auto snap = s->current();
    ASSERT_TRUE(snap->native);
    const auto replay = providers::to_responses_input(s->context(), snap->native.get());
    EXPECT_EQ(replay.at(0), item);  // verbatim, then the reply
    EXPECT_EQ(replay.size(), 2u);
}

// The item covers everything before the reply: a cut the rules do not make there is refused and
// nothing is written.
TEST_F(native_session_test, an_adopted_compaction_whose_cut_the_plan_does_not_make_writes_nothing)
{
    auto s = open_inline("## Goal\nPortable note.");
    append_turn(*s, "the loop's turn");
    const auto text = file();
    const auto path = s->current();
    // The user message of the turn: the plan keeps from the reply, not from it.
    const auto& msgs = path->messages.to_vector();
    const std::string user = msgs.at(msgs.size() - 2).entry_id;
    const auto ec = adopt(*s, json::parse(test::openai_compaction_item("E")).as_object(), user).first;
    EXPECT_EQ(ec, runtime::make_error_code(runtime::errc::stale_plan));
    EXPECT_EQ(file(), text);
    EXPECT_TRUE(requests_to("/v1/chat/completions").empty());
}

// A before_compact hook that supplies its own result during an adoption wins: the entry is the
// hook's (no native state, nothing replayed of the item), and the outcome says the item was not
// adopted and why.
TEST_F(native_session_test, a_hooks_result_during_an_adoption_commits_and_reports_the_item_not_adopted)
{
    auto s = open_inline("## Goal\nPortable note.");
    s->on_before_compact([](const before_compact_event&) {
        compaction::compaction_result r;
        r.summary = "## Goal\nThe host's own summary.";
        return hook_decision{.result = r};
    });
    append_turn(*s, "the loop's turn");
    const std::string reply = *s->current()->leaf_id;
    const auto r = adopt(*s, json::parse(test::openai_compaction_item("ENC-LOOP")).as_object(), reply);
    ASSERT_FALSE(r.first) << r.second.message;
    ASSERT_TRUE(r.second.compacted) << r.second.message;
    EXPECT_FALSE(r.second.adopted);
    EXPECT_EQ(r.second.not_adopted, "hook_result");
    EXPECT_NE(r.second.message.find("not adopted"), std::string::npos) << r.second.message;

    const auto entry = last_compaction(file());
    EXPECT_EQ(entry.at("id").as_string(), r.second.entry_id);
    EXPECT_TRUE(entry.at("summary").as_string().starts_with("## Goal\nThe host's own summary."));
    EXPECT_EQ(json::serialize(entry).find("ENC-LOOP"), std::string::npos);  // no native state
    EXPECT_FALSE(s->current()->native);
    const auto replay = providers::to_responses_input(s->context(), s->current()->native.get());
    for (const auto& item : replay)
        EXPECT_NE(item.as_object().if_contains("type") ? item.at("type") : json::value(), "compaction");
    ASSERT_EQ(finished_.size(), 1u);
    EXPECT_TRUE(finished_[0].native_selection.starts_with("hook:")) << finished_[0].native_selection;
    EXPECT_TRUE(requests_to("/v1/chat/completions").empty());  // no portable note either
}

// Another compaction in flight: the adoption is refused with `compaction_running`, nothing is
// written, and the running compaction still commits.
TEST_F(native_session_test, an_adoption_while_a_compaction_runs_is_refused_and_the_running_one_commits)
{
    std::promise<void> release;
    auto released = release.get_future().share();
    // Released however the test ends: the fake's thread must not wait forever.
    const auto unblock = std::shared_ptr<void>(nullptr, [&release, released](void*) {
        if (released.wait_for(std::chrono::seconds(0)) != std::future_status::ready)
            release.set_value();
    });
    auto arrived = std::make_shared<std::atomic<bool>>(false);
    server_.route("/v1/responses", [released, arrived](const test::recorded_request& r) {
        *arrived = true;
        released.wait();  // the native request is in flight until the test releases it
        return test::openai_inline_reply(r, "ENC-RUNNING");
    });
    auto s = open_inline("## Goal\nPortable note.");
    append_turn(*s, "the loop's turn");
    const std::string reply = *s->current()->leaf_id;
    const auto text = file();

    bool compacted = false;
    std::pair<error_code, compaction_outcome> running;
    s->async_compact(std::nullopt, [&](error_code ec, compaction_outcome o) {
        compacted = true;
        running = {ec, std::move(o)};
    });
    run_until([&] { return arrived->load(); });
    const auto adoption = adopt(*s, json::parse(test::openai_compaction_item("ENC-LOOP")).as_object(), reply);
    EXPECT_EQ(adoption.first, runtime::make_error_code(runtime::errc::compaction_running));
    EXPECT_FALSE(adoption.second.compacted);
    EXPECT_FALSE(adoption.second.adopted);
    EXPECT_EQ(file(), text);  // nothing written
    EXPECT_FALSE(compacted);

    release.set_value();
    run_until([&] { return compacted; });
    ASSERT_FALSE(running.first) << running.second.message;
    ASSERT_TRUE(running.second.compacted) << running.second.message;
    const auto entry = last_compaction(file());
    EXPECT_EQ(entry.at("id").as_string(), running.second.entry_id);
    EXPECT_NE(json::serialize(entry).find("ENC-RUNNING"), std::string::npos);
    EXPECT_EQ(file().find("ENC-LOOP"), std::string::npos);
}

namespace {

json::object assistant_message(json::array content, std::string stop = "stop")
{
    return json::object{
        {"role", "assistant"},
        {"content", std::move(content)},
        {"api", "openai-responses"},
        {"provider", "openai"},
        {"model", "claude-loop"},
        {"stopReason", std::move(stop)},
        {"timestamp", 2}};
}

}  // namespace

// The host built its request at leaf L, then appended a steering message before the reply came
// back: with the covered leaf, the item covers the path up to L only, and the steering message
// stays after the compaction with the reply (replayed after the item).
TEST_F(native_session_test, an_adoption_with_its_covered_leaf_keeps_the_entries_appended_meanwhile)
{
    auto s = open_inline("## Goal\nPortable note.");
    append_turn(*s, "the loop's turn");
    const std::string covered = *s->current()->leaf_id;  // the view's leafId the request was built at
    const auto append = [&](json::object m) { return append_message(*s, std::move(m)); };
    const auto steering =
        append({{"role", "user"}, {"content", "steer: use the other file"}, {"timestamp", 3}});
    const auto reply = append(assistant_message(json::array{json::object{{"type", "text"}, {"text", "ok"}}}));
    const auto item = json::parse(test::openai_compaction_item("ENC-COVERED")).as_object();
    const auto r = adopt(*s, item, reply, covered);
    ASSERT_FALSE(r.first) << r.second.message;
    ASSERT_TRUE(r.second.adopted) << r.second.message;
    const auto entry = last_compaction(file());
    EXPECT_EQ(entry.at("firstKeptEntryId").as_string(), steering);
    const auto replay = providers::to_responses_input(s->context(), s->current()->native.get());
    ASSERT_EQ(replay.size(), 3u);  // the item, the steering message, the reply
    EXPECT_EQ(replay.at(0), item);
    EXPECT_NE(json::serialize(replay.at(1)).find("steer: use the other file"), std::string::npos);
}

// The entry after the covered leaf is a tool result (from another path): no cut is valid there,
// so the adoption is refused with adoption_invalid_cut and nothing is written.
TEST_F(native_session_test, an_adoption_whose_covered_prefix_ends_at_no_valid_cut_writes_nothing)
{
    auto s = open_inline("## Goal\nPortable note.");
    append_turn(*s, "the loop's turn");
    const auto append = [&](json::object m) { return append_message(*s, std::move(m)); };
    const auto call = append(assistant_message(
        json::array{json::object{
            {"type", "toolCall"},
            {"id", "call_9"},
            {"name", "read"},
            {"arguments", json::object{{"path", "a"}}}}},
        "toolUse"
    ));
    append(
        {{"role", "toolResult"},
         {"toolCallId", "call_9"},
         {"toolName", "read"},
         {"content", json::array{json::object{{"type", "text"}, {"text", "contents"}}}},
         {"isError", false},
         {"timestamp", 3}}
    );
    const auto reply = append(assistant_message(json::array{json::object{{"type", "text"}, {"text", "ok"}}}));
    const auto text = file();
    const auto r = adopt(*s, json::parse(test::openai_compaction_item("E")).as_object(), reply, call);
    EXPECT_EQ(r.first, runtime::make_error_code(runtime::errc::adoption_invalid_cut)) << r.first.message();
    EXPECT_NE(r.second.message.find("tool result"), std::string::npos) << r.second.message;
    EXPECT_EQ(file(), text);
    EXPECT_TRUE(requests_to("/v1/chat/completions").empty());
}
