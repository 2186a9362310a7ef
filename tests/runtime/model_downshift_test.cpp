// Model downshift: the pure decision, and the session compacting with the previous model's budgets after a
// switch.
#include <agentctx/compaction/error.hpp>
#include <agentctx/compaction/summary_prompt.hpp>
#include <agentctx/runtime/error.hpp>
#include <agentctx/runtime/session.hpp>

#include "model_downshift.hpp"

#include "append_entry.hpp"
#include "open_session.hpp"
#include "run_until.hpp"
#include "scripted_summarizer.hpp"
#include "session_text.hpp"

#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace agentctx;
using namespace agentctx::runtime;
namespace asio = boost::asio;
namespace json = boost::json;
namespace fs = std::filesystem;
using boost::system::error_code;
using runtime::detail::decide_downshift;
using runtime::detail::downshift_action;
using test::tokens;

namespace {

const model_identity big{"anthropic", "claude-sonnet-4-5", 200000, 16384};
const model_identity small{"anthropic", "claude-haiku-4-5", 2500, 8192};  // threshold 1500 with reserve 1000
const model_identity tiny{"anthropic", "claude-tiny", 1200, 4096};        // allowance 200
const model_identity huge{"anthropic", "claude-huge", 1000000, 65536};

compaction::compaction_settings settings_with(std::int64_t reserve)
{
    compaction::compaction_settings s;
    s.reserve_tokens = reserve;
    s.working_budget = compaction::token_amount{};  // off: the window's threshold
    return s;
}

}  // namespace

TEST(model_downshift_decision, compacts_when_the_context_exceeds_the_smaller_windows_threshold)
{
    const auto s = settings_with(1000);
    EXPECT_EQ(decide_downshift({big, small, 1501, &s}), downshift_action::compact_with_previous);
    EXPECT_EQ(decide_downshift({big, small, 1500, &s}), downshift_action::none);  // equal: fits
    EXPECT_EQ(decide_downshift({big, small, 1499, &s}), downshift_action::none);
}

TEST(model_downshift_decision, the_working_budget_is_the_new_models_threshold_in_agentctx_mode)
{
    auto s = settings_with(1000);
    s.working_budget = compaction::token_amount{.tokens = 1200};
    EXPECT_EQ(decide_downshift({big, small, 1201, &s}), downshift_action::compact_with_previous);
    EXPECT_EQ(decide_downshift({big, small, 1200, &s}), downshift_action::none);
}

TEST(model_downshift_decision, never_for_pi_a_bigger_or_equal_window_or_an_unknown_model)
{
    const auto s = settings_with(1000);
    EXPECT_EQ(decide_downshift({big, small, 5000, &s, compaction::compat_mode::pi}), downshift_action::none);
    EXPECT_EQ(decide_downshift({big, huge, 999999, &s}), downshift_action::none);
    EXPECT_EQ(decide_downshift({big, big, 250000, &s}), downshift_action::none);
    model_identity unknown{"x", "y", 0, 0};
    EXPECT_EQ(decide_downshift({big, unknown, 5000, &s}), downshift_action::none);
    EXPECT_EQ(decide_downshift({unknown, small, 5000, &s}), downshift_action::none);
}

namespace {

struct outcome_result
{
    bool done = false;
    error_code ec;
    compaction_outcome outcome;
};

class model_change_session : public ::testing::Test
{
protected:
    void SetUp() override
    {
        path_ = test::new_session_file("agentctx-downshift");
        summarizer_ = std::make_shared<test::scripted_summarizer>(ioc_.get_executor());
    }
    void TearDown() override { fs::remove(path_); }

    // Ten turns of ~200 tokens; the last assistant reports a 2000-token context.
    static std::string turns_text()
    {
        test::session_text s;
        for (int i = 0; i < 10; ++i)
            s.user("u" + std::to_string(i), tokens(100))
                .assistant("a" + std::to_string(i), tokens(100), i == 9 ? 2000 : 0);
        return s.text;
    }

    session_config config(compaction::compat_mode compat = compaction::compat_mode::agentctx)
    {
        session_config c;
        c.settings = settings_with(1000);
        c.settings.keep_recent_tokens = 400;  // cuts at u8: whole turns, one model call
        c.model = big;
        c.models = {small};
        c.summarizer = summarizer_;
        c.compat = compat;
        return c;
    }

    std::shared_ptr<session> open(const std::string& text, session_config c)
    {
        std::ofstream(path_, std::ios::binary) << text;  // session_text begins with its header
        auto s = test::open_session(ioc_.get_executor(), path_, std::move(c));
        if (s)
            s->on_event([this](const session_event& e) {
                if (const auto* st = std::get_if<compaction_start_event>(&e))
                    events_.push_back(std::string("start:") + to_string(st->reason));
                else if (const auto* end = std::get_if<compaction_end_event>(&e))
                    events_.push_back(
                        std::string("end:") + to_string(end->reason) + (end->result ? ":ok" : "")
                    );
                else if (const auto* b = std::get_if<budget_exceeded_event>(&e))
                    shortfalls_.push_back(*b);
            });
        return s;
    }

