// session::async_replace_history: the host's transcript becomes a branch from the last shared entry; the log
// stays append-only.
#include <agentctx/compaction/error.hpp>
#include <agentctx/compaction/llm_convert.hpp>
#include <agentctx/runtime/error.hpp>
#include <agentctx/runtime/jsonl_store.hpp>
#include <agentctx/runtime/session.hpp>

#include "append_entry.hpp"
#include "controlled_store.hpp"
#include "file_text.hpp"
#include "long_session.hpp"
#include "open_session.hpp"
#include "run_until.hpp"
#include "scripted_summarizer.hpp"
#include "session_text.hpp"

#include <boost/asio/io_context.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

using namespace agentctx;
using namespace agentctx::runtime;
namespace json = boost::json;
namespace fs = std::filesystem;
using boost::system::error_code;
using test::tokens;

namespace {

class history_replacement_test : public ::testing::Test
{
protected:
    void SetUp() override
    {
        path_ = fs::temp_directory_path() /
                ("agentctx-replace-" + std::to_string(::getpid()) + "-" +
                 ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".jsonl");
        summarizer_ = std::make_shared<test::scripted_summarizer>(ioc_.get_executor());
    }
    void TearDown() override
    {
        session_.reset();
        fs::remove(path_);
    }

    session_config config(std::int64_t keep = 400)
    {
        session_config c;
        c.settings.keep_recent_tokens = keep;
        c.model = {"anthropic", "claude-sonnet-4-5", 200000, 0};
        c.settings.working_budget = compaction::token_amount{};
        c.summarizer = summarizer_;
        return c;
    }

    void open(const std::string& text, session_config c)
    {
        std::ofstream(path_, std::ios::binary) << text;
        session_ = test::open_session(ioc_.get_executor(), path_, std::move(c));
        ASSERT_TRUE(session_);
    }

    std::pair<error_code, replace_history_result> replace(std::vector<json::object> messages)
    {
        std::pair<error_code, replace_history_result> out;
        bool done = false;
        session_->async_replace_history(std::move(messages), [&](error_code ec, replace_history_result r) {
            out = {ec, std::move(r)};
            done = true;
        });
        test::run_until(ioc_, [&] { return done; });
        return out;
    }

    // The message objects of the file's message entries on the path to `leaf`, as stored.
    static std::vector<json::object> messages_of(const std::string& text, const std::vector<std::string>& ids)
    {
        std::vector<json::object> out;
        const auto lines = test::json_lines(text);
        for (const auto& id : ids)
            for (const auto& l : lines)
                if (l.contains("id") && l.at("id").is_string() && l.at("id").get_string() == id)
                    out.push_back(l.at("message").as_object());
        return out;
    }

    static json::object summary_message(const std::string& summary)
    {
        return {
            {"role", "compactionSummary"}, {"summary", summary}, {"tokensBefore", 1000}, {"timestamp", 1}};
    }

    // The session file loaded on its own, read-only (as a reopen sees it).
    compaction::session_log load_file() const
    {
        compaction::diagnostics diag;
        compaction::load_report report;
        auto store = jsonl_store::open(path_, {.read_only = true}, diag);
        EXPECT_TRUE(store) << diag.message;
        return (*store)->load({}, report, diag).value();
    }

    std::vector<std::string> context_ids() const
    {
        std::vector<std::string> out;
        for (const auto& m : session_->context())
            out.push_back(m.entry_id);
        return out;
    }

    static std::string last_text(const std::vector<compaction::context_message>& ctx)
    {
        return compaction::content_text(ctx.back().msg->content);
    }

    boost::asio::io_context ioc_;
    fs::path path_;
    std::shared_ptr<test::scripted_summarizer> summarizer_;
    std::shared_ptr<session> session_;
};

test::session_text tool_session()
{
    test::session_text t;
    t.user("u0", "fix the build").assistant("a0", "Running make.");
    t.tool_call(
         "c1", "call_1", "bash", {{"command", "make"}}
    ).tool_result("r1", "call_1", "bash", "error: make failed");
    return t;
}

json::object with_result_text(json::object m, const std::string& text)
{
    m["content"] = json::array{json::object{{"type", "text"}, {"text", text}}};
    return m;
}

}  // namespace

