// Tree navigation against Pi 1.6.0's own navigateTree (tests/fixtures/pi16_navigation.json, from
// tests/tools/pi_navigate.mjs): hooks, order, request, entries.
#include <agentctx/compaction/summary_prompt.hpp>
#include <agentctx/runtime/error.hpp>
#include <agentctx/runtime/session.hpp>

#include "file_text.hpp"
#include "open_session.hpp"
#include "run_until.hpp"

#include <boost/asio/append.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

using namespace agentctx;
using namespace agentctx::runtime;
namespace asio = boost::asio;
namespace json = boost::json;
using boost::system::error_code;

namespace {

// Answers every request with the fixture's model text and usage, and records the request in the
// shared hook order as Pi's fake stream does.
class pi_model final : public providers::summarizer
{
public:
    pi_model(asio::any_io_executor ex, std::string text, std::vector<std::string>& order)
        : ex_(std::move(ex)), text_(std::move(text)), order_(order)
    {}
    std::string name() const override { return "anthropic:fake-model"; }
    std::vector<compaction::summary_prompt> prompts;

protected:
    void summarize_impl(
        compaction::summary_prompt prompt, asio::any_completion_handler<providers::summarize_signature> h
    ) override
    {
        order_.push_back("model");
        prompts.push_back(std::move(prompt));
        compaction::usage u;
        u.input = 900;
        u.output = 40;
        u.total_tokens = 940;
        compaction::summary_output out{text_, compaction::stop_reason::stop, std::nullopt, 0, u, {}};
        asio::post(ex_, asio::append(std::move(h), error_code{}, std::move(out)));
    }

private:
    asio::any_io_executor ex_;
    std::string text_;
    std::vector<std::string>& order_;
};

std::optional<std::string> opt_string(const json::value& v)
{
    return v.is_string() ? std::optional<std::string>(std::string(v.as_string())) : std::nullopt;
}

branch_options options_of(const json::object& o)
{
    branch_options b;
    if (const auto* v = o.if_contains("summarize"))
        b.summarize = v->as_bool();
    if (const auto* v = o.if_contains("customInstructions"))
        b.custom_instructions = opt_string(*v);
    if (const auto* v = o.if_contains("replaceInstructions"))
        b.replace_instructions = v->as_bool();
    if (const auto* v = o.if_contains("label"))
        b.label = opt_string(*v);
    return b;
}

// A hook result as Pi's handler returned it.
before_branch_decision decision_of(const json::object& o)
{
    before_branch_decision d;
    if (const auto* v = o.if_contains("cancel"))
        d.cancel = v->as_bool();
    if (const auto* v = o.if_contains("summary"))
    {
        const auto& s = v->as_object();
        d.summary = hook_branch_summary{
            std::string(s.at("summary").as_string()),
            s.contains("details") ? s.at("details") : json::value(nullptr),
            std::nullopt};
    }
    if (const auto* v = o.if_contains("customInstructions"))
        d.custom_instructions = opt_string(*v);
    if (const auto* v = o.if_contains("replaceInstructions"))
        d.replace_instructions = v->as_bool();
    if (const auto* v = o.if_contains("label"))
        d.label = opt_string(*v);
    return d;
}

json::value nullable(const std::optional<std::string>& s)
{
    return s ? json::value(*s) : json::value(nullptr);
}

class branch_navigation_test : public ::testing::Test
{
protected:
    void SetUp() override
    {
        const auto text = test::read_text(AGENTCTX_FIXTURES_DIR "/pi16_navigation.json");
        fixture_ = json::parse(text).as_object();
        path_ = std::filesystem::temp_directory_path() /
                ("agentctx-navigation-" + std::to_string(::getpid()) + "-" +
                 ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".jsonl");
        std::ofstream(path_, std::ios::binary)
            << test::read_text(AGENTCTX_FIXTURES_DIR "/pi16_navigation.jsonl");
        model_ = std::make_shared<pi_model>(
            ioc_.get_executor(), std::string(fixture_.at("modelText").as_string()), order_
        );
    }
    void TearDown() override { std::filesystem::remove(path_); }

    std::shared_ptr<session> open(compaction::compat_mode mode = compaction::compat_mode::pi)
    {
        session_config c;
        c.model = {"anthropic", "fake-model", 200000, 64000};
        c.summarizer = model_;
        c.compat = mode;
        auto s = test::open_session(ioc_.get_executor(), path_, std::move(c));
        lines_before_ = lines().size();
        return s;
    }

