// The offline summarizer: assembles the checkpoint from extracted facts, and its async wrapper.
#include <agentctx/providers/offline_summarizer.hpp>

#include "offline/facts.hpp"
#include "offline/render.hpp"
#include "offline/text.hpp"
#include "offline/transcript.hpp"

#include <agentctx/compaction/summary_prompt.hpp>

#include <boost/asio/append.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <cctype>
#include <string>
#include <vector>

namespace agentctx::providers {

namespace {

using namespace offline;

// Bullets of a previous checkpoint's section, placeholders dropped.
std::vector<std::string> previous_items(const std::string& summary, std::string_view heading)
{
    std::vector<std::string> out;
    for (const auto& l : lines(section_body(summary, heading)))
        if ((l.rfind("- ", 0) == 0 || l.rfind("1. ", 0) == 0) && l.find("(none)") == std::string::npos &&
            l.find("(nothing completed yet)") == std::string::npos)
            out.push_back(l);
    return out;
}

std::vector<std::string> merged(
    std::vector<std::string> older, const std::vector<std::string>& newer, std::size_t keep
)
{
    for (const auto& n : newer)
        add_unique(older, n, true);
    if (older.size() > keep)
        older.erase(older.begin(), older.end() - static_cast<long>(keep));
    return older;
}

std::vector<std::string> bullets(const std::vector<std::string>& sentences_, std::string_view prefix)
{
    std::vector<std::string> out;
    for (const auto& s : sentences_)
        out.push_back(std::string(prefix) + s);
    return out;
}

// "- **I'll use X**: because Y" when the sentence gives its reason.
std::vector<std::string> decision_bullets(const std::vector<std::string>& v)
{
    std::vector<std::string> out;
    for (const auto& s : v)
    {
        const auto b = lower(s).find(" because ");
        std::string head = s.substr(0, b);
        while (!head.empty() && (head.back() == ',' || head.back() == ' '))
            head.pop_back();
        out.push_back(b == std::string::npos ? "- **" + s + "**" : "- **" + head + "**: " + s.substr(b + 1));
    }
    return out;
}

std::vector<std::string> next_steps(const request_facts& r, const work_facts& w, const std::string& focus)
{
    std::vector<std::string> v;
    for (const auto& b : w.blocked)
        v.push_back("Fix the blocker: " + b.substr(2));
    if (!r.last_request.empty())
        v.push_back("Continue with the latest request: " + r.last_request);
    for (const auto& p : w.plan)
    {
        std::string s = p;
        if (s.size() > 2 && std::isdigit(static_cast<unsigned char>(s[0])) && (s[1] == '.' || s[1] == ')'))
            s = one_line(s.substr(2));
        v.push_back("Planned: " + s);
    }
    if (!focus.empty())
        v.push_back("Focus: " + clip_words(focus, 200));
    std::vector<std::string> out;
    for (std::size_t i = 0; i < v.size() && i < 8; ++i)
        out.push_back(std::to_string(i + 1) + ". " + v[i]);
    return out;
}

std::vector<section> prefix_sections(const prompt_view& pv, const request_facts& r, const work_facts& w)
{
    const bool new_form = pv.instructions.find("## Progress So Far") != std::string::npos;
    std::vector<std::string> progress = w.done;
    for (const auto& d : decision_bullets(w.decisions))
        progress.push_back(d);
    return {
        {"## Original Request", {r.goal.empty() ? "(not in the kept text)" : r.goal}},
        {new_form ? "## Progress So Far" : "## Early Progress", progress},
        {new_form ? "## Context Needed to Continue" : "## Context for Suffix", w.critical, "- (none)", true},
    };
}

std::vector<section> history_sections(const prompt_view& pv, const request_facts& r, const work_facts& w)
{
    const auto& prev = pv.previous_summary;
    std::string goal = one_line(section_body(prev, "## Goal"));
    if (goal.empty() || r.redefined)
        goal = r.goal.empty() ? "(not stated in the summarized messages)" : r.goal;
    return {
        {"## Goal", {goal}},
        {"## Constraints & Preferences",
         merged(previous_items(prev, "## Constraints & Preferences"), bullets(r.constraints, "- "), 12)},
        {"## Progress\n### Done",
         merged(previous_items(prev, "### Done"), w.done, 20),
         "- [x] (nothing completed yet)"},
        {"### In Progress", w.in_progress, "- [ ] (none)"},
        {"### Blocked", w.blocked},
        {"## Key Decisions",
         merged(
             previous_items(prev, "## Key Decisions"),
             decision_bullets(merged(r.decisions, w.decisions, 100)),
             10
         )},
        {"## Next Steps", next_steps(r, w, pv.focus), "1. Ask the user for the next task."},
        {"## Critical Context", w.critical, "- (none)", true},
    };
}

}  // namespace

compaction::summary_output offline_summary(const compaction::summary_prompt& prompt)
{
    const auto pv = read_prompt(prompt.prompt);
    const auto requests = extract_requests(pv.parts);
    const auto work = extract_work(pv.parts, requests.redefined ? requests.goal_at : 0);
    auto sections =
        pv.turn_prefix ? prefix_sections(pv, requests, work) : history_sections(pv, requests, work);
    return {fit(std::move(sections), prompt.max_output_tokens), compaction::stop_reason::stop, std::nullopt};
}

void offline_summarizer::summarize_impl(
    compaction::summary_prompt prompt, boost::asio::any_completion_handler<summarize_signature> handler
)
{
    // Synchronous work, completed through the executor so the handler never runs inline.
    auto out = offline_summary(prompt);
    if (delay_.count() == 0)
    {
        boost::asio::post(
            ex_, boost::asio::append(std::move(handler), boost::system::error_code{}, std::move(out))
        );
        return;
    }
    auto strand = boost::asio::make_strand(ex_);
    auto timer = std::make_shared<boost::asio::steady_timer>(strand, delay_);
    auto slot = boost::asio::get_associated_cancellation_slot(handler);
    if (slot.is_connected())
        slot.assign([timer, strand](boost::asio::cancellation_type) {
            boost::asio::post(strand, [timer] { timer->cancel(); });
        });
    timer->async_wait([timer, handler = std::move(handler), out = std::move(out)](boost::system::error_code ec
                      ) mutable {
        boost::asio::get_associated_cancellation_slot(handler).clear();
        if (ec)
            std::move(handler)(boost::asio::error::operation_aborted, compaction::summary_output{});
        else
            std::move(handler)(boost::system::error_code{}, std::move(out));
    });
}

}  // namespace agentctx::providers
