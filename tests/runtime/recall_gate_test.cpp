// The recall gate in a session: a dropped rule repaired by one follow-up, dropped again and carried
// verbatim, kept (no follow-up); `check`, `off` and `--compat pi`; ten compactions in a row.
#include <agentctx/compaction/recall.hpp>
#include <agentctx/runtime/entries.hpp>
#include <agentctx/runtime/session.hpp>

#include "open_session.hpp"
#include "run_until.hpp"
#include "scripted_summarizer.hpp"
#include "session_text.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace agentctx;
using namespace agentctx::runtime;
namespace asio = boost::asio;
namespace json = boost::json;
namespace fs = std::filesystem;
using boost::system::error_code;
using compaction::recall_counts;
using test::tokens;

namespace {

const std::string drops_the_rule = "## Goal\nShip the export.\n\n## Constraints & Preferences\n- Suppliers: "
                                   "EU only.\n\n## Next Steps\n1. Test.";
const std::string keeps_the_rule =
    "## Goal\nShip the export.\n\n## Constraints & Preferences\n- Suppliers: EU only.\n- Do not push to main."
    "\n\n## Next Steps\n1. Test.";

class recall_gate_test : public ::testing::Test
{
protected:
    void SetUp() override
    {
        summarizer_ = std::make_shared<test::scripted_summarizer>(ioc_.get_executor());
        path_ = test::new_session_file("agentctx-recall");
    }
    void TearDown() override { fs::remove(path_); }

    session_config config(std::optional<compaction::recall_gate_mode> mode = std::nullopt)
    {
        session_config c;
        c.settings.keep_recent_tokens = 2000;
        c.settings.background.enabled = false;
        c.settings.clear_tool_results.enabled = false;
        c.settings.recall_gate = mode;
        c.model = {"anthropic", "claude-sonnet-4-5", 200000, 0};
        c.summarizer = summarizer_;
        return c;
    }

    // Two rules in the first turn, then two turns of 2,500 tokens: the cut keeps the last one.
    void write_rules_session()
    {
        test::session_text s;
        s.user("u0", "Never push to main. EU suppliers only.");
        s.assistant("a0", "Understood.");
        s.user("u1", tokens(2500)).assistant("a1", tokens(2500));
        s.user("u2", tokens(1000)).assistant("a2", tokens(1500));  // the cut: at u2
        std::ofstream(path_, std::ios::binary) << s.text;
    }

    std::shared_ptr<session> open(session_config c)
    {
        auto s = test::open_session(ioc_.get_executor(), path_, std::move(c));
        if (s)
            s->on_event([this](const session_event& e) {
                if (const auto* f = std::get_if<compaction_finished_event>(&e))
                    finished_.push_back(f->evidence);
                if (const auto* end = std::get_if<compaction_end_event>(&e))
                    ends_.push_back(*end);
            });
        return s;
    }

    std::pair<error_code, compaction_outcome> compact(session& s)
    {
        bool done = false;
        std::pair<error_code, compaction_outcome> r;
        s.async_compact(std::nullopt, [&](error_code ec, compaction_outcome o) {
            r = {ec, std::move(o)};
            done = true;
        });
        test::run_until(ioc_, [&] { return done; });
        return r;
    }

    void append(session& s, json::object fields)
    {
        bool done = false;
        s.async_append(std::move(fields), [&](error_code ec, auto&&...) {
            EXPECT_FALSE(ec) << ec.message();
            done = true;
        });
        test::run_until(ioc_, [&] { return done; });
    }

    // The compaction entry's details.agentctx.
    json::object agentctx_details()
    {
        json::object out;
        std::ifstream in(path_);
        for (std::string line; std::getline(in, line);)
        {
            const auto v = json::parse(line).as_object();
            if (v.at("type") == "compaction" && v.at("details").as_object().contains("agentctx"))
                out = v.at("details").as_object().at("agentctx").as_object();
        }
        return out;
    }

    asio::io_context ioc_;
    fs::path path_;
    std::shared_ptr<test::scripted_summarizer> summarizer_;
    std::vector<compaction_evidence> finished_;
    std::vector<compaction_end_event> ends_;
};

}  // namespace