TEST_F(history_replacement_test, a_rewritten_last_tool_result_is_a_branch_and_the_old_one_stays_readable)
{
    const auto t = tool_session();
    open(t.text, config());
    auto host = messages_of(t.text, {"u0", "a0", "c1", "r1"});
    host[3] = with_result_text(host[3], "make: nothing to be done");
    const auto [ec, r] = replace(host);
    ASSERT_FALSE(ec) << ec.message() << ": " << r.reason;
    EXPECT_TRUE(r.changed);
    EXPECT_EQ(r.shared, 3u);
    EXPECT_EQ(r.fork_id, "c1");
    EXPECT_EQ(r.old_leaf_id, "r1");
    ASSERT_EQ(r.ids.size(), 1u);
    // context() shows the new messages.
    const auto ctx = session_->context();
    EXPECT_EQ(context_ids(), (std::vector<std::string>{"u0", "a0", "c1", r.ids[0]}));
    EXPECT_EQ(last_text(ctx), "make: nothing to be done");
    // Append-only: the old result is still in the file, the new one is its sibling under c1.
    const auto lines = test::json_lines(test::read_text(path_));
    ASSERT_EQ(lines.size(), 6u);  // header, four entries, the new result
    EXPECT_EQ(lines[4].at("id"), "r1");
    EXPECT_EQ(std::string(lines[5].at("id").as_string()), r.ids[0]);
    EXPECT_EQ(lines[5].at("parentId"), "c1");
    // A reopen follows the new branch; the old one reads back whole.
    const auto log = load_file();
    EXPECT_EQ(log.leaf_id(), r.ids[0]);
    compaction::diagnostics diag;
    const auto old_path = log.path_to(log.find("r1"));
    ASSERT_EQ(old_path.size(), 4u);
    const auto old_result = log.get(old_path.back(), diag).value();
    EXPECT_EQ(compaction::content_text(old_result->message->content), "error: make failed");
    bool done = false;
    json::object original;
    session_->async_original("r1", [&](error_code e, json::object o) {
        EXPECT_FALSE(e);
        original = std::move(o);
        done = true;
    });
    test::run_until(ioc_, [&] { return done; });
    EXPECT_EQ(original.at("message").at("content").at(0).at("text"), "error: make failed");
}

TEST_F(history_replacement_test, the_same_messages_write_nothing)
{
    const auto t = tool_session();
    open(t.text, config());
    const auto before = test::read_text(path_);
    const auto snap = session_->current();
    const auto [ec, r] = replace(messages_of(t.text, {"u0", "a0", "c1", "r1"}));
    ASSERT_FALSE(ec) << r.reason;
    EXPECT_FALSE(r.changed);
    EXPECT_EQ(r.shared, 4u);
    EXPECT_TRUE(r.ids.empty());
    EXPECT_EQ(r.fork_id, "");
    EXPECT_EQ(test::read_text(path_), before);
    EXPECT_EQ(session_->current(), snap);
}

TEST_F(history_replacement_test, more_messages_than_the_context_are_appended_at_the_leaf)
{
    const auto t = tool_session();
    open(t.text, config());
    auto host = messages_of(t.text, {"u0", "a0", "c1", "r1"});
    host.push_back({{"role", "user"}, {"content", "and run the tests"}, {"timestamp", 5}});
    const auto [ec, r] = replace(host);
    ASSERT_FALSE(ec) << r.reason;
    EXPECT_EQ(r.shared, 4u);
    EXPECT_EQ(r.fork_id, "r1");
    ASSERT_EQ(r.ids.size(), 1u);
    EXPECT_EQ(context_ids(), (std::vector<std::string>{"u0", "a0", "c1", "r1", r.ids[0]}));
}

