// agentctx's default policy (clearing, working budget) keeps in its checkpoints what Pi 1.6's policy keeps.
#include <agentctx/providers/offline_summarizer.hpp>
#include <agentctx/runtime/session.hpp>

#include "../providers/quality_transcripts.hpp"
#include "append_entry.hpp"
#include "open_session.hpp"
#include "run_until.hpp"

#include <boost/asio/io_context.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <set>
#include <string>
#include <vector>

using namespace agentctx;
namespace json = boost::json;

namespace {

// A source file of about `tokens` tokens (chars/4): what an agent reads while it works.
std::string file_body(int file, std::size_t tokens)
{
    std::string out;
    for (int line = 0; out.size() < tokens * 4; ++line)
        out += "int helper_" + std::to_string(file) + "_" + std::to_string(line) + "(int x) { return x * " +
               std::to_string(line + 3) + " + offset_" + std::to_string(file) + "; }\n";
    return out;
}

// After the case, the agent reads `files` more files before it answers: the work that fills the window.
std::vector<json::object> reading(int files)
{
    std::vector<json::object> out;
    for (int i = 0; i < files; ++i)
    {
        const auto id = "read_" + std::to_string(i);
        const auto path = "src/module_" + std::to_string(i) + ".cpp";
        out.push_back(
            {{"role", "assistant"},
             {"content",
              json::array{json::object{
                  {"type", "toolCall"},
                  {"id", id},
                  {"name", "read"},
                  {"arguments", json::object{{"path", path}}}}}},
             {"stopReason", "toolUse"}}
        );
        out.push_back(
            {{"role", "toolResult"},
             {"toolCallId", id},
             {"toolName", "read"},
             {"content", json::array{json::object{{"type", "text"}, {"text", file_body(i, 3000)}}}},
             {"isError", false}}
        );
    }
    out.push_back(
        {{"role", "assistant"},
         {"content", json::array{json::object{{"type", "text"}, {"text", "I have read the modules."}}}},
         {"stopReason", "stop"}}
    );
    return out;
}

struct run_result
{
    std::string summary;        // the last compaction's
    std::string kept_requests;  // the user messages after it, carried verbatim, lower-cased
    int clearings = 0;
};

// The case then the reading, appended as a host does (usage on each reply, the checks Pi 1.6 runs),
// then a manual compaction: its summary.
run_result run_case(const test::quality_case& c, compaction::compat_mode mode)
{
    boost::asio::io_context ioc;
    const auto path = test::new_session_file(
        std::string("agentctx-default-checkpoint-") +
        (mode == compaction::compat_mode::pi ? "pi" : "agentctx")
    );
    runtime::session_config config;
    config.model = {"anthropic", "claude-sonnet-4-5", 200000, 64000};
    config.compat = mode;
    config.settings.background.enabled = false;  // the same summaries, committed in the foreground
    // Both keep 8,000 tokens, so the case itself is summarized in both: with the default 20,000,
    // what clearing leaves of some cases is all kept and the manual compaction has nothing to do.
    config.settings.keep_recent_tokens = 8000;
    config.summarizer = std::make_shared<providers::offline_summarizer>(ioc.get_executor());
    auto s = test::open_session(ioc.get_executor(), path, config);
    run_result out;
    if (!s)
        return out;
    s->on_event([&](const runtime::session_event& e) {
        if (std::holds_alternative<runtime::context_cleared_event>(e))
            ++out.clearings;
    });
    auto messages = c.transcript.objects;
    for (auto& m : reading(30))
        messages.push_back(std::move(m));
    std::int64_t stamp = 1768467600000;
    for (auto m : messages)
    {
        const bool reply = m.at("role") == "assistant";
        if (reply)
        {
            const auto input = s->current()->context_tokens();
            m["usage"] = json::object{
                {"input", input},
                {"output", 100},
                {"cacheRead", 0},
                {"cacheWrite", 0},
                {"totalTokens", input + 100}};
            m["provider"] = "anthropic";
            m["model"] = "claude-sonnet-4-5";
            m["api"] = "anthropic-messages";
        }
        m["timestamp"] = stamp++;
        test::append_entry(ioc, *s, {{"type", "message"}, {"message", m}});
        const bool turn_end = reply && m.at("stopReason") == "stop";
        const bool results = m.at("role") == "toolResult";
        if (!turn_end && !results)
            continue;
        bool done = false;
        auto check = [&](boost::system::error_code ec, runtime::compaction_outcome) {
            EXPECT_FALSE(ec) << ec.message();
            done = true;
        };
        if (turn_end)
            s->async_on_turn_end(check);
        else
            s->async_between_turns(check);
        test::run_until(ioc, [&] { return done; });
    }
    bool done = false;
    s->async_compact(std::nullopt, [&](boost::system::error_code ec, runtime::compaction_outcome o) {
        EXPECT_FALSE(ec) << ec.message() << ": " << o.message;
        // The summarized part: what agentctx carries verbatim (the current instruction) follows it
        // in a block of its own for Pi, and is scored as a kept message below.
        if (o.result)
            out.summary = o.result->summary.substr(0, o.result->summary.find("\n\n<pinned-entries>"));
        done = true;
    });
    test::run_until(ioc, [&] { return done; });
    for (const auto& m : s->context())
        if (m.msg->role == compaction::role::user)
            out.kept_requests += test::lowered(compaction::content_text(m.msg->content)) + "\n";
    s->close();
    s.reset();
    std::filesystem::remove(path);
    return out;
}

std::vector<std::string> headings(const std::string& text)
{
    std::vector<std::string> out;
    std::size_t at = 0;
    while (at < text.size())
    {
        const auto end = std::min(text.find('\n', at), text.size());
        if (text.compare(at, 3, "## ") == 0 || text.compare(at, 4, "### ") == 0)
            out.push_back(text.substr(at, end - at));
        at = end + 1;
    }
    return out;
}

}  // namespace