TEST_F(recall_gate_test, a_dropped_rule_is_repaired_by_one_follow_up_in_the_same_request)
{
    write_rules_session();
    summarizer_->push({.text = drops_the_rule});
    summarizer_->push({.text = keeps_the_rule});
    auto s = open(config());
    ASSERT_TRUE(s);
    const auto [ec, out] = compact(*s);
    ASSERT_FALSE(ec) << out.message;
    ASSERT_TRUE(out.result);
    EXPECT_EQ(out.result->summary, keeps_the_rule);
    const auto prompts = summarizer_->prompts();
    ASSERT_EQ(prompts.size(), 2u);
    // The follow-up is the first request grown at its end: the draft, then what it left out.
    EXPECT_EQ(prompts[1].system_prompt, prompts[0].system_prompt);
    EXPECT_EQ(
        prompts[1].prompt.substr(0, prompts[0].prompt.size() + 40),
        prompts[0].prompt + "\n\n<draft-checkpoint>\n" + drops_the_rule.substr(0, 19)
    );
    EXPECT_NE(prompts[1].prompt.find("\n- (a rule the user set) Never push to main.\n"), std::string::npos);
    const recall_counts expected{.probes = 2, .found = 1, .repaired = 1, .verbatim = 0};
    ASSERT_EQ(finished_.size(), 1u);
    EXPECT_EQ(finished_[0].recall, expected);
    EXPECT_EQ(finished_[0].calls, 2);
    ASSERT_EQ(ends_.size(), 1u);
    EXPECT_EQ(ends_[0].recall, expected);
    const auto details = agentctx_details();
    EXPECT_EQ(details.at("modelCalls").as_int64(), 2);
    EXPECT_EQ(details.at("evidence").as_object().at("recall").as_object(), compaction::to_json(expected));
    EXPECT_EQ(
        details.at("recall").as_object().at("rules").as_array(),
        (json::array{"Never push to main.", "EU suppliers only."})
    );
}

TEST_F(recall_gate_test, a_rule_dropped_again_is_carried_verbatim)
{
    write_rules_session();
    summarizer_->push({.text = drops_the_rule});
    summarizer_->push({.text = drops_the_rule});
    auto s = open(config());
    ASSERT_TRUE(s);
    const auto [ec, out] = compact(*s);
    ASSERT_FALSE(ec) << out.message;
    ASSERT_TRUE(out.result);
    EXPECT_EQ(out.result->summary, drops_the_rule + "\n\n## User rules (verbatim)\n- Never push to main.");
    EXPECT_EQ(summarizer_->calls(), 2u);
    ASSERT_EQ(finished_.size(), 1u);
    EXPECT_EQ(finished_[0].recall, (recall_counts{.probes = 2, .found = 1, .repaired = 0, .verbatim = 1}));
    // The context the next request carries has the rule.
    EXPECT_NE(s->context().front().msg->summary.find("- Never push to main."), std::string::npos);
}

TEST_F(recall_gate_test, a_kept_rule_needs_no_follow_up)
{
    write_rules_session();
    summarizer_->push({.text = keeps_the_rule});
    auto s = open(config());
    ASSERT_TRUE(s);
    const auto [ec, out] = compact(*s);
    ASSERT_FALSE(ec) << out.message;
    EXPECT_EQ(out.result->summary, keeps_the_rule);
    EXPECT_EQ(summarizer_->calls(), 1u);
    EXPECT_EQ(finished_.at(0).recall, (recall_counts{.probes = 2, .found = 2, .repaired = 0, .verbatim = 0}));
}

TEST_F(recall_gate_test, check_records_only)
{
    write_rules_session();
    summarizer_->push({.text = drops_the_rule});
    auto s = open(config(compaction::recall_gate_mode::check));
    ASSERT_TRUE(s);
    const auto [ec, out] = compact(*s);
    ASSERT_FALSE(ec) << out.message;
    EXPECT_EQ(out.result->summary, drops_the_rule);
    EXPECT_EQ(summarizer_->calls(), 1u);
    EXPECT_EQ(finished_.at(0).recall, (recall_counts{.probes = 2, .found = 1, .repaired = 0, .verbatim = 0}));
}

