// Goal, constraints and user decisions from the user's messages.
#include "facts.hpp"
#include "text.hpp"

#include <agentctx/compaction/llm_convert.hpp>

#include <algorithm>
#include <cctype>

namespace agentctx::providers::offline {

namespace {

bool is_greeting(std::string_view lowered)
{
    const auto w = fingerprint(lowered);
    for (std::string_view g :
         {"hi",
          "hello",
          "hey",
          "thanks",
          "thankyou",
          "ok",
          "okay",
          "yes",
          "no",
          "sure",
          "continue",
          "goon",
          "great",
          "cool",
          "hithere",
          "hellothere",
          "goodmorning",
          "thx"})
        if (w == g)
            return true;
    return false;
}

bool substantive(std::string_view text)
{
    const auto t = one_line(text);
    if (t.empty() || t.front() == '/' || is_greeting(lower(t)))
        return false;
    const bool non_ascii =
        std::any_of(t.begin(), t.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; });
    return word_count(t) >= 3 || (non_ascii && length(t) >= 8);
}

bool redefines(std::string_view lowered)
{
    return starts_with_any(
               lowered,
               {"actually",
                "new task",
                "forget that",
                "forget it",
                "scratch that",
                "change of plan",
                "instead,",
                "instead of that",
                "stop that",
                "never mind",
                "nevermind"}
           ) ||
           has_any_word(
               lowered, {"new task:", "forget that", "scratch that", "change of plans", "instead of that"}
           );
}

bool is_constraint(std::string_view lowered);

// The request's sentences up to ~400 units, constraints left to their own section when others remain.
std::string request_text(std::string_view text)
{
    auto s = sentences(text);
    std::vector<std::string> asks;
    for (auto x : s)
    {
        const auto l = lower(x);
        if (is_constraint(l) || starts_with_any(
                                    l,
                                    {"actually, forget",
                                     "forget that",
                                     "forget the",
                                     "forget it",
                                     "scratch that",
                                     "never mind",
                                     "nevermind",
                                     "change of plan"}
                                ))
            continue;
        for (std::string_view marker : {"actually, ", "new task: ", "instead, ", "new task - "})
            if (lower(x).substr(0, marker.size()) == marker && x.size() > marker.size())
            {
                x = x.substr(marker.size());
                x[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(x[0])));
            }
        asks.push_back(x);
    }
    if (!asks.empty())
        s = std::move(asks);
    std::string out;
    for (const auto& x : s)
    {
        if (length(out) + length(x) > 400)
            break;
        out += (out.empty() ? "" : " ") + x;
    }
    return out.empty() && !s.empty() ? clip_words(s.front(), 400) : out;
}

bool is_constraint(std::string_view lowered)
{
    return has_any_word(lowered, {"must",    "never",       "always",    "don't",   "do not",    "dont",
                                  "prefer",  "please keep", "only",      "avoid",   "make sure", "keep",
                                  "mustn't", "should not",  "shouldn't", "niemals", "immer",     "nie",
                                  "jamais",  "toujours",    "ne pas",    "nunca",   "siempre",   "não"});
}

// A repeated constraint moves last; a longer restatement replaces the shorter one it contains.
void add_restatement(std::vector<std::string>& v, const std::string& s)
{
    const auto fp = fingerprint(s);
    for (auto it = v.begin(); it != v.end(); ++it)
    {
        const auto old = fingerprint(*it);
        if (fp.find(old) != std::string::npos || old.find(fp) != std::string::npos)
        {
            std::string keep = fp.size() >= old.size() ? s : *it;
            v.erase(it);
            v.push_back(std::move(keep));
            return;
        }
    }
    v.push_back(s);
}

}  // namespace

void add_unique(std::vector<std::string>& v, std::string item, bool move_to_end)
{
    if (item.empty())
        return;
    const auto fp = fingerprint(item);
    auto it = std::find_if(v.begin(), v.end(), [&](const std::string& x) { return fingerprint(x) == fp; });
    if (it != v.end())
    {
        if (!move_to_end)
            return;
        v.erase(it);
    }
    v.push_back(std::move(item));
}

bool states_choice(std::string_view l)
{
    if (has_any_word(
            l,
            {"i'll use",
             "i will use",
             "we'll use",
             "we will use",
             "let's use",
             "we decided",
             "i decided",
             "decided to",
             "going with",
             "go with",
             "i chose",
             "we chose",
             "switching to",
             "opting for",
             "settled on",
             "the approach is",
             "decision:"}
        ))
        return true;
    // "instead of" / "rather than" only with someone choosing: not "returns two rows instead of three".
    return has_any_word(l, {"instead of", "rather than"}) &&
           has_any_word(
               l, {"i'll", "i will", "we'll", "we will", "let's", "use", "using", "switch to", "prefer", "go"}
           );
}

request_facts extract_requests(const std::vector<part>& parts)
{
    request_facts f;
    for (std::size_t i = 0; i < parts.size(); ++i)
    {
        const auto& p = parts[i];
        if (p.label != "User")
            continue;
        if (p.text.starts_with(compaction::compaction_summary_prefix) ||
            p.text.starts_with(compaction::branch_summary_prefix))
        {
            if (f.goal.empty())  // a summary inside the messages carries the goal so far
                f.goal = one_line(section_body(p.text, "## Goal"));
            continue;
        }
        if (p.text.starts_with("Ran `"))  // a user's `!command`, not a request
            continue;
        const auto l = lower(one_line(p.text));
        if (substantive(p.text))
        {
            if (f.goal.empty() || redefines(l))
            {
                f.redefined = !f.goal.empty();
                f.goal = request_text(p.text);
                f.goal_at = i;
            }
            f.last_request = request_text(p.text);
        }
        for (const auto& s : sentences(p.text))
        {
            const auto sl = lower(s);
            if (length(s) > 300 || s.front() == '/')
                continue;
            if (is_constraint(sl))
                add_restatement(f.constraints, s);
            else if (states_choice(sl))
                add_unique(f.decisions, s, true);
        }
    }
    return f;
}

}  // namespace agentctx::providers::offline
