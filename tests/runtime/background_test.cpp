// Background compaction through the session: prepared ahead, committed at the threshold, discarded when
// stale.
#include <agentctx/runtime/error.hpp>
#include <agentctx/runtime/session.hpp>

#include "file_text.hpp"
#include "open_session.hpp"
#include "run_until.hpp"
#include "append_entry.hpp"
#include "scripted_summarizer.hpp"
#include "session_text.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
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
using test::script_step;
using test::tokens;

namespace {

// Events as short lines: `start:background`, `prepared`, `end:background:ok`,
// `end:background:discarded:branched`.
struct event_lines
{
    std::vector<std::string> lines;
    void operator()(const session_event& e)
    {
        if (const auto* s = std::get_if<compaction_start_event>(&e))
            lines.push_back(std::string("start:") + to_string(s->reason));
        else if (std::get_if<compaction_prepared_event>(&e))
            lines.push_back("prepared");
        else if (const auto* end = std::get_if<compaction_end_event>(&e))
            lines.push_back(
                std::string("end:") + to_string(end->reason) + (end->result ? ":ok" : "") +
                (end->aborted ? ":aborted" : "") +
                (end->discarded ? ":discarded:" + *end->discarded : std::string())
            );
    }
    std::size_t count(const std::string& line) const
    {
        return static_cast<std::size_t>(std::count(lines.begin(), lines.end(), line));
    }
};

struct outcome_result
{
    bool done = false;
    error_code ec;
    compaction_outcome outcome;
};

class background_test : public ::testing::Test
{
protected:
    void SetUp() override
    {
        dir_ = fs::temp_directory_path() / ("agentctx-background-" + std::to_string(::getpid()) + "-" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
        summarizer_ = std::make_shared<test::scripted_summarizer>(ioc_.get_executor());
    }
    void TearDown() override { fs::remove_all(dir_); }

    // Window 200000, reserve 16384: the threshold is 183616 and the background starts above 128531.
    session_config config()
    {
        session_config c;
        c.settings.keep_recent_tokens = 500;  // cuts at a user message: one summary request
        c.model = {"anthropic", "claude-sonnet-4-5", 200000, 0};
        c.settings.working_budget =
            compaction::token_amount{};  // 0: the window's threshold, which these tests pin
        c.summarizer = summarizer_;
        return c;
    }

    // Ten turns of ~200 tokens each.
    std::shared_ptr<session> open(session_config c, const std::string& name = "s.jsonl")
    {
        test::session_text t;
        for (int i = 0; i < 10; ++i)
            t.user("u" + std::to_string(i), tokens(100))
                .assistant("a" + std::to_string(i), tokens(100), i == 9 ? 2000 : 0);
        path_ = dir_ / name;
        std::ofstream(path_, std::ios::binary) << t.text;
        auto s = test::open_session(ioc_.get_executor(), path_, std::move(c));
        if (s)
            s->on_event(std::ref(events_));
        return s;
    }

    template <class Pred>
    void run_until(Pred done)
    {
        test::run_until(ioc_, done);
    }

    std::string append(session& s, json::object fields)
    {
        return test::append_entry(ioc_, s, std::move(fields));
    }

    // A user prompt and an answer reporting `total` tokens, then the turn-end check (not awaited).
    std::shared_ptr<outcome_result> turn(session& s, std::int64_t total, asio::cancellation_slot slot = {})
    {
        const double ts = 1768467800000.0 + 1000.0 * static_cast<double>(++turns_);
        append(
            s,
            {{"type", "message"},
             {"message", json::object{{"role", "user"}, {"content", tokens(50)}, {"timestamp", ts - 1}}}}
        );
        json::object m{
            {"role", "assistant"},
            {"content", json::array{json::object{{"type", "text"}, {"text", tokens(50)}}}},
            {"api", "anthropic-messages"},
            {"provider", "anthropic"},
            {"model", "claude-sonnet-4-5"},
            {"usage", test::session_text::usage(total)},
            {"stopReason", "stop"},
            {"timestamp", ts}};
        append(s, {{"type", "message"}, {"message", m}});
        compaction::diagnostics diag;
        auto msg = compaction::decode_message(m, "", diag).value();
        auto r = std::make_shared<outcome_result>();
        s.async_on_turn_end(
            std::move(msg),
            asio::bind_cancellation_slot(
                slot,
                [r](error_code ec, compaction_outcome o) {
                    r->done = true;
                    r->ec = ec;
                    r->outcome = std::move(o);
                }
            )
        );
        return r;
    }

    std::shared_ptr<outcome_result> compact(session& s)
    {
        auto r = std::make_shared<outcome_result>();
        s.async_compact(std::nullopt, [r](error_code ec, compaction_outcome o) {
            r->done = true;
            r->ec = ec;
            r->outcome = std::move(o);
        });
        run_until([&] { return r->done; });
        return r;
    }

    std::shared_ptr<outcome_result> finished_turn(session& s, std::int64_t total)
    {
        auto r = turn(s, total);
        run_until([&] { return r->done; });
        return r;
    }

    // Starts a background compaction and runs until its result is prepared.
    void prepare(session& s)
    {
        const auto r = finished_turn(s, 150000);
        EXPECT_EQ(r->outcome.reason, compaction_reason::background);
        EXPECT_FALSE(r->outcome.compacted);
        run_until([&] { return events_.count("prepared") == 1; });
    }

    std::size_t compactions_in_file() const
    {
        const auto text = test::read_text(path_);
        std::size_t n = 0;
        for (std::size_t at = text.find("\"type\":\"compaction\""); at != std::string::npos;
             at = text.find("\"type\":\"compaction\"", at + 1))
            ++n;
        return n;
    }

    asio::io_context ioc_;
    fs::path dir_, path_;
    std::shared_ptr<test::scripted_summarizer> summarizer_;
    event_lines events_;
    int turns_ = 0;
};

TEST_F(background_test, a_ready_result_commits_at_the_threshold_with_no_model_call)
{
    auto s = open(config());
    ASSERT_TRUE(s);
    prepare(*s);
    EXPECT_EQ(summarizer_->calls(), 1u);
    EXPECT_EQ(compactions_in_file(), 0u);  // held, not written
    const auto calls_before = summarizer_->calls();
    const auto r = finished_turn(*s, 190000);
    EXPECT_FALSE(r->ec) << r->ec.message();
    EXPECT_TRUE(r->outcome.compacted);
    EXPECT_EQ(r->outcome.reason, compaction_reason::threshold);
    EXPECT_EQ(summarizer_->calls(), calls_before);  // nothing on the critical path
    EXPECT_EQ(compactions_in_file(), 1u);
    EXPECT_EQ(events_.lines, (std::vector<std::string>{"start:background", "prepared", "end:background:ok"}));
    const auto text = test::read_text(path_);
    EXPECT_NE(text.find("\"reason\":\"background\""), std::string::npos);
    EXPECT_EQ(s->current()->messages[0].msg->role, compaction::role::compaction_summary);
}

TEST_F(background_test, a_running_one_is_awaited_not_duplicated)
{
    summarizer_->set_default({.delay = std::chrono::milliseconds(150)});
    auto s = open(config());
    ASSERT_TRUE(s);
    const auto first = finished_turn(*s, 150000);  // returns at once: the summary is still running
    EXPECT_EQ(first->outcome.reason, compaction_reason::background);
    EXPECT_TRUE(events_.lines == std::vector<std::string>{"start:background"});
    const auto r = turn(*s, 190000);
    run_until([&] { return r->done; });
    EXPECT_FALSE(r->ec) << r->ec.message();
    EXPECT_TRUE(r->outcome.compacted);
    EXPECT_EQ(summarizer_->calls(), 1u);
    EXPECT_EQ(compactions_in_file(), 1u);
    EXPECT_EQ(events_.lines, (std::vector<std::string>{"start:background", "prepared", "end:background:ok"}));
}

TEST_F(background_test, appends_during_the_summary_join_the_kept_suffix)
{
    summarizer_->set_default({.delay = std::chrono::milliseconds(100)});
    auto s = open(config());
    ASSERT_TRUE(s);
    finished_turn(*s, 150000);
    std::vector<std::string> later;
    for (int i = 0; i < 3; ++i)  // the summary is still running
        later.push_back(append(
            *s,
            {{"type", "message"},
             {"message", json::object{{"role", "user"}, {"content", "LATER-" + std::to_string(i)}}}}
        ));
    run_until([&] { return events_.count("prepared") == 1; });
    const auto r = finished_turn(*s, 190000);
    ASSERT_TRUE(r->outcome.compacted);
    EXPECT_EQ(summarizer_->calls(), 1u);
    // None of them reached the summarizer; all of them are in the context after the summary.
    EXPECT_EQ(summarizer_->prompts().front().prompt.find("LATER-"), std::string::npos);
    std::vector<std::string> in_context;
    const auto snap = s->current();
    for (std::size_t i = 0; i < snap->messages.size(); ++i)
        in_context.push_back(snap->messages[i].entry_id);
    for (const auto& id : later)
        EXPECT_NE(std::find(in_context.begin(), in_context.end(), id), in_context.end()) << id;
}

TEST_F(background_test, a_branch_discards_it_and_writes_nothing)
{
    auto s = open(config());
    ASSERT_TRUE(s);
    prepare(*s);
    bool done = false;
    s->async_branch_from("a5", [&](error_code ec) {
        EXPECT_FALSE(ec);
        done = true;
    });
    run_until([&] { return done; });
    const auto before = test::read_text(path_);
    finished_turn(*s, 2000);  // the next check reports it
    EXPECT_EQ(events_.count("end:background:discarded:branched"), 1u);
    EXPECT_EQ(compactions_in_file(), 0u);
    // The turn's own two appends are the only change.
    const auto after = test::read_text(path_);
    EXPECT_EQ(after.substr(0, before.size()), before);
    EXPECT_EQ(std::count(after.begin() + static_cast<std::ptrdiff_t>(before.size()), after.end(), '\n'), 2);
}

TEST_F(background_test, an_edit_of_the_covered_range_discards_it_and_writes_nothing)
{
    auto s = open(config());
    ASSERT_TRUE(s);
    prepare(*s);
    append(*s, {{"type", "context_edit"}, {"targetId", "a1"}, {"replacement", nullptr}});
    const auto before = test::read_text(path_);
    const auto r =
        finished_turn(*s, 190000);  // at the threshold: discarded, then compacted in the foreground
    EXPECT_EQ(events_.count("end:background:discarded:edited"), 1u);
    EXPECT_TRUE(r->outcome.compacted);
    EXPECT_GT(summarizer_->calls(), 1u);  // the foreground pass summarized again
    EXPECT_EQ(events_.lines.back(), "end:threshold:ok");
    EXPECT_EQ(compactions_in_file(), 1u);  // the foreground one only
    EXPECT_EQ(test::read_text(path_).substr(0, before.size()), before);
}

TEST_F(background_test, a_manual_compaction_supersedes_a_prepared_one)
{
    auto s = open(config());
    ASSERT_TRUE(s);
    prepare(*s);
    const auto r = compact(*s);
    EXPECT_TRUE(r->outcome.compacted);
    EXPECT_EQ(events_.count("end:background:discarded:superseded"), 1u);
    EXPECT_EQ(compactions_in_file(), 1u);
    EXPECT_EQ(test::read_text(path_).find("\"reason\":\"background\""), std::string::npos);
}

TEST_F(background_test, a_manual_compaction_cancels_a_running_one)
{
    summarizer_->push({.kind = script_step::hang});
    auto s = open(config());
    ASSERT_TRUE(s);
    finished_turn(*s, 150000);
    run_until([&] { return summarizer_->calls() == 1; });
    const auto r = compact(*s);
    EXPECT_TRUE(r->outcome.compacted);
    EXPECT_EQ(summarizer_->cancellations(), 1);
    EXPECT_EQ(events_.count("end:background:aborted:discarded:superseded"), 1u);
    EXPECT_EQ(compactions_in_file(), 1u);
}

TEST_F(background_test, abort_and_close_cancel_a_running_one_and_write_nothing)
{
    for (const bool closing : {false, true})
    {
        summarizer_->push({.kind = script_step::hang});
        events_.lines.clear();
        auto s = open(config(), closing ? "closed.jsonl" : "aborted.jsonl");
        ASSERT_TRUE(s);
        finished_turn(*s, 150000);
        run_until([&] { return summarizer_->calls() > 0; });
        const auto before = test::read_text(path_);
        if (closing)
            s->close();
        else
            s->abort_compaction();
        const std::string want =
            std::string("end:background:aborted:discarded:") + (closing ? "closed" : "cancelled");
        run_until([&] { return events_.count(want) == 1; });
        EXPECT_EQ(test::read_text(path_), before);
        s.reset();
        summarizer_ = std::make_shared<test::scripted_summarizer>(ioc_.get_executor());
    }
}

TEST_F(background_test, a_waiting_caller_cancelled_ends_its_wait_and_the_result_stays_prepared)
{
    for (const auto type :
         {asio::cancellation_type::terminal,
          asio::cancellation_type::partial,
          asio::cancellation_type::total})
    {
        summarizer_->set_default({.delay = std::chrono::milliseconds(100)});
        events_.lines.clear();
        auto s = open(config(), "s" + std::to_string(static_cast<int>(type)) + ".jsonl");
        ASSERT_TRUE(s);
        finished_turn(*s, 150000);
        asio::cancellation_signal sig;
        const auto r = turn(*s, 190000, sig.slot());
        sig.emit(type);
        run_until([&] { return r->done; });
        EXPECT_EQ(r->ec, make_error_code(errc::cancelled)) << static_cast<int>(type);
        run_until([&] { return events_.count("prepared") == 1; });
        EXPECT_EQ(compactions_in_file(), 0u);
        const auto next = finished_turn(*s, 191000);  // the next check commits it, still one call
        EXPECT_TRUE(next->outcome.compacted);
        EXPECT_EQ(summarizer_->calls(), 1u);
        s->close();
        run_until([&] { return true; });
        s.reset();
        summarizer_ = std::make_shared<test::scripted_summarizer>(ioc_.get_executor());
    }
}

TEST_F(background_test, when_ready_commits_as_soon_as_it_is_validated)
{
    auto c = config();
    c.settings.background.commit = compaction::background_commit::when_ready;
    auto s = open(std::move(c));
    ASSERT_TRUE(s);
    finished_turn(*s, 150000);
    run_until([&] { return events_.count("end:background:ok") == 1; });
    EXPECT_EQ(compactions_in_file(), 1u);
    EXPECT_EQ(events_.lines, (std::vector<std::string>{"start:background", "prepared", "end:background:ok"}));
}

TEST_F(background_test, off_in_pi_compatibility_and_when_disabled)
{
    for (const bool pi : {true, false})
    {
        auto c = config();
        if (pi)
            c.compat = compaction::compat_mode::pi;
        else
            c.settings.background.enabled = false;
        events_.lines.clear();
        auto s = open(std::move(c), pi ? "pi.jsonl" : "off.jsonl");
        ASSERT_TRUE(s);
        const auto r = finished_turn(*s, 150000);
        EXPECT_EQ(r->outcome.message, "under the threshold");
        EXPECT_EQ(summarizer_->calls(), 0u);
        EXPECT_TRUE(events_.lines.empty());
    }
}

TEST_F(background_test, overflow_uses_a_ready_result)
{
    auto s = open(config());
    ASSERT_TRUE(s);
    prepare(*s);
    auto r = std::make_shared<outcome_result>();
    s->async_recover_overflow(
        "prompt is too long: 213462 tokens > 200000 maximum",
        [r](error_code ec, compaction_outcome o) {
            r->done = true;
            r->ec = ec;
            r->outcome = std::move(o);
        }
    );
    run_until([&] { return r->done; });
    EXPECT_FALSE(r->ec) << r->ec.message();
    EXPECT_TRUE(r->outcome.compacted);
    EXPECT_TRUE(r->outcome.will_retry);
    EXPECT_EQ(r->outcome.reason, compaction_reason::overflow);
    EXPECT_EQ(summarizer_->calls(), 1u);
    EXPECT_EQ(events_.lines.back(), "end:background:ok");
}

}  // namespace

// A long autonomous turn: u1 then seven exchanges. Planned at 150,000 tokens, the background cut
// keeps nothing beyond what arrives until the threshold; the exchange rule then keeps the last
// four, which splits the turn with a prefix (u1 and three rounds, ~330 tokens) under
// keepRecentTokens (500): the turn is kept whole and one summary request covers u0 a0, where a
// split turn would have made a second one for its prefix.
TEST_F(background_test, a_background_cut_keeps_a_small_split_turn_whole_with_one_request)
{
    test::session_text t;
    t.user("u0", tokens(100)).assistant("a0", tokens(100));
    t.user("u1", tokens(20));
    for (int i = 0; i < 6; ++i)
    {
        const auto n = std::to_string(i);
        t.tool_call("c" + n, "call" + n, "read", {{"path", "f" + n}});
        t.tool_result("r" + n, "call" + n, "read", tokens(100));
    }
    t.assistant("done", tokens(10), 150000);
    path_ = dir_ / "turn.jsonl";
    std::ofstream(path_, std::ios::binary) << t.text;
    auto s = test::open_session(ioc_.get_executor(), path_, config());
    ASSERT_TRUE(s);
    std::string first_kept;
    s->on_event([&](const session_event& e) {
        if (const auto* p = std::get_if<compaction_prepared_event>(&e))
            first_kept = p->first_kept_entry_id;
    });
    auto r = std::make_shared<outcome_result>();
    s->async_on_turn_end(*s->current()->messages.back().msg, [r](error_code ec, compaction_outcome o) {
        r->done = true;
        r->ec = ec;
        r->outcome = std::move(o);
    });
    run_until([&] { return r->done && !first_kept.empty(); });
    EXPECT_EQ(r->outcome.reason, compaction_reason::background);
    EXPECT_EQ(first_kept, "u1");
    EXPECT_EQ(summarizer_->calls(), 1u);
}