    std::vector<json::object> lines() const
    {
        std::vector<json::object> out;
        std::istringstream in(test::read_text(path_));
        for (std::string l; std::getline(in, l);)
            if (!l.empty())
                out.push_back(json::parse(l).as_object());
        return out;
    }

    std::pair<error_code, std::string> navigate(session& s, const std::string& to, branch_options o)
    {
        std::optional<std::pair<error_code, std::string>> out;
        s.async_branch_from(to, std::move(o), [&](error_code ec, std::string id) {
            out.emplace(ec, std::move(id));
        });
        test::run_until(ioc_, [&] { return out.has_value(); });
        return *out;
    }

    // Hooks that record what they see in Pi's shape, answering with `answer`.
    void record_hooks(session& s, const json::value& answer)
    {
        if (!answer.is_null())
            s.on_before_branch([this, d = decision_of(answer.as_object())](const before_branch_event& e) {
                order_.push_back("session_before_tree");
                json::array ids;
                for (const auto& x : e.entries_to_summarize)
                    ids.push_back(json::value(x->id));
                seen_["before"] = json::object{
                    {"targetId", e.target_id},
                    {"oldLeafId", nullable(e.old_leaf_id)},
                    {"commonAncestorId", nullable(e.common_ancestor_id)},
                    {"entriesToSummarize", ids},
                    {"userWantsSummary", e.user_wants_summary},
                    {"customInstructions", nullable(e.custom_instructions)},
                    {"replaceInstructions", e.replace_instructions},
                    {"label", nullable(e.label)},
                    {"signal", e.cancellation.is_connected()}};
                return d;
            });
        s.on_branched([this, &s](const branched_event& e) {
            // Pi installs the new context before session_tree runs.
            if (s.current()->leaf_id == e.new_leaf_id)
                order_.push_back("context_refreshed");
            order_.push_back("session_tree");
            seen_["after"] = json::object{
                {"newLeafId", name(e.new_leaf_id)},
                {"oldLeafId", nullable(e.old_leaf_id)},
                {"summaryEntry", e.summary_entry ? name(e.summary_entry->id) : json::value(nullptr)},
                {"fromExtension", e.from_hook ? json::value(*e.from_hook) : json::value(nullptr)}};
        });
    }

    // New ids as the fixture names them: new1, new2, ... in append order.
    json::value name(const std::optional<std::string>& id) const
    {
        if (!id)
            return nullptr;
        const auto all = lines();
        for (std::size_t k = lines_before_; k < all.size(); ++k)
            if (all[k].at("id").as_string() == *id)
                return json::value("new" + std::to_string(k - lines_before_ + 1));
        return json::value(*id);
    }

    json::array appended() const
    {
        json::array out;
        const auto all = lines();
        for (std::size_t k = lines_before_; k < all.size(); ++k)
        {
            json::object o;
            json::array keys;
            for (const auto& kv : all[k])
                keys.push_back(json::value(kv.key()));
            o["keys"] = keys;
            for (const auto& kv : all[k])
            {
                if (kv.key() == "timestamp")
                    continue;
                const bool id_field = kv.key() == "id" || kv.key() == "parentId" || kv.key() == "targetId";
                o[kv.key()] = id_field ? name(opt_string(kv.value())) : kv.value();
            }
            out.push_back(o);
        }
        return out;
    }