TEST_F(recall_gate_test, off_and_compat_pi_run_no_gate)
{
    for (const bool pi : {false, true})
    {
        write_rules_session();
        summarizer_->push({.text = drops_the_rule});
        auto c = config(pi ? std::nullopt : std::optional(compaction::recall_gate_mode::off));
        if (pi)
            c.compat = compaction::compat_mode::pi;
        auto s = open(c);
        ASSERT_TRUE(s);
        const auto [ec, out] = compact(*s);
        ASSERT_FALSE(ec) << out.message;
        EXPECT_EQ(out.result->summary, drops_the_rule);
        EXPECT_FALSE(finished_.back().recall.has_value());
        EXPECT_FALSE(ends_.back().recall.has_value());
        EXPECT_FALSE(agentctx_details().contains("recall"));
        s->close();
        s.reset();
        ioc_.restart();
        ioc_.poll();
    }
    EXPECT_EQ(summarizer_->calls(), 2u);  // one request each, no follow-up
}

TEST_F(recall_gate_test, the_offline_summarizer_gets_no_follow_up_and_the_rule_is_carried_verbatim)
{
    // An extractive summarizer answers a follow-up the same way: the gate goes straight to verbatim.
    struct extractive final : providers::summarizer
    {
        explicit extractive(asio::any_io_executor ex) : ex(std::move(ex)) {}
        std::string name() const override { return "extractive"; }
        providers::summarizer_capabilities capabilities() const override
        {
            providers::summarizer_capabilities c;
            c.extractive = true;
            return c;
        }
        void summarize_impl(
            compaction::summary_prompt, asio::any_completion_handler<providers::summarize_signature> h
        ) override
        {
            ++calls;
            asio::post(ex, [h = std::move(h)]() mutable {
                std::move(h
                )(error_code{}, compaction::summary_output{drops_the_rule, compaction::stop_reason::stop});
            });
        }
        asio::any_io_executor ex;
        int calls = 0;
    };
    write_rules_session();
    auto ex = std::make_shared<extractive>(ioc_.get_executor());
    auto c = config();
    c.summarizer = ex;
    auto s = open(c);
    ASSERT_TRUE(s);
    const auto [ec, out] = compact(*s);
    ASSERT_FALSE(ec) << out.message;
    EXPECT_EQ(ex->calls, 1);
    EXPECT_EQ(out.result->summary, drops_the_rule + "\n\n## User rules (verbatim)\n- Never push to main.");
    EXPECT_EQ(finished_.at(0).recall, (recall_counts{.probes = 2, .found = 1, .repaired = 0, .verbatim = 1}));
}

namespace {

const std::string forgotten = "## Goal\nShip the export.\n\n## Next Steps\n1. Continue.";

// A summarizer that forgets every rule; with `repairs`, it writes the rules a follow-up names.
class forgetful_summarizer final : public providers::summarizer
{
public:
    forgetful_summarizer(asio::any_io_executor ex, bool repairs) : ex_(std::move(ex)), repairs_(repairs) {}
    std::string name() const override { return "forgetful"; }
    int calls = 0, follow_ups = 0;

protected:
    void summarize_impl(
        compaction::summary_prompt prompt, asio::any_completion_handler<providers::summarize_signature> h
    ) override
    {
        ++calls;
        std::string text = forgotten;
        const auto ask = prompt.prompt.rfind("Your checkpoint above leaves out");
        if (ask != std::string::npos)
        {
            ++follow_ups;
            if (repairs_)
                text += "\n\n## Constraints & Preferences" + named_rules(prompt.prompt.substr(ask));
        }
        compaction::summary_output out{std::move(text), compaction::stop_reason::stop};
        out.usage = compaction::usage{.input = 1000, .output = 100, .total_tokens = 1100};
        asio::post(ex_, [h = std::move(h), out = std::move(out)]() mutable {
            std::move(h)(error_code{}, out);
        });
    }

private:
    static std::string named_rules(const std::string& ask)
    {
        static const std::string mark = "\n- (a rule the user set) ";
        std::string out;
        for (auto at = ask.find(mark); at != std::string::npos; at = ask.find(mark, at + 1))
        {
            auto line = ask.substr(at + mark.size(), ask.find('\n', at + 1) - at - mark.size());
            line = line.substr(0, line.find(" [this replaces"));
            out += "\n- " + line;
        }
        return out;
    }
    asio::any_io_executor ex_;
    bool repairs_;
};

struct cycles_report
{
    std::vector<std::string> last_summary;  ///< per cycle
    recall_counts total;
    int calls = 0;
};

}  // namespace

