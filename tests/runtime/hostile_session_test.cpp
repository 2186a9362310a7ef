// A session facing hostile input: reserved entry types from clients, forged records on restore,
// forged derived state in the file, and secrets in what a compaction writes.
#include <agentctx/compaction/checkpoint.hpp>
#include <agentctx/compaction/json_text.hpp>
#include <agentctx/providers/offline_summarizer.hpp>
#include <agentctx/runtime/session.hpp>
#include <agentctx/runtime/snapshot.hpp>

#include "long_session.hpp"
#include "open_session.hpp"
#include "session_text.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace agentctx;
using namespace agentctx::runtime;
namespace asio = boost::asio;
namespace json = boost::json;
namespace fs = std::filesystem;
using boost::system::error_code;
using test::tokens;

namespace {

const std::string aws_key = "AKIA" + std::string("Q7ZP3KX9M2VB6TNW");
const std::string github_token = "ghp_" + std::string("aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A");
const std::string stripe_key = "sk_live_" + std::string("4eC39HqLyjWDarjtT1zdp7dc");

class hostile_session_test : public ::testing::Test
{
protected:
    void SetUp() override
    {
        dir_ = fs::temp_directory_path() / ("agentctx-hostile-" + std::to_string(::getpid()) + "-" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }

    // Ten turns; the first reads a file whose path holds a key, and a pinned reminder holds another.
    static test::session_text history()
    {
        test::session_text s;
        s.user("u0", "read the keys file")
            .tool_call("a0", "call-1", "read", {{"path", "keys/" + aws_key + ".txt"}});
        s.tool_result("r0", "call-1", "read", "contents " + tokens(50));
        s.entry(
            "custom_message",
            "rem",
            {{"customType", "reminder"}, {"content", "deploy with " + stripe_key}, {"display", true}}
        );
        for (std::size_t i = 1; i < 10; ++i)
            s.user("u" + std::to_string(i), "turn " + std::to_string(i) + " " + tokens(100))
                .assistant(
                    "a" + std::to_string(i),
                    "answer " + std::to_string(i) + " " + tokens(100),
                    i == 9 ? 2000 : 0
                );
        return s;
    }

    session_config config()
    {
        session_config c;
        c.settings.keep_recent_tokens = 400;
        c.model = {"anthropic", "claude-sonnet-4-5", 200000, 0};
        c.summarizer = std::make_shared<providers::offline_summarizer>(ioc_.get_executor());
        c.pins.custom_types = {"reminder"};
        return c;
    }

    fs::path write(const std::string& name, const std::string& text)
    {
        auto p = dir_ / name;
        std::ofstream(p, std::ios::binary) << text;
        return p;
    }

    template <class Result, class Start>
    Result run(Start start)
    {
        Result out;
        start(out);
        ioc_.restart();
        ioc_.run();
        return out;
    }

    std::pair<error_code, std::string> append(session& s, json::object fields)
    {
        return run<std::pair<error_code, std::string>>([&](auto& out) {
            s.async_append(std::move(fields), [&](error_code ec, std::string id) {
                out = {ec, std::move(id)};
            });
        });
    }
    std::pair<error_code, compaction_outcome> compact(session& s)
    {
        return run<std::pair<error_code, compaction_outcome>>([&](auto& out) {
            s.async_compact(std::nullopt, [&](error_code ec, compaction_outcome o) {
                out = {ec, std::move(o)};
            });
        });
    }
    std::pair<error_code, checkpoint_outcome> restore(session& s, json::value record)
    {
        return run<std::pair<error_code, checkpoint_outcome>>([&](auto& out) {
            s.async_restore_checkpoint(std::move(record), [&](error_code ec, checkpoint_outcome o) {
                out = {ec, std::move(o)};
            });
        });
    }
    std::pair<error_code, checkpoint_outcome> export_checkpoint(session& s)
    {
        return run<std::pair<error_code, checkpoint_outcome>>([&](auto& out) {
            s.async_export_checkpoint([&](error_code ec, checkpoint_outcome o) { out = {ec, std::move(o)}; });
        });
    }
    error_code branch(session& s, std::string id)
    {
        return run<error_code>([&](auto& out) {
            s.async_branch_from(std::move(id), [&](error_code ec) { out = ec; });
        });
    }

    static std::string last_line(const fs::path& p)
    {
        const auto text = test::read_text(p);
        return text.substr(text.rfind('\n', text.size() - 2) + 1);
    }

    asio::io_context ioc_;
    fs::path dir_;
};

std::string fixture(const std::string& name)
{
    return test::read_text(fs::path(AGENTCTX_FIXTURES_DIR) / "hostile" / name);
}

}  // namespace

TEST_F(hostile_session_test, clients_cannot_append_the_runtime_s_own_entry_types)
{
    auto p = write("s.jsonl", history().text);
    auto s = test::open_session(ioc_.get_executor(), p, config());
    ASSERT_TRUE(s);
    const auto before = test::read_text(p);
    auto [ec, message] = append(
        *s, {{"type", "custom"}, {"customType", "agentctx.compaction_progress"}, {"data", json::object{}}}
    );
    EXPECT_EQ(ec, compaction::make_error_code(compaction::errc::reserved_type));
    EXPECT_EQ(
        message,
        "customType 'agentctx.compaction_progress' is reserved: entries of the 'agentctx.*' types are "
        "written "
        "only by the runtime"
    );
    EXPECT_EQ(test::read_text(p), before);
    // Another namespace is the client's own.
    auto [ok, id] = append(*s, {{"type", "custom"}, {"customType", "myapp.state"}, {"data", json::object{}}});
    EXPECT_FALSE(ok) << ok.message();
    EXPECT_EQ(id.size(), 8u);
}

TEST_F(hostile_session_test, a_compaction_redacts_its_file_lists_pins_and_details)
{
    auto p = write("s.jsonl", history().text);
    auto s = test::open_session(ioc_.get_executor(), p, config());
    ASSERT_TRUE(s);
    auto [ec, out] = compact(*s);
    ASSERT_FALSE(ec) << out.message;
    const auto line = last_line(p);
    ASSERT_NE(line.find("\"type\":\"compaction\""), std::string::npos);
    EXPECT_EQ(line.find(aws_key), std::string::npos) << line;
    EXPECT_EQ(line.find(stripe_key), std::string::npos) << line;
    const auto c = json::parse(line).as_object();
    EXPECT_EQ(c.at("details").at("readFiles"), (json::array{"keys/[REDACTED:aws_access_key_id].txt"}));
    EXPECT_NE(
        c.at("summary").as_string().find("<read-files>\nkeys/[REDACTED:aws_access_key_id].txt\n</read-files>"
        ),
        std::string::npos
    );
    EXPECT_NE(
        c.at("summary").as_string().find("[reminder]\ndeploy with [REDACTED:stripe_key]\n</pinned-entries>"),
        std::string::npos
    );
    EXPECT_EQ(
        c.at("details").at("agentctx").at("pinned").at(0).at("content"), "deploy with [REDACTED:stripe_key]"
    );
    // The redacted copy still passes the carried-entry check: the reminder is projected, from
    // memory and after a reopen.
    auto shows_reminder = [](const snapshot& snap) {
        for (const auto& m : snap.messages.to_vector())
            if (m.msg->custom_type == "reminder")
                return compaction::content_text(m.msg->content) == "deploy with [REDACTED:stripe_key]";
        return false;
    };
    EXPECT_TRUE(shows_reminder(*s->current()));
    EXPECT_TRUE(s->current()->dropped_derived.empty());
    // The exported record carries no secret either.
    auto [eec, exported] = export_checkpoint(*s);
    ASSERT_FALSE(eec) << exported.message;
    const auto record = compaction::stringify(compaction::to_json(*exported.record));
    EXPECT_EQ(record.find(aws_key), std::string::npos);
    EXPECT_EQ(record.find(stripe_key), std::string::npos);
    s->close();
    s.reset();
    ioc_.restart();
    ioc_.poll();
    auto again = test::open_session(ioc_.get_executor(), p, config());
    ASSERT_TRUE(again);
    EXPECT_TRUE(shows_reminder(*again->current()));
    EXPECT_TRUE(again->current()->dropped_derived.empty());
}

// The outcome and the compaction_end event carry the text the entry stores, never the raw one:
// a project key in a pinned reminder, a GitHub token in a read file's path.
TEST_F(hostile_session_test, the_outcome_and_the_end_event_carry_the_stored_redacted_summary)
{
    const std::string project_key = "sk-proj-" + std::string("Zq8Xw3Lm9Np2Rt7Vy4Bc6Df1Gh5Jk0Ms8Qa3We7Ur");
    test::session_text t;
    t.user("u0", "read the notes").tool_call("a0", "call-1", "read", {{"path", "notes/" + github_token}});
    t.tool_result("r0", "call-1", "read", "contents " + tokens(50));
    t.entry(
        "custom_message",
        "rem",
        {{"customType", "reminder"}, {"content", "deploy with " + project_key}, {"display", true}}
    );
    for (std::size_t i = 1; i < 10; ++i)
        t.user("u" + std::to_string(i), "turn " + std::to_string(i) + " " + tokens(100))
            .assistant("a" + std::to_string(i), "answer " + std::to_string(i) + " " + tokens(100));
    auto p = write("s.jsonl", t.text);
    auto s = test::open_session(ioc_.get_executor(), p, config());
    ASSERT_TRUE(s);
    std::optional<compaction::compaction_result> ended;
    s->on_event([&](const session_event& e) {
        if (const auto* end = std::get_if<compaction_end_event>(&e))
            ended = end->result;
    });
    auto [ec, out] = compact(*s);
    ASSERT_FALSE(ec) << out.message;
    ASSERT_TRUE(out.result);
    const auto stored = json::parse(last_line(p)).as_object();
    ASSERT_EQ(stored.at("type"), "compaction");
    const std::string summary(stored.at("summary").as_string());
    EXPECT_EQ(summary.find(project_key), std::string::npos);
    EXPECT_EQ(summary.find(github_token), std::string::npos);
    EXPECT_NE(summary.find("notes/[REDACTED:github_token]"), std::string::npos) << summary;
    EXPECT_NE(summary.find("deploy with [REDACTED:openai_api_key]"), std::string::npos) << summary;
    EXPECT_EQ(out.result->summary, summary);
    EXPECT_EQ(out.result->details.at("readFiles"), (json::array{"notes/[REDACTED:github_token]"}));
    EXPECT_EQ(out.result->pinned.at(0).at("content"), "deploy with [REDACTED:openai_api_key]");
    ASSERT_TRUE(ended);
    EXPECT_EQ(ended->summary, summary);
    EXPECT_EQ(compaction::stringify(ended->details).find(github_token), std::string::npos);
}

TEST_F(hostile_session_test, a_forged_record_is_checked_and_redacted_like_a_compaction)
{
    // The genuine record of the history, compacted elsewhere.
    auto original = write("original.jsonl", history().text);
    compaction::checkpoint_record genuine;
    {
        auto s = test::open_session(ioc_.get_executor(), original, config());
        ASSERT_TRUE(s);
        ASSERT_FALSE(compact(*s).first);
        auto [ec, out] = export_checkpoint(*s);
        ASSERT_FALSE(ec) << out.message;
        genuine = *out.record;
        s->close();
        ioc_.restart();
        ioc_.poll();
    }
    // Secrets in the summary and the file lists; the digest recomputed, as anyone can.
    auto forged = genuine;
    forged.summary = "## Goal\nDeploy with " + aws_key + " and " + github_token;
    forged.modified_files = {"keys/" + aws_key + ".txt"};
    forged.digest = compaction::record_digest(forged);
    auto p = write("copy.jsonl", history().text);
    auto s = test::open_session(ioc_.get_executor(), p, config());
    ASSERT_TRUE(s);
    auto [ec, out] = restore(*s, compaction::to_json(forged));
    ASSERT_FALSE(ec) << ec.message() << ": " << out.message;
    const auto line = last_line(p);
    EXPECT_EQ(line.find(aws_key), std::string::npos) << line;
    EXPECT_EQ(line.find(github_token), std::string::npos) << line;
    EXPECT_EQ(line.find(stripe_key), std::string::npos) << line;  // the kept reminder, copied from this file
    const auto c = json::parse(line).as_object();
    EXPECT_EQ(
        c.at("summary"), "## Goal\nDeploy with [REDACTED:aws_access_key_id] and [REDACTED:github_token]"
    );
    EXPECT_EQ(c.at("details").at("modifiedFiles"), (json::array{"keys/[REDACTED:aws_access_key_id].txt"}));
    EXPECT_EQ(
        c.at("details").at("agentctx").at("redactions"),
        (json::object{{"aws_access_key_id", 2}, {"github_token", 1}, {"stripe_key", 1}})
    );
    EXPECT_TRUE(s->current()->dropped_derived.empty());

    // Refused, the file unchanged: an empty summary, a kept id named twice.
    const auto before = test::read_text(p);
    auto empty = genuine;
    empty.summary = "  \n";
    empty.digest = compaction::record_digest(empty);
    auto [e1, o1] = restore(*s, compaction::to_json(empty));
    EXPECT_EQ(e1, compaction::make_error_code(compaction::errc::checkpoint_invalid));
    EXPECT_EQ(o1.reason, compaction::checkpoint_reason::corrupt);
    EXPECT_EQ(o1.message, "checkpoint field 'summary': Summarization returned an empty summary");
    auto twice = genuine;
    ASSERT_FALSE(twice.kept_verbatim_ids.empty());
    twice.kept_verbatim_ids.push_back(twice.kept_verbatim_ids.front());
    twice.digest = compaction::record_digest(twice);
    auto [e2, o2] = restore(*s, compaction::to_json(twice));
    EXPECT_EQ(e2, compaction::make_error_code(compaction::errc::checkpoint_invalid));
    EXPECT_NE(o2.message.find("a second time"), std::string::npos) << o2.message;
    EXPECT_EQ(test::read_text(p), before);
}

TEST_F(hostile_session_test, forged_pins_are_dropped_with_an_event)
{
    auto p = write("forged.jsonl", fixture("session-forged-pins.jsonl"));
    auto s = test::open_session(ioc_.get_executor(), p, config());
    ASSERT_TRUE(s);
    const compaction::derived_note note{"c1", "pinned", "carried entry 'rem' differs from the covered entry"};
    ASSERT_EQ(s->current()->dropped_derived, std::vector<compaction::derived_note>{note});
    for (const auto& m : s->context())
        EXPECT_EQ(compaction::content_text(m.msg->content).find("FORGED"), std::string::npos);
    // Leaving the compaction and coming back reports it to listeners.
    std::vector<compaction::derived_note> seen;
    s->on_event([&](const session_event& e) {
        if (const auto* d = std::get_if<derived_state_dropped_event>(&e))
            seen.push_back(d->note);
    });
    ASSERT_FALSE(branch(*s, "a3"));
    EXPECT_TRUE(s->current()->dropped_derived.empty());
    ASSERT_FALSE(branch(*s, "c1"));
    EXPECT_EQ(seen, std::vector<compaction::derived_note>{note});
}

TEST_F(hostile_session_test, forged_native_state_is_not_replayed)
{
    auto p = write("forged.jsonl", fixture("session-forged-native.jsonl"));
    auto s = test::open_session(ioc_.get_executor(), p, config());
    ASSERT_TRUE(s);
    EXPECT_EQ(s->current()->native, nullptr);
    ASSERT_EQ(s->current()->dropped_derived.size(), 1u);
    EXPECT_EQ(s->current()->dropped_derived[0].part, "native");
    EXPECT_EQ(
        s->current()->dropped_derived[0].reason,
        "the compaction records no native summary (evidence.method is not \"native\")"
    );
}

TEST(native_state, only_a_native_compaction_of_the_same_provider_owns_its_state)
{
    const json::object block{
        {"provider", "anthropic"},
        {"model", "claude-sonnet-4-5"},
        {"block", json::object{{"type", "compaction"}, {"content", "the summary"}}}};
    auto compaction_with = [](std::string method, std::string provider) {
        return compaction::make_compaction_entry(
            "c1",
            std::string("a1"),
            "2026-01-15T09:00:00.000Z",
            "s",
            "u1",
            1,
            json::object{
                {"agentctx",
                 json::object{
                     {"evidence", json::object{{"method", method}}},
                     {"identity", json::object{{"provider", provider}, {"model", "m"}}}}}},
            false
        );
    };
    EXPECT_EQ(native_problem(compaction_with("native", "anthropic"), block), "");
    EXPECT_EQ(native_problem(compaction_with("native", "my-proxy"), block), "");
    EXPECT_EQ(
        native_problem(compaction_with("native", "openai"), block),
        "the native state is anthropic's, the compaction was written by openai"
    );
    EXPECT_EQ(
        native_problem(compaction_with("native", "offline"), block),
        "the compaction was not written by a provider's summarizer"
    );
    EXPECT_EQ(
        native_problem(compaction_with("piecewise", "anthropic"), block),
        "the compaction records no native summary (evidence.method is not \"native\")"
    );
    auto big = block;
    big["block"].as_object()["content"] = std::string(5u * 1024u * 1024u, 'x');
    EXPECT_EQ(
        native_problem(compaction_with("native", "anthropic"), big),
        "the native state is 5242975 bytes, over the bound of 4194304"
    );
    EXPECT_EQ(
        native_problem(compaction_with("native", "anthropic"), json::object{{"provider", "anthropic"}}),
        "details.agentctx.native: model is not a string"
    );
}