    // Runs the fixture's scenario on agentctx and compares everything Pi printed.
    void check_against_pi(const std::string& scenario)
    {
        const auto& pi = fixture_.at("scenarios").at(scenario).as_object();
        auto s = open();
        ASSERT_TRUE(s);
        record_hooks(*s, pi.at("hookResult"));
        const auto [ec, summary_id] =
            navigate(*s, std::string(pi.at("target").as_string()), options_of(pi.at("options").as_object()));
        const auto& result = pi.at("result").as_object();
        if (result.at("cancelled").as_bool())
            EXPECT_EQ(ec, make_error_code(errc::hook_cancelled)) << summary_id;
        else
            EXPECT_FALSE(ec) << summary_id;
        if (!ec)
            EXPECT_EQ(
                name(summary_id.empty() ? std::nullopt : std::optional<std::string>(summary_id)),
                result.at("summaryEntry")
            );
        else
            EXPECT_EQ(summary_id, "cancelled by a before_branch hook");
        std::vector<std::string> pi_order;
        for (const auto& o : pi.at("order").as_array())
            pi_order.emplace_back(o.as_string());
        EXPECT_EQ(order_, pi_order);
        // Pi's undefined replaceInstructions is our false.
        auto pi_seen = pi.at("seen").as_object();
        if (auto* b = pi_seen.if_contains("before"); b && b->as_object().at("replaceInstructions").is_null())
            b->as_object()["replaceInstructions"] = false;
        EXPECT_EQ(json::serialize(seen_), json::serialize(pi_seen));
        const auto& requests = pi.at("requests").as_array();
        ASSERT_EQ(model_->prompts.size(), requests.size());
        for (std::size_t k = 0; k < requests.size(); ++k)
        {
            const auto& r = requests[k].as_object();
            // The system prompt is agentctx's own, as for compaction requests (docs/pi-compatibility.md).
            EXPECT_EQ(model_->prompts[k].system_prompt, compaction::summarization_system_prompt);
            EXPECT_EQ(r.at("system").as_array().size(), 1u);
            EXPECT_EQ(model_->prompts[k].prompt, r.at("prompt").as_array().at(0).as_string());
            EXPECT_EQ(nullable(model_->prompts[k].reasoning_effort), r.at("reasoning"));
        }
        EXPECT_EQ(name(s->current()->leaf_id), pi.at("leaf"));
        EXPECT_EQ(json::serialize(appended()), json::serialize(pi.at("lines")));
    }