    std::string change(session& s, const model_identity& m)
    {
        std::string id;
        bool done = false;
        error_code ec;
        s.async_change_model(m, [&](error_code e, std::string i) {
            done = true;
            ec = e;
            id = std::move(i);
        });
        test::run_until(ioc_, [&] { return done; });
        EXPECT_FALSE(ec) << ec.message();
        return id;
    }

    outcome_result before_prompt(session& s)
    {
        auto r = std::make_shared<outcome_result>();
        s.async_before_prompt([r](error_code ec, compaction_outcome o) {
            r->done = true;
            r->ec = ec;
            r->outcome = std::move(o);
        });
        test::run_until(ioc_, [&] { return r->done; });
        return *r;
    }

    std::string file() const
    {
        std::ifstream f(path_, std::ios::binary);
        std::stringstream ss;
        ss << f.rdbuf();
        return ss.str();
    }

    asio::io_context ioc_;
    fs::path path_;
    std::shared_ptr<test::scripted_summarizer> summarizer_;
    std::vector<std::string> events_;
    std::vector<budget_exceeded_event> shortfalls_;
};

}  // namespace

TEST_F(model_change_session, a_model_change_entry_to_a_smaller_window_compacts_once_with_the_previous_budgets)
{
    auto s = open(turns_text(), config());
    ASSERT_TRUE(s);
    EXPECT_EQ(s->serving_model().model_id, "claude-sonnet-4-5");
    // The host appends Pi's entry itself: the model is known through session_config::models.
    test::append_entry(
        ioc_, *s, {{"type", "model_change"}, {"provider", "anthropic"}, {"modelId", "claude-haiku-4-5"}}
    );
    EXPECT_EQ(s->serving_model().model_id, "claude-haiku-4-5");
    EXPECT_EQ(s->serving_model().context_window, 2500);
    EXPECT_EQ(s->config().model.model_id, "claude-sonnet-4-5");  // as given
    EXPECT_EQ(s->current()->context_tokens(), 2000);             // > 2500 - 1000

    const auto r = before_prompt(*s);
    ASSERT_FALSE(r.ec) << r.ec.message() << ": " << r.outcome.message;
    EXPECT_TRUE(r.outcome.compacted);
    ASSERT_TRUE(r.outcome.reason);
    EXPECT_EQ(*r.outcome.reason, compaction_reason::model_change);
    ASSERT_TRUE(r.outcome.result);
    EXPECT_EQ(r.outcome.result->tokens_before, 2000);
    EXPECT_EQ(r.outcome.result->tokens_after, 416);
    ASSERT_EQ(summarizer_->calls(), 1u);
    // Sized for the previous model (200000 window, 16384 output cap); the new one's would be 1.
    const auto p = summarizer_->prompts().at(0);
    EXPECT_EQ(p.max_output_tokens, 16384u);
    EXPECT_EQ(compaction::summary_output_budget(p, small.context_window, small.max_output_tokens), 1u);
    EXPECT_EQ((std::vector<std::string>{"start:model_change", "end:model_change:ok"}), events_);
    EXPECT_NE(file().find(R"("reason":"model_change")"), std::string::npos);

    // Once: the next check runs against the new window and finds the context under it.
    const auto again = before_prompt(*s);
    EXPECT_FALSE(again.ec);
    EXPECT_FALSE(again.outcome.compacted);
    EXPECT_EQ(summarizer_->calls(), 1u);
    EXPECT_TRUE(shortfalls_.empty());

    // From now on thresholds and budgets are the new model's: 1600 tokens is over 2500 - 1000.
    json::object reply{
        {"role", "assistant"},
        {"content", json::array{json::object{{"type", "text"}, {"text", tokens(100)}}}},
        {"api", "anthropic-messages"},
        {"provider", "anthropic"},
        {"model", "claude-haiku-4-5"},
        {"usage", test::session_text::usage(1600)},
        {"stopReason", "stop"},
        {"timestamp", 4102444800000.0}};
    test::append_entry(ioc_, *s, {{"type", "message"}, {"message", reply}});
    auto turn = std::make_shared<outcome_result>();
    s->async_on_turn_end([turn](error_code ec, compaction_outcome o) {
        turn->done = true;
        turn->ec = ec;
        turn->outcome = std::move(o);
    });
    test::run_until(ioc_, [&] { return turn->done; });
    // A threshold compaction, and with the new budgets: the 2500-token window leaves the summary
    // an output cap of 1 token, which no summary meets (why the downshift used the old ones).
    ASSERT_TRUE(turn->outcome.reason);
    EXPECT_EQ(*turn->outcome.reason, compaction_reason::threshold);
    EXPECT_EQ(turn->ec, compaction::make_error_code(compaction::errc::summary_too_long))
        << turn->ec.message();
    ASSERT_EQ(summarizer_->calls(), 2u);
    EXPECT_EQ(summarizer_->prompts().at(1).max_output_tokens, 1u);
}

