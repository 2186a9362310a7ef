// The tool-result clearing tier on a session: one batch of context edits, the event, the originals, the
// limits.
#include <agentctx/compaction/error.hpp>
#include <agentctx/providers/offline_summarizer.hpp>
#include <agentctx/runtime/session.hpp>

#include "append_entry.hpp"
#include "clearing_messages.hpp"
#include "file_text.hpp"
#include "open_session.hpp"
#include "run_until.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

using namespace agentctx;
namespace json = boost::json;
namespace fs = std::filesystem;
using boost::system::error_code;

namespace {

using test::clearing::assistant;
using test::clearing::message;
using test::clearing::result;

json::object call(const std::string& id, const std::string& path)
{
    return {{"type", "toolCall"}, {"id", id}, {"name", "read"}, {"arguments", json::object{{"path", path}}}};
}

class clearing_test : public ::testing::Test
{
protected:
    void SetUp() override
    {
        path_ = test::new_session_file("agentctx-clearing");
        config_.model = {"anthropic", "claude-sonnet-4-5", 100000, 8000};  // threshold 83,616
        config_.settings.working_budget = compaction::token_amount{};      // 0: the window's threshold
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
        });
    }

    std::string add(json::object fields) { return test::append_entry(ioc_, *session_, std::move(fields)); }

    // A prompt and `n` rounds of one 4,000-token read each; ids of the results.
    std::vector<std::string> rounds(int n)
    {
        add(message({{"role", "user"}, {"content", "fix it"}}));
        std::vector<std::string> ids;
        for (int i = 1; i <= n; ++i)
        {
            const auto k = std::to_string(i);
            add(assistant(json::array{call("c" + k, "src/f" + k + ".cpp")}));
            ids.push_back(add(result("c" + k, 4000)));
        }
        return ids;
    }

    template <class Op>
    std::pair<error_code, runtime::compaction_outcome> check(Op op)
    {
        std::pair<error_code, runtime::compaction_outcome> out;
        bool done = false;
        op([&](error_code ec, runtime::compaction_outcome o) {
            out = {ec, std::move(o)};
            done = true;
        });
        test::run_until(ioc_, [&] { return done; });
        return out;
    }

    std::pair<error_code, runtime::compaction_outcome> turn_end()
    {
        return check([this](auto h) { session_->async_on_turn_end(std::move(h)); });
    }

    // The run's final answer, its request `input` tokens by usage, then the post-run check.
    std::pair<error_code, runtime::compaction_outcome> answer(std::int64_t input)
    {
        add(assistant(json::array{json::object{{"type", "text"}, {"text", "done"}}}, input));
        return turn_end();
    }

    std::string text_of(const std::string& entry_id) const
    {
        for (const auto& m : session_->context())
            if (m.entry_id == entry_id)
                return compaction::content_text(m.msg->content);
        return "(not in context)";
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
};

}  // namespace

TEST_F(clearing_test, a_turn_end_over_the_trigger_clears_old_results_in_one_batch)
{
    open();
    const auto ids = rounds(5);
    const auto [ec, outcome] = answer(25000);
    EXPECT_FALSE(ec);
    EXPECT_FALSE(outcome.compacted);
    ASSERT_EQ(cleared_.size(), 1u);
    EXPECT_EQ(cleared_[0].results, 3);
    EXPECT_EQ(cleared_[0].target_ids, (std::vector<std::string>{ids[0], ids[1], ids[2]}));
    EXPECT_EQ(cleared_[0].tokens_before, 25100);
    const std::string placeholder =
        "[Tool result cleared: read(path: src/f1.cpp), 16000 chars (~4000 tokens); the original is entry " +
        ids[0] + "]";
    EXPECT_EQ(cleared_[0].tokens, 3 * 4000 - 3 * static_cast<std::int64_t>((placeholder.size() + 3) / 4));
    EXPECT_EQ(text_of(ids[0]), placeholder);
    EXPECT_EQ(text_of(ids[3]), std::string(16000, 'x'));  // the two newest are kept
    // One batch: three edits, each the child of the one before, the last the leaf.
    ASSERT_EQ(cleared_[0].edit_ids.size(), 3u);
    EXPECT_EQ(edit_lines(), 3u);
    const auto text = test::read_text(path_);
    EXPECT_NE(
        text.find(
            "\"id\":\"" + cleared_[0].edit_ids[1] + "\",\"parentId\":\"" + cleared_[0].edit_ids[0] + "\""
        ),
        std::string::npos
    );
    EXPECT_EQ(session_->current()->leaf_id, cleared_[0].edit_ids[2]);
    // The original stays in the file and is one call away.
    std::pair<error_code, json::object> original;
    bool done = false;
    session_->async_original(ids[0], [&](error_code e, json::object o) {
        original = {e, std::move(o)};
        done = true;
    });
    test::run_until(ioc_, [&] { return done; });
    ASSERT_FALSE(original.first);
    EXPECT_EQ(original.second.at("message").at("content").at(0).at("text").as_string().size(), 16000u);
    // A second check finds nothing more to clear (the rest is kept or already cleared).
    answer(25000);
    EXPECT_EQ(cleared_.size(), 1u);
    EXPECT_EQ(edit_lines(), 3u);
}