// The store refuses the tail: the answer is the store's failure, with no ids, and nothing changed.
TEST_F(history_replacement_test, a_store_that_refuses_the_tail_leaves_the_session_as_it_was)
{
    const auto t = tool_session();
    auto control = std::make_shared<test::store_control>();
    auto st = std::make_unique<test::controlled_store>(t.text, control);
    const auto* stored = st.get();
    compaction::diagnostics diag;
    auto opened = session::open(ioc_.get_executor(), std::move(st), config(), diag);
    ASSERT_TRUE(opened) << diag.message;
    session_ = *opened;
    const auto before = stored->text();
    const auto ids = context_ids();
    control->fail = true;
    auto host = messages_of(t.text, {"u0", "a0", "c1", "r1"});
    host.push_back({{"role", "user"}, {"content", "and run the tests"}, {"timestamp", 5}});
    const auto [ec, r] = replace(host);
    EXPECT_EQ(ec, make_error_code(errc::io_error));
    EXPECT_FALSE(r.changed);
    EXPECT_TRUE(r.ids.empty());
    EXPECT_EQ(r.reason, "the test's store refuses writes");
    EXPECT_EQ(control->writes, 1u);
    EXPECT_EQ(stored->text(), before);
    EXPECT_EQ(context_ids(), ids);
}

// A retry: the list drops the last reply. The leaf's move is kept by one marker entry.
TEST_F(history_replacement_test, a_shorter_list_moves_the_leaf_and_a_reopen_keeps_it)
{
    test::session_text t;
    t.user("u0", "first").assistant("a0", "one").user("u1", "second").assistant("a1", "two");
    open(t.text, config());
    const auto [ec, r] = replace(messages_of(t.text, {"u0", "a0", "u1"}));
    ASSERT_FALSE(ec) << r.reason;
    EXPECT_TRUE(r.changed);
    EXPECT_EQ(r.fork_id, "u1");
    ASSERT_EQ(r.ids.size(), 1u);
    EXPECT_EQ(context_ids(), (std::vector<std::string>{"u0", "a0", "u1"}));
    const auto marker = test::json_lines(test::read_text(path_)).back();
    EXPECT_EQ(marker.at("type"), "custom");
    EXPECT_EQ(marker.at("customType"), "agentctx.history_replaced");
    EXPECT_EQ(marker.at("data").at("fromId"), "a1");
    const auto log = load_file();
    EXPECT_EQ(log.leaf_id(), r.ids[0]);
    EXPECT_EQ(log.path_to(log.leaf()).size(), 4u);  // u0, a0, u1, the marker
}

TEST_F(history_replacement_test, a_bad_message_names_its_index_and_field_and_writes_nothing)
{
    const auto t = tool_session();
    open(t.text, config());
    const auto before = test::read_text(path_);
    auto host = messages_of(t.text, {"u0"});
    host.push_back({{"role", "user"}, {"content", 5}});
    const auto [ec, r] = replace(host);
    EXPECT_EQ(ec, compaction::make_error_code(compaction::errc::wrong_type));
    EXPECT_EQ(r.reason.rfind("[1] field 'message.content'", 0), 0u) << r.reason;
    EXPECT_FALSE(r.changed);
    EXPECT_EQ(test::read_text(path_), before);
}

// u0..a3, a compaction keeping from u2, then u4, a4: the context is [summary, u2, a2, u3, a3, u4, a4].
test::session_text compacted_session()
{
    test::session_text t;
    for (int i = 0; i < 4; ++i)
        t.user("u" + std::to_string(i), "prompt " + std::to_string(i))
            .assistant("a" + std::to_string(i), "reply " + std::to_string(i));
    t.compaction("cmp", "u2", "## Goal\nthe summary");
    t.user("u4", "prompt 4").assistant("a4", "reply 4");
    return t;
}