    asio::io_context ioc_;
    json::object fixture_;
    std::filesystem::path path_;
    std::size_t lines_before_ = 0;
    std::vector<std::string> order_;
    json::object seen_;
    std::shared_ptr<pi_model> model_;
};

// 1. The hooks, as Pi's session_before_tree and session_tree.

TEST_F(branch_navigation_test, a_before_branch_hook_overrides_instructions_and_label_as_pi)
{
    check_against_pi("hook_overrides_instructions");
}

TEST_F(branch_navigation_test, a_before_branch_hook_supplies_the_summary_from_hook_without_a_model_call_as_pi)
{
    check_against_pi("hook_supplies_summary");
}

TEST_F(branch_navigation_test, a_hooks_summary_is_ignored_when_no_summary_was_asked_as_pi)
{
    check_against_pi("hook_summary_without_summarize");
}

TEST_F(branch_navigation_test, a_before_branch_hook_cancels_the_navigation_as_pi)
{
    check_against_pi("hook_cancels");
    EXPECT_TRUE(seen_.find("after") == seen_.end());
}

TEST_F(branch_navigation_test, hooks_run_in_registration_order_and_the_last_answer_wins_whole)
{
    auto s = open();
    ASSERT_TRUE(s);
    std::vector<std::string> calls;
    s->on_before_branch([&](const before_branch_event&) {
        calls.push_back("first");
        return before_branch_decision{.label = std::string("first-label")};
    });
    s->on_before_branch([&](const before_branch_event&) -> asio::awaitable<before_branch_decision> {
        calls.push_back("second");
        co_return before_branch_decision{.custom_instructions = std::string("Only names.")};
    });
    s->on_before_branch([&](const before_branch_event&) -> before_branch_decision {
        calls.push_back("third");
        throw std::runtime_error("broken hook");
    });
    const auto [ec, id] = navigate(*s, "u2", {.summarize = true});
    ASSERT_FALSE(ec) << id;
    EXPECT_EQ(calls, (std::vector<std::string>{"first", "second", "third"}));
    ASSERT_EQ(model_->prompts.size(), 1u);
    EXPECT_TRUE(model_->prompts[0].prompt.ends_with("\n\nAdditional focus: Only names."));
    // The second answer replaced the first whole: no label entry.
    EXPECT_EQ(lines().back().at("type"), "branch_summary");
}

TEST_F(branch_navigation_test, a_cancelled_navigation_while_a_hook_waits_moves_and_writes_nothing)
{
    auto s = open();
    ASSERT_TRUE(s);
    asio::steady_timer gate(ioc_, std::chrono::hours(1));
    bool hook_ran = false, after_ran = false;
    s->on_before_branch([&](const before_branch_event&) -> asio::awaitable<before_branch_decision> {
        hook_ran = true;
        auto [wec] = co_await gate.async_wait(asio::as_tuple(asio::use_awaitable));
        // Cancelled with the navigation: the wait ends early, the answer is not used.
        co_return before_branch_decision{.cancel = !wec};
    });
    s->on_branched([&](const branched_event&) { after_ran = true; });
    asio::cancellation_signal cancel;
    std::optional<error_code> out;
    s->async_branch_from(
        "u2",
        branch_options{.summarize = true},
        asio::bind_cancellation_slot(cancel.slot(), [&](error_code ec, std::string) { out = ec; })
    );
    test::run_until(ioc_, [&] { return hook_ran; });
    const auto before = test::read_text(path_);
    cancel.emit(asio::cancellation_type::terminal);
    test::run_until(ioc_, [&] { return out.has_value(); });
    EXPECT_EQ(*out, make_error_code(errc::cancelled));
    EXPECT_FALSE(after_ran);
    EXPECT_EQ(model_->prompts.size(), 0u);
    EXPECT_EQ(test::read_text(path_), before);
    EXPECT_EQ(s->current()->leaf_id, "a4");
}

// 2. Options: custom instructions and the label entry.

TEST_F(branch_navigation_test, custom_instructions_and_a_label_are_written_as_pi)
{
    check_against_pi("summary_with_label_and_focus");
}

TEST_F(branch_navigation_test, a_label_without_a_summary_labels_the_target_as_pi)
{
    check_against_pi("label_without_summary");
}

TEST_F(branch_navigation_test, replace_instructions_sends_the_custom_instructions_alone)
{
    auto s = open();
    ASSERT_TRUE(s);
    const auto [ec, id] = navigate(
        *s,
        "u2",
        {.summarize = true,
         .custom_instructions = std::string("List the files."),
         .replace_instructions = true}
    );
    ASSERT_FALSE(ec) << id;
    ASSERT_EQ(model_->prompts.size(), 1u);
    EXPECT_TRUE(model_->prompts[0].prompt.ends_with("</conversation>\n\nList the files."));
}

// 3. Back to the first user message: the leaf is reset to none.

TEST_F(branch_navigation_test, navigating_to_the_root_without_a_summary_resets_the_leaf_as_pi)
{
    check_against_pi("root_without_summary");
}

TEST_F(branch_navigation_test, navigating_to_the_root_with_a_summary_writes_a_root_summary_as_pi)
{
    check_against_pi("root_with_summary");
}

TEST_F(
    branch_navigation_test, after_a_reset_to_the_root_the_context_is_empty_and_the_next_message_is_a_new_root
)
{
    auto s = open();
    ASSERT_TRUE(s);
    const auto [ec, id] = navigate(*s, "u1", {});
    ASSERT_FALSE(ec) << id;
    EXPECT_FALSE(s->current()->leaf_id.has_value());
    EXPECT_EQ(s->current()->messages.size(), 0u);
    std::optional<std::pair<error_code, std::string>> appended;
    s->async_append(
        {{"type", "message"},
         {"message", {{"role", "user"}, {"content", "Start over."}, {"timestamp", 1767225800000}}}},
        [&](error_code e, std::string i) { appended.emplace(e, std::move(i)); }
    );
    test::run_until(ioc_, [&] { return appended.has_value(); });
    ASSERT_FALSE(appended->first) << appended->second;
    EXPECT_TRUE(lines().back().at("parentId").is_null());
    EXPECT_EQ(s->current()->messages.size(), 1u);
}

// 4. The request carries the session's thinking level.

TEST_F(branch_navigation_test, the_branch_summary_request_carries_the_sessions_thinking_level)
{
    auto s = open(compaction::compat_mode::agentctx);
    ASSERT_TRUE(s);
    ASSERT_EQ(s->current()->thinking_level, "high");
    const auto [ec, id] = navigate(*s, "u2", {.summarize = true});
    ASSERT_FALSE(ec) << id;
    ASSERT_EQ(model_->prompts.size(), 1u);
    EXPECT_EQ(model_->prompts[0].reasoning_effort, std::optional<std::string>("high"));
}

}  // namespace
