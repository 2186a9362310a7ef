// Decisions, plans and changes of approach stated in the assistant's text.
#include "facts.hpp"
#include "text.hpp"

#include <cctype>

namespace agentctx::providers::offline {

namespace {

void statements_of(const part& p, work_facts& f)
{
    std::vector<std::string> plan;
    for (const auto& s : sentences(p.text))
    {
        if (length(s) > 300)
            continue;
        const auto l = lower(s);
        const bool numbered =
            s.size() > 2 && std::isdigit(static_cast<unsigned char>(s[0])) && (s[1] == '.' || s[1] == ')');
        if (numbered || starts_with_any(
                            l,
                            {"next,",
                             "next i",
                             "next:",
                             "next step",
                             "then i will",
                             "then i'll",
                             "after that",
                             "finally,",
                             "i'll then",
                             "i will then",
                             "my plan",
                             "plan:",
                             "remaining:"}
                        ))
            plan.push_back(s);
        else if (states_choice(l))
            add_unique(f.decisions, s, true);
    }
    if (!plan.empty())
        f.plan = std::move(plan);  // the most recent plan replaces older ones
}

}  // namespace

void assistant_statements(const std::vector<part>& parts, std::size_t since, work_facts& f)
{
    for (std::size_t i = since; i < parts.size(); ++i)
        if (parts[i].label == "Assistant")
            statements_of(parts[i], f);
}

std::size_t last_change_of_approach(const std::vector<part>& parts)
{
    std::size_t at = 0;
    for (std::size_t i = 0; i < parts.size(); ++i)
        if (parts[i].label == "Assistant" && has_any_word(
                                                 lower(parts[i].text),
                                                 {"instead",
                                                  "rather than",
                                                  "switch to",
                                                  "switching to",
                                                  "abandon",
                                                  "give up on",
                                                  "won't work",
                                                  "will not work"}
                                             ))
            at = i;
    return at;
}

}  // namespace agentctx::providers::offline
