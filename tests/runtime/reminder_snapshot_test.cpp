// Reminder snapshots (pinned.snapshotTypes): a newer snapshot of a key replaces the older ones in every view
// at once.
#include <agentctx/runtime/session.hpp>

#include "append_entry.hpp"
#include "open_session.hpp"
#include "run_until.hpp"
#include "session_text.hpp"

#include <agentctx/providers/chat_messages.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/json/serialize.hpp>

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
using test::tokens;

namespace {

class reminder_snapshot_test : public ::testing::Test
{
protected:
    void TearDown() override
    {
        for (const auto& p : paths_)
            fs::remove(p);
    }

    std::shared_ptr<session> open(
        const std::string& text, compaction::compat_mode mode, const std::string& name
    )
    {
        const auto path =
            fs::temp_directory_path() /
            ("agentctx-reminders-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name() + "-" + name + ".jsonl");
        paths_.push_back(path);
        std::ofstream(path, std::ios::binary) << text;
        session_config c;
        c.model = {"anthropic", "claude-sonnet-4-5", 200000, 0};
        c.pins.snapshot_types = {"todo", "status"};
        c.compat = mode;
        return test::open_session(ioc_.get_executor(), path, std::move(c));
    }

    static json::object snapshot_fields(const std::string& key, const std::string& text)
    {
        return {{"type", "custom_message"}, {"customType", key}, {"content", text}, {"display", false}};
    }

    // The context's custom messages: `key:tokens` each, in order.
    static std::vector<std::string> customs(const session& s)
    {
        std::vector<std::string> out;
        for (const auto& m : s.context())
            if (m.msg->role == compaction::role::custom)
                out.push_back(
                    m.msg->custom_type + ":" +
                    std::to_string(compaction::content_text(m.msg->content).size() / 4)
                );
        return out;
    }

    boost::asio::io_context ioc_;
    std::vector<fs::path> paths_;
};

// u0 (10), todo (50), a0 (20), todo (70), u1 (10); no usage: every figure is an estimate.
test::session_text two_todos()
{
    test::session_text t;
    t.user("u0", tokens(10));
    t.entry("custom_message", "todo1", {{"customType", "todo"}, {"content", tokens(50)}, {"display", false}});
    t.assistant("a0", tokens(20));
    t.entry("custom_message", "todo2", {{"customType", "todo"}, {"content", tokens(70)}, {"display", false}});
    t.user("u1", tokens(10));
    return t;
}

}  // namespace

TEST_F(
    reminder_snapshot_test,
    three_snapshots_of_one_key_leave_only_the_newest_and_the_figures_drop_by_the_older_ones
)
{
    const auto t = two_todos();
    auto s = open(t.text, compaction::compat_mode::agentctx, "ours");
    ASSERT_TRUE(s);
    // At open: todo1 is replaced by todo2.
    EXPECT_EQ(customs(*s), std::vector<std::string>{"todo:70"});
    EXPECT_EQ(s->current()->messages.size(), 4u);
    EXPECT_EQ(s->current()->context_tokens(), 10 + 20 + 70 + 10);
    // The third one, appended: todo2 leaves at once, no compaction involved.
    test::append_entry(ioc_, *s, snapshot_fields("todo", tokens(30)));
    EXPECT_EQ(customs(*s), std::vector<std::string>{"todo:30"});
    EXPECT_EQ(s->current()->messages.size(), 4u);
    EXPECT_EQ(s->current()->context_tokens(), 10 + 20 + 10 + 30);
    // Every wire view is built from the context: one reminder text in it.
    const auto wire =
        json::serialize(providers::to_wire_messages(providers::wire_format::openai, s->context()));
    EXPECT_EQ(wire.find(tokens(70)), std::string::npos);
    EXPECT_NE(wire.find(tokens(30)), std::string::npos);
}

TEST_F(reminder_snapshot_test, snapshots_of_different_keys_both_stay)
{
    auto t = two_todos();
    t.entry(
        "custom_message", "status1", {{"customType", "status"}, {"content", tokens(40)}, {"display", false}}
    );
    auto s = open(t.text, compaction::compat_mode::agentctx, "ours");
    ASSERT_TRUE(s);
    EXPECT_EQ(customs(*s), (std::vector<std::string>{"todo:70", "status:40"}));
    EXPECT_EQ(s->current()->context_tokens(), 10 + 20 + 70 + 10 + 40);
    test::append_entry(ioc_, *s, snapshot_fields("status", tokens(5)));
    EXPECT_EQ(customs(*s), (std::vector<std::string>{"todo:70", "status:5"}));
    EXPECT_EQ(s->current()->context_tokens(), 10 + 20 + 70 + 10 + 5);
}

TEST_F(reminder_snapshot_test, compat_pi_keeps_every_snapshot)
{
    const auto t = two_todos();
    auto s = open(t.text, compaction::compat_mode::pi, "pi");
    ASSERT_TRUE(s);
    EXPECT_EQ(customs(*s), (std::vector<std::string>{"todo:50", "todo:70"}));
    EXPECT_EQ(s->current()->context_tokens(), 10 + 50 + 20 + 70 + 10);
    test::append_entry(ioc_, *s, snapshot_fields("todo", tokens(30)));
    EXPECT_EQ(customs(*s), (std::vector<std::string>{"todo:50", "todo:70", "todo:30"}));
    EXPECT_EQ(s->current()->context_tokens(), 10 + 50 + 20 + 70 + 10 + 30);
}

// A usage that anchors the figures counted the reminder its request carried: the newer snapshot
// after it takes that one's estimate off; estimates after the anchor follow as well.
TEST_F(reminder_snapshot_test, an_anchoring_usage_loses_the_snapshot_its_request_carried)
{
    test::session_text t;
    t.user("u0", tokens(10));
    t.entry("custom_message", "todo1", {{"customType", "todo"}, {"content", tokens(50)}, {"display", false}});
    t.assistant("a0", tokens(20), 1000);
    t.user("u1", tokens(10));
    auto s = open(t.text, compaction::compat_mode::agentctx, "ours");
    ASSERT_TRUE(s);
    EXPECT_EQ(s->current()->context_tokens(), 1000 + 10);
    test::append_entry(ioc_, *s, snapshot_fields("todo", tokens(30)));
    EXPECT_EQ(customs(*s), std::vector<std::string>{"todo:30"});
    EXPECT_EQ(s->current()->context_tokens(), 1000 - 50 + 10 + 30);
}