TEST_F(
    history_replacement_test, a_change_inside_the_summarized_history_is_refused_and_the_file_is_byte_identical
)
{
    const auto t = compacted_session();
    open(t.text, config());
    ASSERT_EQ(session_->context().front().msg->role, compaction::role::compaction_summary);
    const auto before = test::read_text(path_);
    const auto snap = session_->current();
    const auto kept = messages_of(t.text, {"u2", "a2", "u3", "a3", "u4", "a4"});
    // The whole history from the first prompt, edited: it differs where the summary stands.
    auto full = messages_of(t.text, {"u0", "a0", "u1", "a1"});
    full[0]["content"] = "prompt 0, edited";
    full.insert(full.end(), kept.begin(), kept.end());
    const auto [ec, r] = replace(full);
    EXPECT_EQ(ec, make_error_code(errc::summarized_history));
    EXPECT_EQ(r.shared, 0u);
    EXPECT_NE(r.reason.find("summarized history"), std::string::npos) << r.reason;
    // A rewritten summary is summarized history too.
    auto rewritten = kept;
    rewritten.insert(rewritten.begin(), summary_message("## Goal\nanother summary"));
    EXPECT_EQ(replace(rewritten).first, make_error_code(errc::summarized_history));
    EXPECT_EQ(test::read_text(path_), before);
    EXPECT_EQ(session_->current(), snap);
}

TEST_F(history_replacement_test, a_change_after_the_compaction_keeps_it_on_the_new_branch)
{
    const auto t = compacted_session();
    open(t.text, config());
    auto host = messages_of(t.text, {"u2", "a2", "u3", "a3", "u4", "a4"});
    host.insert(host.begin(), summary_message("## Goal\nthe summary"));
    host.back() = with_result_text(host.back(), "reply 4, retried");
    const auto [ec, r] = replace(host);
    ASSERT_FALSE(ec) << r.reason;
    EXPECT_EQ(r.shared, 6u);
    EXPECT_EQ(r.fork_id, "u4");
    ASSERT_EQ(r.ids.size(), 1u);
    const auto ctx = session_->context();
    EXPECT_EQ(context_ids(), (std::vector<std::string>{"cmp", "u2", "a2", "u3", "a3", "u4", r.ids[0]}));
    EXPECT_EQ(last_text(ctx), "reply 4, retried");
}

// Forking inside the kept range leaves the compaction on the old branch: it no longer applies.
TEST_F(history_replacement_test, a_change_in_the_kept_range_leaves_the_compaction_on_the_old_branch)
{
    const auto t = compacted_session();
    open(t.text, config());
    auto host = messages_of(t.text, {"u2", "a2", "u3", "a3", "u4", "a4"});
    host.insert(host.begin(), summary_message("## Goal\nthe summary"));
    host[2] = with_result_text(host[2], "reply 2, edited");
    const auto [ec, r] = replace(host);
    ASSERT_FALSE(ec) << r.reason;
    EXPECT_EQ(r.shared, 2u);
    EXPECT_EQ(r.fork_id, "u2");
    ASSERT_EQ(r.ids.size(), 5u);  // a2', u3, a3, u4, a4
    const auto ids = context_ids();
    ASSERT_EQ(ids.size(), 10u);  // u0..u2 from the log, then the five new entries
    EXPECT_EQ(ids[0], "u0");
    EXPECT_EQ(ids[5], r.ids[0]);
    EXPECT_EQ(compaction::content_text(session_->context()[5].msg->content), "reply 2, edited");
    EXPECT_FALSE(session_->current()->compacted_at);
}