TEST_F(model_change_session, async_change_model_writes_pis_entry_and_a_bigger_window_compacts_nothing)
{
    auto s = open(turns_text(), config());
    ASSERT_TRUE(s);
    const auto id = change(*s, huge);  // not in session_config::models: the call makes it known
    EXPECT_NE(file().find(R"("type":"model_change","id":")" + id), std::string::npos);
    EXPECT_NE(file().find(R"("provider":"anthropic","modelId":"claude-huge")"), std::string::npos);
    EXPECT_EQ(s->serving_model().context_window, 1000000);
    const auto r = before_prompt(*s);
    EXPECT_FALSE(r.ec);
    EXPECT_FALSE(r.outcome.compacted);
    EXPECT_EQ(r.outcome.message, "under the threshold");
    EXPECT_EQ(summarizer_->calls(), 0u);
    EXPECT_TRUE(events_.empty());
}

TEST_F(model_change_session, a_context_that_still_does_not_fit_fails_with_model_window_exceeded)
{
    auto s = open(turns_text(), config());
    ASSERT_TRUE(s);
    change(*s, tiny);
    const auto r = before_prompt(*s);
    EXPECT_EQ(r.ec, make_error_code(errc::model_window_exceeded));
    EXPECT_TRUE(r.outcome.compacted);  // the compaction itself is committed
    ASSERT_EQ(summarizer_->calls(), 1u);
    const auto after = s->current()->context_tokens();
    EXPECT_EQ(after, 416);  // the summary and the kept turns u8..a9
    ASSERT_EQ(shortfalls_.size(), 1u);
    EXPECT_EQ(shortfalls_[0].reason, compaction_reason::model_change);
    EXPECT_EQ(shortfalls_[0].input_tokens, after);
    EXPECT_EQ(shortfalls_[0].allowance, 200);
    EXPECT_FALSE(shortfalls_[0].request_view);
    EXPECT_EQ(
        r.outcome.message,
        "after compacting for the model change, the context (" + std::to_string(after) +
            " tokens) still exceeds anthropic/claude-tiny's window: contextWindow 1200 - "
            "reserveTokens 1000 = 200 tokens"
    );
    EXPECT_GT(after, 200);
}

TEST_F(model_change_session, compat_pi_never_downshifts)
{
    auto s = open(turns_text(), config(compaction::compat_mode::pi));
    ASSERT_TRUE(s);
    change(*s, small);
    EXPECT_EQ(s->serving_model().model_id, "claude-haiku-4-5");
    const auto r = before_prompt(*s);
    EXPECT_FALSE(r.ec) << r.ec.message();
    EXPECT_FALSE(r.outcome.compacted);
    EXPECT_EQ(summarizer_->calls(), 0u);
    EXPECT_TRUE(events_.empty());
    EXPECT_TRUE(shortfalls_.empty());
}

TEST_F(model_change_session, a_model_change_on_the_path_at_open_switches_the_serving_model)
{
    test::session_text t;
    t.user("u0", tokens(100)).assistant("a0", tokens(100), 300);
    t.entry("model_change", "mc1", {{"provider", "anthropic"}, {"modelId", "claude-haiku-4-5"}});
    t.entry(
        "model_change", "mc2", {{"provider", "someone"}, {"modelId", "unlisted"}}
    );  // unknown: switches nothing
    auto s = open(t.text, config());
    ASSERT_TRUE(s);
    EXPECT_EQ(s->serving_model().provider, "anthropic");
    EXPECT_EQ(s->serving_model().model_id, "claude-haiku-4-5");
    EXPECT_EQ(s->serving_model().context_window, 2500);
    EXPECT_EQ(s->serving_model().max_output_tokens, 8192);
    // The change was checked when it was made: no compaction waits for it.
    const auto r = before_prompt(*s);
    EXPECT_FALSE(r.ec);
    EXPECT_FALSE(r.outcome.compacted);
    EXPECT_EQ(summarizer_->calls(), 0u);
}

TEST_F(model_change_session, an_unknown_model_change_keeps_the_serving_model)
{
    auto s = open(turns_text(), config());
    ASSERT_TRUE(s);
    test::append_entry(
        ioc_, *s, {{"type", "model_change"}, {"provider", "someone"}, {"modelId", "unlisted"}}
    );
    EXPECT_EQ(s->serving_model().model_id, "claude-sonnet-4-5");
    const auto r = before_prompt(*s);
    EXPECT_FALSE(r.outcome.compacted);
    EXPECT_EQ(summarizer_->calls(), 0u);
}

TEST_F(model_change_session, the_between_turns_check_downshifts_too)
{
    auto s = open(turns_text(), config());
    ASSERT_TRUE(s);
    change(*s, small);
    auto r = std::make_shared<outcome_result>();
    s->async_between_turns([r](error_code ec, compaction_outcome o) {
        r->done = true;
        r->ec = ec;
        r->outcome = std::move(o);
    });
    test::run_until(ioc_, [&] { return r->done; });
    ASSERT_FALSE(r->ec) << r->ec.message() << ": " << r->outcome.message;
    EXPECT_TRUE(r->outcome.compacted);
    ASSERT_TRUE(r->outcome.reason);
    EXPECT_EQ(*r->outcome.reason, compaction_reason::model_change);
    ASSERT_EQ(summarizer_->calls(), 1u);
    EXPECT_EQ(summarizer_->prompts().at(0).max_output_tokens, 16384u);
}

TEST_F(model_change_session, a_failed_downshift_stays_pending_and_the_next_check_tries_again)
{
    auto s = open(turns_text(), config());
    ASSERT_TRUE(s);
    change(*s, small);
    summarizer_->push({.kind = test::script_step::transport_error});
    const auto first = before_prompt(*s);
    EXPECT_EQ(first.ec, make_error_code(asio::error::connection_reset)) << first.ec.message();
    EXPECT_FALSE(first.outcome.compacted);
    EXPECT_EQ(summarizer_->calls(), 1u);
    EXPECT_TRUE(shortfalls_.empty());
    // Still the previous model's budgets: the retry's request is sized for its window.
    const auto second = before_prompt(*s);
    ASSERT_FALSE(second.ec) << second.ec.message() << ": " << second.outcome.message;
    EXPECT_TRUE(second.outcome.compacted);
    ASSERT_TRUE(second.outcome.reason);
    EXPECT_EQ(*second.outcome.reason, compaction_reason::model_change);
    ASSERT_EQ(summarizer_->calls(), 2u);
    EXPECT_EQ(summarizer_->prompts().at(1).max_output_tokens, 16384u);
}

TEST_F(model_change_session, a_switched_models_own_reserve_tokens_set_its_threshold)
{
    // 3200 - 1000 = 2200 holds the 2000-token context; with the model's own reserveTokens
    // (modelOverrides) of 1500 the threshold is 1700, and the change compacts first.
    model_identity plain{"openai", "gpt-5-mini", 3200, 8192};
    model_identity tight = plain;
    tight.reserve_tokens = 1500;
    const auto first = path_;
    for (const auto& m : {plain, tight})
    {
        if (m.reserve_tokens)
            path_ = first.string() + ".tight";  // a file of its own: the first session still holds its store
        auto c = config();
        c.settings.background.enabled = false;
        c.models = {m};
        auto s = open(turns_text(), c);
        ASSERT_TRUE(s);
        change(*s, m);
        const auto r = before_prompt(*s);
        ASSERT_FALSE(r.ec) << r.ec.message() << ": " << r.outcome.message;
        EXPECT_EQ(r.outcome.compacted, m.reserve_tokens.has_value());
        s->close();
    }
    fs::remove(first);
    EXPECT_EQ((std::vector<std::string>{"start:model_change", "end:model_change:ok"}), events_);
    EXPECT_EQ(summarizer_->calls(), 1u);
}

TEST_F(model_change_session, compat_pi_applies_the_serving_models_overrides_with_the_configured_window)
{
    // Pi 1.6 resolves modelOverrides for the model it serves at every check, and measures a reply
    // against the window of the model that wrote it: 200000 - 198500 = 1500 < 2000 compacts.
    model_identity greedy{"anthropic", "claude-haiku-4-5", 2500, 8192};
    greedy.reserve_tokens = 198500;
    auto c = config(compaction::compat_mode::pi);
    c.models = {greedy};
    auto s = open(turns_text(), c);
    ASSERT_TRUE(s);
    auto r = before_prompt(*s);
    EXPECT_FALSE(r.outcome.compacted);  // 200000 - 1000
    change(*s, greedy);
    r = before_prompt(*s);
    ASSERT_FALSE(r.ec) << r.ec.message() << ": " << r.outcome.message;
    EXPECT_TRUE(r.outcome.compacted);
    ASSERT_TRUE(r.outcome.reason);
    EXPECT_EQ(*r.outcome.reason, compaction_reason::threshold);
    // Sized for the configured window, as Pi sizes it for the reply's model.
    EXPECT_EQ(summarizer_->prompts().at(0).max_output_tokens, 16384u);
}