class recall_cycles_test : public recall_gate_test
{
protected:
    // The first turn sets four rules, then 300 tool calls bury them; ten turns follow, each compacted;
    // the third overrides `Never push to main.`, the sixth `Use tabs for indentation.`.
    cycles_report run_cycles(bool repairs, compaction::recall_gate_mode mode)
    {
        auto forgetful = std::make_shared<forgetful_summarizer>(ioc_.get_executor(), repairs);
        auto c = config(mode);
        c.summarizer = forgetful;
        auto s = open(c);
        cycles_report report;
        if (!s)
            return report;
        append(
            *s,
            entries::user("Never push to main. Use tabs for indentation. EU suppliers only. "
                          "Keep the public signature of `export_rows`.")
        );
        for (int i = 0; i < 300; ++i)
        {
            const std::string id = "call_" + std::to_string(i);
            entries::assistant_reply r;
            r.tool_calls.push_back({id, "bash", json::object{{"command", "make check-" + std::to_string(i)}}}
            );
            r.provider = "anthropic";
            r.model = "claude-sonnet-4-5";
            append(*s, entries::assistant(r));
            append(*s, entries::tool_result(id, "bash", "ok " + std::string(200, 'o')));
        }
        append(
            *s,
            entries::assistant({.text = "Set up; all checks pass.", .provider = "anthropic", .model = "m"})
        );
        for (int cycle = 1; cycle <= 10; ++cycle)
        {
            if (cycle == 3 || cycle == 6)
            {
                append(
                    *s,
                    entries::user(
                        cycle == 3 ? "Actually, you may push to main now." : "Use spaces instead of tabs."
                    )
                );
                append(*s, entries::assistant({.text = "Noted.", .provider = "anthropic", .model = "m"}));
            }
            append(*s, entries::user("Step " + std::to_string(cycle) + " " + tokens(1200)));
            append(*s, entries::assistant({.text = tokens(1500), .provider = "anthropic", .model = "m"}));
            const auto [ec, out] = compact(*s);
            EXPECT_FALSE(ec) << "cycle " << cycle << ": " << out.message;
            report.last_summary.push_back(out.result ? out.result->summary : "");
            const auto& r = finished_.back().recall.value_or(recall_counts{});
            report.total.probes += r.probes;
            report.total.found += r.found;
            report.total.repaired += r.repaired;
            report.total.verbatim += r.verbatim;
        }
        report.calls = forgetful->calls;
        return report;
    }

    // Every rule alive after `cycle` (1-based) is in `summary`; the revoked ones are not.
    static void expect_alive_rules(const std::string& summary, int cycle)
    {
        const std::vector<std::pair<std::string, int>> rules{
            {"Never push to main.", 3},  // the cycle that revokes it
            {"Use tabs for indentation.", 6},
            {"EU suppliers only.", 99},
            {"Keep the public signature of `export_rows`.", 99},
            {"Actually, you may push to main now.", 99},
            {"Use spaces instead of tabs.", 99}};
        for (const auto& [rule, revoked_at] : rules)
        {
            const int said_at = rule.starts_with("Actually") ? 3 : rule.starts_with("Use spaces") ? 6 : 1;
            const bool alive = cycle >= said_at && cycle < revoked_at;
            EXPECT_EQ(summary.find("- " + rule) != std::string::npos, alive)
                << "cycle " << cycle << ": " << rule;
        }
    }
};