// What Pi's policy keeps, agentctx's defaults keep: the same sections, and every fact the Pi-policy
// checkpoint holds (the goal, the constraints, the decisions, the current request, what was done,
// the paths and commands), although the older tool results reach the summary as placeholders. A
// fact of the user's current instruction may instead be in that message, which agentctx carries
// verbatim after the summary (the current instruction is never summarized). Errors are not
// compared: an error read only from a cleared tool result is in the placeholder's original
// (session::original), not in the summary.
TEST(default_checkpoint, agentctx_defaults_keep_the_sections_and_facts_of_pi_policy_checkpoints)
{
    int compared = 0;
    for (const auto& c : test::quality_cases())
    {
        if (c.previous_summary)
            continue;  // a case over a host-supplied previous checkpoint: no session to replay
        SCOPED_TRACE(c.name);
        const auto pi = run_case(c, compaction::compat_mode::pi);
        const auto ours = run_case(c, compaction::compat_mode::agentctx);
        if (std::getenv("AGENTCTX_SHOW_CHECKPOINTS"))
            std::cout << "=== " << c.name << " (pi)\n"
                      << pi.summary << "\n=== (agentctx)\n"
                      << ours.summary << "\n";
        ASSERT_FALSE(pi.summary.empty());
        ASSERT_FALSE(ours.summary.empty());
        EXPECT_EQ(pi.clearings, 0);
        EXPECT_GE(ours.clearings, 1);  // the defaults cleared old results before the summary
        EXPECT_EQ(headings(ours.summary), headings(pi.summary));
        const auto pi_score = test::score_checkpoint(pi.summary, c.facts);
        const auto our_score = test::score_checkpoint(ours.summary, c.facts);
        const std::set<std::string> pi_missing(pi_score.missing.begin(), pi_score.missing.end());
        for (const auto& f : c.facts.required)
        {
            const auto name = f.cls + ": " + f.phrase;
            const bool lost = std::find(our_score.missing.begin(), our_score.missing.end(), name) !=
                              our_score.missing.end();
            const bool carried = ours.kept_requests.find(test::lowered(f.phrase)) != std::string::npos;
            if (lost && !pi_missing.contains(name) && !carried && f.cls != "errors")
                ADD_FAILURE() << "lost under agentctx defaults: " << name << "\n---\n" << ours.summary;
        }
        EXPECT_EQ(our_score.forbidden_found, pi_score.forbidden_found);
        ++compared;
    }
    EXPECT_GE(compared, 8);
}
