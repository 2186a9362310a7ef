// Write-turn races: a cancellation or close() that comes while a commit waits for the write turn
// writes nothing; branch navigation stores its entries before it moves the leaf.
#include <agentctx/runtime/error.hpp>
#include <agentctx/runtime/session.hpp>

#include "controlled_store.hpp"
#include "run_until.hpp"
#include "scripted_summarizer.hpp"
#include "session_text.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>

#include <gtest/gtest.h>

#include <algorithm>

using namespace agentctx;
using namespace agentctx::runtime;
namespace asio = boost::asio;
namespace json = boost::json;
using boost::system::error_code;
using test::tokens;

namespace {

std::size_t lines(const std::string& text)
{
    return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

class write_turn_test : public ::testing::Test
{
protected:
    void SetUp() override { summarizer_ = std::make_shared<test::scripted_summarizer>(ioc_.get_executor()); }

    std::shared_ptr<session> open()
    {
        test::session_text t;
        for (int i = 0; i < 10; ++i)
            t.user("u" + std::to_string(i), tokens(100))
                .assistant("a" + std::to_string(i), tokens(100), i == 9 ? 3000 : 0);
        auto st = std::make_unique<test::controlled_store>(t.text, control_);
        store_ = st.get();
        session_config c;
        c.settings.keep_recent_tokens = 400;
        c.model = {"anthropic", "claude-sonnet-4-5", 200000, 0};
        c.summarizer = summarizer_;
        compaction::diagnostics diag;
        return session::open(ioc_.get_executor(), std::move(st), std::move(c), diag).value();
    }

    // Runs every ready handler; returns when none is left (the rest wait on the held store).
    void drain()
    {
        ioc_.restart();
        while (ioc_.poll() > 0)
            ioc_.restart();
    }

    // Holds the store, starts an append (it takes the write turn and waits in the store), then a
    // manual compaction whose summary is ready: it waits for the write turn behind the append.
    struct race
    {
        std::optional<error_code> append;
        std::optional<std::pair<error_code, compaction_outcome>> compact;
    };
    std::shared_ptr<race> compaction_behind_a_held_append(session& s, asio::cancellation_signal& cancel)
    {
        auto r = std::make_shared<race>();
        control_->hold = true;
        s.async_append(
            json::object{
                {"type", "message"},
                {"message",
                 json::object{{"role", "user"}, {"content", "while it compacts"}, {"timestamp", 1.0}}}},
            [r](error_code ec, std::string) { r->append = ec; }
        );
        s.async_compact(
            std::nullopt,
            asio::bind_cancellation_slot(
                cancel.slot(),
                [r](error_code ec, compaction_outcome o) { r->compact.emplace(ec, std::move(o)); }
            )
        );
        drain();
        EXPECT_EQ(summarizer_->calls(), 1u);   // summarized: only the write turn is left
        EXPECT_EQ(control_->held.size(), 1u);  // the append's write, nothing of the compaction's
        EXPECT_FALSE(r->compact);
        return r;
    }

    asio::io_context ioc_;
    std::shared_ptr<test::scripted_summarizer> summarizer_;
    std::shared_ptr<test::store_control> control_ = std::make_shared<test::store_control>();
    test::controlled_store* store_ = nullptr;
};

TEST_F(write_turn_test, a_cancellation_while_the_commit_waits_for_the_write_turn_writes_nothing)
{
    auto s = open();
    const auto before = lines(store_->text());
    asio::cancellation_signal cancel;
    auto r = compaction_behind_a_held_append(*s, cancel);
    cancel.emit(asio::cancellation_type::terminal);
    drain();
    control_->release();
    test::run_until(ioc_, [&] { return r->append && r->compact; });
    drain();
    EXPECT_FALSE(*r->append);
    EXPECT_EQ(r->compact->first, make_error_code(errc::cancelled)) << r->compact->second.message;
    EXPECT_FALSE(r->compact->second.compacted);
    EXPECT_EQ(control_->writes, 1u);  // the append's only
    EXPECT_EQ(lines(store_->text()), before + 1);
    EXPECT_EQ(store_->text().find(R"("type":"compaction")"), std::string::npos);
    EXPECT_EQ(s->current()->entry_count, 21u);
}

TEST_F(write_turn_test, a_close_while_the_commit_waits_for_the_write_turn_writes_nothing)
{
    auto s = open();
    const auto before = lines(store_->text());
    asio::cancellation_signal unused;
    auto r = compaction_behind_a_held_append(*s, unused);
    s->close();
    drain();
    control_->release();
    test::run_until(ioc_, [&] { return r->append && r->compact; });
    drain();
    EXPECT_FALSE(*r->append);
    EXPECT_EQ(r->compact->first, make_error_code(errc::cancelled)) << r->compact->second.message;
    EXPECT_EQ(control_->writes, 1u);
    EXPECT_EQ(lines(store_->text()), before + 1);
    EXPECT_EQ(store_->text().find(R"("type":"compaction")"), std::string::npos);
}

TEST_F(write_turn_test, a_failed_write_of_the_branch_summary_leaves_the_leaf_where_it_was)
{
    auto s = open();
    bool branched = false;
    s->on_branched([&](const branched_event&) { branched = true; });
    const auto before = store_->text();
    control_->fail = true;
    std::optional<std::pair<error_code, std::string>> out;
    s->async_branch_from(
        "u5",
        branch_options{.summarize = true, .label = std::string("checkpoint")},
        [&](error_code ec, std::string id) { out.emplace(ec, std::move(id)); }
    );
    test::run_until(ioc_, [&] { return out.has_value(); });
    EXPECT_EQ(out->first, make_error_code(errc::io_error)) << out->second;
    EXPECT_EQ(summarizer_->calls(), 1u);
    EXPECT_EQ(control_->writes, 1u);  // summary and label in one write
    EXPECT_EQ(s->current()->leaf_id, "a9");
    EXPECT_EQ(s->current()->entry_count, 20u);
    EXPECT_EQ(store_->text(), before);
    EXPECT_FALSE(branched);
    // The same navigation goes through once the store writes: summary, then label on it.
    control_->fail = false;
    out.reset();
    s->async_branch_from(
        "u5",
        branch_options{.summarize = true, .label = std::string("checkpoint")},
        [&](error_code ec, std::string id) { out.emplace(ec, std::move(id)); }
    );
    test::run_until(ioc_, [&] { return out.has_value(); });
    ASSERT_FALSE(out->first) << out->second;
    EXPECT_EQ(s->current()->entry_count, 22u);
    EXPECT_NE(s->current()->leaf_id, "a9");
    EXPECT_NE(store_->text().find(R"("type":"branch_summary")"), std::string::npos);
    EXPECT_NE(
        store_->text().find(R"("targetId":")" + out->second + R"(","label":"checkpoint")"), std::string::npos
    );
    EXPECT_TRUE(branched);
}

}  // namespace