TEST_F(recall_cycles_test, ten_compactions_carry_every_unrevoked_rule_verbatim_past_a_forgetful_summarizer)
{
    const auto report = run_cycles(false, compaction::recall_gate_mode::repair);
    ASSERT_EQ(report.last_summary.size(), 10u);
    for (int cycle = 1; cycle <= 10; ++cycle)
        expect_alive_rules(report.last_summary[cycle - 1], cycle);
    EXPECT_EQ(report.calls, 20);  // a summary and one follow-up per cycle
    EXPECT_EQ(report.total.repaired, 0u);
    std::printf(
        "forgetful + repair: calls %d probes %zu found %zu repaired %zu verbatim %zu\n",
        report.calls,
        report.total.probes,
        report.total.found,
        report.total.repaired,
        report.total.verbatim
    );
}

TEST_F(recall_cycles_test, ten_compactions_keep_every_unrevoked_rule_when_the_follow_up_repairs_it)
{
    const auto report = run_cycles(true, compaction::recall_gate_mode::repair);
    ASSERT_EQ(report.last_summary.size(), 10u);
    for (int cycle = 1; cycle <= 10; ++cycle)
    {
        expect_alive_rules(report.last_summary[cycle - 1], cycle);
        EXPECT_EQ(report.last_summary[cycle - 1].find("## User rules (verbatim)"), std::string::npos);
    }
    EXPECT_EQ(report.total.verbatim, 0u);
    std::printf(
        "repairing + repair: calls %d probes %zu found %zu repaired %zu verbatim %zu\n",
        report.calls,
        report.total.probes,
        report.total.found,
        report.total.repaired,
        report.total.verbatim
    );
}

TEST_F(recall_cycles_test, without_the_gate_a_forgetful_summarizer_loses_the_rules_at_the_first_compaction)
{
    const auto report = run_cycles(false, compaction::recall_gate_mode::off);
    ASSERT_EQ(report.last_summary.size(), 10u);
    for (const auto& summary : report.last_summary)
        EXPECT_EQ(summary.find("EU suppliers only."), std::string::npos);
    EXPECT_EQ(report.calls, 10);
}

TEST_F(recall_gate_test, a_revoked_rule_the_model_copies_from_the_previous_summary_is_dropped)
{
    // The previous checkpoint carries `Never push to main.` verbatim; the span revokes it; the model
    // copies the previous part anyway.
    test::session_text t;
    t.user("u0", tokens(2500)).assistant("a0", tokens(2500));
    t.compaction(
        "c0", "u0", "## Goal\nShip.\n\n## User rules (verbatim)\n- Never push to main.\n- EU suppliers only."
    );
    t.user("u1", "Actually, you may push to main now.").assistant("a1", "Noted.");
    t.user("u2", tokens(2500)).assistant("a2", tokens(2500));
    t.user("u3", tokens(1000)).assistant("a3", tokens(1500));
    std::ofstream(path_, std::ios::binary) << t.text;
    const std::string copied =
        "## Goal\nShip.\n- You may push to main now.\n\n## User rules (verbatim)\n- Never push to main.\n"
        "- EU suppliers only.";
    summarizer_->push({.text = copied});
    auto s = open(config());
    ASSERT_TRUE(s);
    const auto [ec, out] = compact(*s);
    ASSERT_FALSE(ec) << out.message;
    EXPECT_EQ(
        out.result->summary,
        "## Goal\nShip.\n- You may push to main now.\n\n## User rules (verbatim)\n- EU suppliers only."
    );
    EXPECT_EQ(summarizer_->calls(), 1u);
    EXPECT_EQ(finished_.at(0).recall, (recall_counts{.probes = 2, .found = 2, .repaired = 0, .verbatim = 0}));
    EXPECT_EQ(
        agentctx_details().at("recall").as_object().at("rules").as_array(),
        (json::array{"EU suppliers only.", "Actually, you may push to main now."})
    );
}