TEST_F(history_replacement_test, a_compaction_after_a_replacement_summarizes_the_new_branch)
{
    test::session_text t;
    for (int i = 0; i < 6; ++i)
        t.user("u" + std::to_string(i), tokens(100)).assistant("a" + std::to_string(i), tokens(100));
    t.tool_call(
         "c6", "call_6", "bash", {{"command", "make"}}
    ).tool_result("r6", "call_6", "bash", "OLD-RESULT");
    open(t.text, config());
    std::vector<std::string> order;
    for (int i = 0; i < 6; ++i)
    {
        order.push_back("u" + std::to_string(i));
        order.push_back("a" + std::to_string(i));
    }
    order.push_back("c6");
    order.push_back("r6");
    auto host = messages_of(t.text, order);
    host.back() = with_result_text(host.back(), "NEW-RESULT");
    for (int i = 7; i < 10; ++i)
    {
        host.push_back({{"role", "user"}, {"content", tokens(100)}, {"timestamp", 7}});
        host.push_back(
            {{"role", "assistant"},
             {"content", json::array{json::object{{"type", "text"}, {"text", tokens(100)}}}},
             {"api", "anthropic-messages"},
             {"provider", "anthropic"},
             {"model", "claude-sonnet-4-5"},
             {"stopReason", "stop"},
             {"timestamp", 8}}
        );
    }
    const auto [ec, r] = replace(host);
    ASSERT_FALSE(ec) << r.reason;
    ASSERT_EQ(r.ids.size(), 7u);
    bool done = false;
    compaction_outcome out;
    session_->async_compact(std::nullopt, [&](error_code e, compaction_outcome o) {
        EXPECT_FALSE(e) << e.message() << " " << o.message;
        out = std::move(o);
        done = true;
    });
    test::run_until(ioc_, [&] { return done; });
    ASSERT_TRUE(out.compacted) << out.message;
    ASSERT_EQ(summarizer_->calls(), 1u);
    const std::string prompt = summarizer_->prompts()[0].prompt;
    EXPECT_NE(prompt.find("NEW-RESULT"), std::string::npos);
    EXPECT_EQ(prompt.find("OLD-RESULT"), std::string::npos);
    // The compaction is on the new branch: the kept entries are the replacement's.
    const auto ids = context_ids();
    ASSERT_GE(ids.size(), 2u);
    EXPECT_EQ(ids[0], out.entry_id);
    EXPECT_EQ(ids.back(), r.ids.back());
}

// The unknown-outcome observation context() shows for an unanswered call is no entry: the host's
// real result in its place is appended after the batch, nothing else changes.
TEST_F(history_replacement_test, a_real_result_in_place_of_an_unknown_outcome_is_appended_after_the_call)
{
    test::session_text t;
    t.user("u0", "fix the build").tool_call("c1", "call_1", "bash", {{"command", "make"}});
    t.user("u1", "what happened?");
    open(t.text, config());
    ASSERT_EQ(session_->context().size(), 4u);  // u0, c1, the observation, u1
    auto host = messages_of(t.text, {"u0", "c1", "u1"});
    host.insert(
        host.begin() + 2,
        json::object{
            {"role", "toolResult"},
            {"toolCallId", "call_1"},
            {"toolName", "bash"},
            {"content", json::array{json::object{{"type", "text"}, {"text", "built"}}}},
            {"isError", false},
            {"timestamp", 3}}
    );
    const auto [ec, r] = replace(host);
    ASSERT_FALSE(ec) << r.reason;
    EXPECT_EQ(r.shared, 2u);
    EXPECT_EQ(r.fork_id, "c1");
    ASSERT_EQ(r.ids.size(), 2u);
    EXPECT_EQ(context_ids(), (std::vector<std::string>{"u0", "c1", r.ids[0], r.ids[1]}));
}

// Anthropic alternates roles: its wire view merges the summary and the next prompt into one user
// turn. That one message stands for both context messages.
TEST_F(history_replacement_test, a_user_turn_merged_from_the_summary_and_a_prompt_matches_both)
{
    const auto t = compacted_session();
    open(t.text, config());
    const auto framed = compaction::framed_summary(
        "## Goal\nthe summary", false, compaction::summary_framing::reference_history
    );
    auto host = messages_of(t.text, {"a2", "u3", "a3", "u4", "a4"});
    host.insert(
        host.begin(),
        json::object{
            {"role", "user"},
            {"content",
             json::array{
                 json::object{{"type", "text"}, {"text", framed}},
                 json::object{{"type", "text"}, {"text", "prompt 2"}}}},
            {"timestamp", 1}}
    );
    EXPECT_FALSE(replace(host).second.changed);  // the same conversation: nothing written
    host.back() = with_result_text(host.back(), "reply 4, retried");
    const auto [ec, r] = replace(host);
    ASSERT_FALSE(ec) << r.reason;
    EXPECT_EQ(r.shared, 5u);  // the merged turn, a2, u3, a3, u4
    EXPECT_EQ(r.fork_id, "u4");
    ASSERT_EQ(r.ids.size(), 1u);
    EXPECT_EQ(context_ids(), (std::vector<std::string>{"cmp", "u2", "a2", "u3", "a3", "u4", r.ids[0]}));
}
