// The recall gate's match of probes against a summary, the verbatim rules part and the follow-up request.
#include <agentctx/compaction/recall.hpp>

#include "recall_text.hpp"

#include <boost/json/array.hpp>

#include <algorithm>

namespace agentctx::compaction {

namespace {

// One summary line as the match sees it: its content words and whether it negates.
struct line_terms
{
    std::vector<std::string> terms;
    bool negation = false;
};

std::vector<line_terms> lines_of(std::string_view summary)
{
    std::vector<line_terms> out;
    std::size_t pos = 0;
    while (pos < summary.size())
    {
        const auto nl = summary.find('\n', pos);
        const auto line =
            summary.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
        pos = nl == std::string_view::npos ? summary.size() : nl + 1;
        const auto words = detail::words_of(line);
        if (words.empty())
            continue;
        out.push_back({recall_terms(line), std::any_of(words.begin(), words.end(), [](const std::string& w) {
                           return detail::is_negation(w);
                       })});
    }
    return out;
}

bool found_whole(
    const recall_probe& p, std::string_view summary, const std::vector<line_terms>& lines, double min
);

// A rule of several clauses (`Keep X and do not add Y`) is kept when each clause is, each on a
// line of its own if the summary lists them apart.
std::vector<std::string> clauses_of(const std::string& text)
{
    std::vector<std::string> out;
    std::size_t start = 0;
    for (const std::string_view joint :
         {" and do not ", " and don't ", " and never ", " and always ", ", and ", "; "})
        for (auto at = text.find(joint, start); at != std::string::npos; at = text.find(joint, start))
        {
            out.push_back(text.substr(start, at - start));
            start = at + (joint.starts_with(" and ") ? 5 : joint.size());
        }
    if (out.empty())
        return out;
    out.push_back(text.substr(start));
    return out;
}

bool found_in(
    const recall_probe& p, std::string_view summary, const std::vector<line_terms>& lines, double min
)
{
    if (found_whole(p, summary, lines, min))
        return true;
    const auto parts = p.kind == probe_kind::rule ? clauses_of(p.text) : std::vector<std::string>{};
    if (parts.size() < 2)
        return false;
    return std::all_of(parts.begin(), parts.end(), [&](const std::string& c) {
        recall_probe part{probe_kind::rule, c, recall_terms(c), detail::names_in(c), false, {}, {}};
        const auto w = detail::words_of(c);
        part.negative =
            std::any_of(w.begin(), w.end(), [](const std::string& x) { return detail::is_negation(x); });
        return found_whole(part, summary, lines, min);
    });
}

bool found_whole(
    const recall_probe& p, std::string_view summary, const std::vector<line_terms>& lines, double min
)
{
    for (const auto& n : p.names)
        if (!detail::contains_nocase(summary, n))
            return false;
    std::vector<std::string> strong;
    for (const auto& t : p.terms)
        if (!detail::is_weak_verb(t))
            strong.push_back(t);
    const auto& need = strong.empty() ? p.terms : strong;
    if (need.empty())
        return true;
    for (const auto& l : lines)
    {
        if (p.negative && !l.negation)
            continue;
        const auto hits = std::count_if(need.begin(), need.end(), [&](const std::string& t) {
            return std::find(l.terms.begin(), l.terms.end(), t) != l.terms.end();
        });
        if (static_cast<double>(hits) >= min * static_cast<double>(need.size()))
            return true;
    }
    return false;
}

std::string_view kind_label(const recall_probe& p)
{
    switch (p.kind)
    {
    case probe_kind::rule:
        return "a rule the user set";
    case probe_kind::artifact:
        return "a file, command or name";
    case probe_kind::open_work:
        return "unfinished work";
    case probe_kind::decision:
        return "a decision";
    }
    return "";
}

// Where the verbatim part ends (the next `## ` heading or the end), or npos without one.
std::size_t verbatim_part_end(std::string_view summary, std::size_t& heading_at)
{
    heading_at = std::string_view::npos;
    for (std::size_t pos = 0; pos < summary.size();)
    {
        const auto hit = summary.find(verbatim_rules_heading, pos);
        if (hit == std::string_view::npos)
            return std::string_view::npos;
        if (hit == 0 || summary[hit - 1] == '\n')
        {
            heading_at = hit;
            break;
        }
        pos = hit + 1;
    }
    if (heading_at == std::string_view::npos)
        return std::string_view::npos;
    const auto next = summary.find("\n## ", heading_at + verbatim_rules_heading.size());
    return next == std::string_view::npos ? summary.size() : next;
}

}  // namespace

bool probe_found(const recall_probe& probe, std::string_view summary, double min_coverage)
{
    return found_in(probe, summary, lines_of(summary), min_coverage);
}

std::vector<recall_probe> missing_probes(
    std::span<const recall_probe> probes, std::string_view summary, double min_coverage
)
{
    const auto lines = lines_of(summary);
    std::vector<recall_probe> out;
    for (const auto& p : probes)
        if (!found_in(p, summary, lines, min_coverage))
            out.push_back(p);
    return out;
}

std::size_t add_verbatim_rules(
    std::string& summary, std::span<const recall_probe> missing, const probe_limits& limits
)
{
    std::string lines;
    std::size_t added = 0, left = 0;
    for (const auto& p : missing)
    {
        if (p.kind != probe_kind::rule)
            continue;
        const std::string line = "- " + p.text + "\n";
        if (left > 0 || lines.size() + line.size() > limits.verbatim_chars)
        {
            ++left;
            continue;
        }
        lines += line;
        ++added;
    }
    if (left > 0)
        lines += "- \u2026and " + std::to_string(left) + " more rules\n";
    if (lines.empty())
        return 0;
    lines.pop_back();  // the last line's `\n`
    std::size_t heading_at = 0;
    const auto end = verbatim_part_end(summary, heading_at);
    if (end == std::string::npos)
    {
        while (!summary.empty() && (summary.back() == '\n' || summary.back() == ' '))
            summary.pop_back();
        summary += "\n\n" + std::string(verbatim_rules_heading) + "\n" + lines;
    }
    else
        summary.insert(end, "\n" + lines);
    return added;
}

std::vector<std::string> parse_verbatim_rules(std::string_view summary)
{
    std::vector<std::string> out;
    std::size_t heading_at = 0;
    const auto end = verbatim_part_end(summary, heading_at);
    if (end == std::string_view::npos)
        return out;
    auto part = summary.substr(
        heading_at + verbatim_rules_heading.size(), end - heading_at - verbatim_rules_heading.size()
    );
    std::size_t pos = 0;
    while (pos < part.size())
    {
        const auto nl = part.find('\n', pos);
        auto line = part.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
        pos = nl == std::string_view::npos ? part.size() : nl + 1;
        if (line.starts_with("<"))
            break;  // a file block follows the part
        if (!line.starts_with("- ") || line.starts_with("- \u2026and "))
            continue;
        line.remove_prefix(2);
        if (!line.empty() && std::find(out.begin(), out.end(), line) == out.end())
            out.emplace_back(line);
    }
    return out;
}

std::vector<std::string> carried_rules(const boost::json::value& details, std::string_view summary)
{
    std::vector<std::string> out;
    const auto add = [&](std::string_view r) {
        if (!r.empty() && std::find(out.begin(), out.end(), r) == out.end())
            out.emplace_back(r);
    };
    const auto* d = details.if_object();
    const auto* ours = d ? d->if_contains("agentctx") : nullptr;
    const auto* recall = ours && ours->is_object() ? ours->get_object().if_contains("recall") : nullptr;
    const auto* rules = recall && recall->is_object() ? recall->get_object().if_contains("rules") : nullptr;
    if (rules && rules->is_array())
        for (const auto& r : rules->get_array())
            if (r.is_string() && r.get_string().size() <= 1000)
                add(r.get_string());
    for (const auto& r : parse_verbatim_rules(summary))
        add(r);
    return out;
}

summary_prompt recall_followup_prompt(
    const summary_prompt& original, const std::string& draft, std::span<const recall_probe> missing
)
{
    std::string ask = "Your checkpoint above leaves out these points of the conversation it summarizes:\n";
    for (const auto& p : missing)
    {
        ask += "- (" + std::string(kind_label(p)) + ") " + p.text;
        if (!p.overrides.empty())
            ask += " [this replaces the earlier rule: " + p.overrides + "]";
        ask += "\n";
    }
    ask += "\nWrite the whole checkpoint again in the same format: keep everything it has and add each "
           "point above to its section (the user's rules word for word under Constraints & Preferences). "
           "Output only the checkpoint.";
    summary_prompt out = original;
    if (original.head)
    {
        auto head = std::make_shared<request_head>(*original.head);
        head->messages.push_back(boost::json::object{{"role", "user"}, {"content", original.prompt}});
        head->messages.push_back(boost::json::object{{"role", "assistant"}, {"content", draft}});
        head->chars += original.prompt.size() + draft.size();
        out.head = std::move(head);
        out.prompt = std::move(ask);
        return out;
    }
    // Standalone: the same request grown at its end, so its prefix is the original's.
    out.prompt = original.prompt + "\n\n<draft-checkpoint>\n" + draft + "\n</draft-checkpoint>\n\n" + ask;
    return out;
}

boost::json::object to_json(const recall_counts& c)
{
    return boost::json::object{
        {"probes", c.probes}, {"found", c.found}, {"repaired", c.repaired}, {"verbatim", c.verbatim}};
}

}  // namespace agentctx::compaction