TEST_F(clearing_test, compat_pi_never_clears)
{
    config_.compat = compaction::compat_mode::pi;
    config_.settings.clear_tool_results.enabled = true;
    open();
    const auto ids = rounds(5);
    answer(25000);
    EXPECT_TRUE(cleared_.empty());
    EXPECT_EQ(edit_lines(), 0u);
    EXPECT_EQ(text_of(ids[0]), std::string(16000, 'x'));
}

TEST_F(clearing_test, under_the_trigger_or_disabled_nothing_is_cleared)
{
    config_.settings.clear_tool_results.enabled = false;
    open();
    rounds(5);
    answer(25000);
    EXPECT_TRUE(cleared_.empty());
    EXPECT_EQ(edit_lines(), 0u);
}

TEST_F(clearing_test, between_turns_never_clears_the_running_batch)
{
    config_.settings.clear_tool_results.keep = 0;
    open();
    const auto ids = rounds(4);
    // The running batch: one assistant message calling two tools, both answered.
    add(assistant(json::array{call("c5", "a"), call("c6", "b")}));
    const auto r5 = add(result("c5", 4000));
    const auto r6 = add(result("c6", 4000));
    const auto [ec, outcome] = check([this](auto h) { session_->async_between_turns(std::move(h)); });
    EXPECT_FALSE(ec);
    ASSERT_EQ(cleared_.size(), 1u);
    EXPECT_EQ(cleared_[0].target_ids, ids);
    EXPECT_EQ(text_of(r5), std::string(16000, 'x'));
    EXPECT_EQ(text_of(r6), std::string(16000, 'x'));
}

TEST_F(clearing_test, required_and_pinned_entries_are_never_cleared)
{
    config_.required.predicate = [](const compaction::entry& e) {
        return e.message && e.message->tool_call_id == "c1";
    };
    open();
    const auto ids = rounds(5);
    answer(25000);
    ASSERT_EQ(cleared_.size(), 1u);
    EXPECT_EQ(cleared_[0].target_ids, (std::vector<std::string>{ids[1], ids[2]}));
    EXPECT_EQ(text_of(ids[0]), std::string(16000, 'x'));
}

TEST_F(clearing_test, a_running_jobs_launch_result_is_never_cleared)
{
    // The first read launches a job (its id is the path); nothing reports it complete.
    compaction::job_rule rule;
    rule.launches = [](const compaction::tool_call_block& c) { return c.id == "c1"; };
    rule.id_field = "path";
    rule.completion_custom_types = {"job_done"};
    config_.jobs.rules = {rule};
    open();
    const auto ids = rounds(5);
    answer(25000);
    ASSERT_EQ(cleared_.size(), 1u);
    EXPECT_EQ(cleared_[0].target_ids, (std::vector<std::string>{ids[1], ids[2]}));
    EXPECT_EQ(text_of(ids[0]), std::string(16000, 'x'));
}

TEST_F(clearing_test, clearing_first_can_spare_the_summary)
{
    // Over the threshold by usage; with clearing, the estimate falls under it and no summary runs.
    open();
    rounds(8);
    const auto [ec, outcome] = answer(90000);
    EXPECT_FALSE(ec);
    EXPECT_FALSE(outcome.compacted);
    ASSERT_EQ(cleared_.size(), 1u);
    EXPECT_EQ(cleared_[0].results, 6);
    EXPECT_LT(session_->current()->context_tokens(), 83616);
}

TEST_F(clearing_test, without_clearing_the_same_turn_compacts)
{
    config_.settings.clear_tool_results.enabled = false;
    open();
    rounds(8);
    const auto [ec, outcome] = answer(90000);
    EXPECT_FALSE(ec) << outcome.message;
    EXPECT_TRUE(outcome.compacted);
    EXPECT_TRUE(cleared_.empty());
}

TEST_F(clearing_test, an_unknown_original_is_not_found)
{
    open();
    std::pair<error_code, json::object> original;
    bool done = false;
    session_->async_original("nope", [&](error_code e, json::object o) {
        original = {e, std::move(o)};
        done = true;
    });
    test::run_until(ioc_, [&] { return done; });
    EXPECT_EQ(original.first, compaction::make_error_code(compaction::errc::entry_not_found));
    EXPECT_TRUE(original.second.empty());
}

TEST_F(clearing_test, a_working_budget_compacts_below_the_window_threshold_in_agentctx_mode_only)
{
    config_.settings.clear_tool_results.enabled = false;
    config_.settings.working_budget = compaction::token_amount{30000, 0};
    config_.settings.keep_recent_tokens = 5000;
    open();
    rounds(8);
    const auto [ec, outcome] = answer(35000);  // under 83,616, over 30,000
    EXPECT_FALSE(ec) << outcome.message;
    EXPECT_TRUE(outcome.compacted);
}

TEST_F(clearing_test, compat_pi_ignores_the_working_budget)
{
    config_.compat = compaction::compat_mode::pi;
    config_.settings.working_budget = compaction::token_amount{30000, 0};
    open();
    rounds(8);
    const auto [ec, outcome] = answer(35000);
    EXPECT_FALSE(ec);
    EXPECT_FALSE(outcome.compacted);
    EXPECT_EQ(outcome.message, "under the threshold");
}
