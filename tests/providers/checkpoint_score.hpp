// Scores any checkpoint text against the facts it must keep and must not contain (offline or model).
#pragma once

#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace agentctx::test {

/// A fact class ("goal", "constraints", …) and a phrase that must (or must not) appear.
struct fact
{
    std::string cls;
    std::string phrase;
};

struct checkpoint_facts
{
    std::vector<fact> required;
    std::vector<fact> forbidden;
};

struct checkpoint_score
{
    std::map<std::string, std::pair<int, int>> recall;  // class -> found, required
    std::vector<std::string> missing;
    std::vector<std::string> forbidden_found;
};

/// The sections a class is looked up in; empty: the whole text.
inline std::vector<std::string_view> sections_for(std::string_view cls)
{
    if (cls == "goal")
        return {"## Goal", "## Original Request"};
    if (cls == "constraints")
        return {"## Constraints & Preferences"};
    if (cls == "decisions")
        return {"## Key Decisions"};
    if (cls == "unfinished")
        return {"### In Progress", "### Blocked", "## Next Steps"};
    if (cls == "blockers")
        return {"### Blocked"};
    if (cls == "done")
        return {"### Done", "## Early Progress", "## Progress So Far"};
    return {};
}

inline std::string lowered(std::string_view s)
{
    std::string out(s);
    for (auto& c : out)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

/// The text under `heading` up to the next line starting with '#'.
inline std::string section_text(std::string_view text, std::string_view heading)
{
    const std::string h = std::string(heading) + "\n";
    const auto a = text.find(h);
    if (a == std::string_view::npos)
        return {};
    const auto b = text.find("\n#", a + h.size());
    return std::string(
        text.substr(a + h.size(), b == std::string_view::npos ? std::string_view::npos : b - a - h.size())
    );
}

/// Where a fact of class `cls` is looked for, lower-cased.
inline std::string scope(std::string_view text, std::string_view cls)
{
    const auto names = sections_for(cls);
    if (names.empty())
        return lowered(text);
    std::string out;
    for (auto n : names)
        out += section_text(text, n) + "\n";
    return lowered(out);
}

/// Case-insensitive phrase lookup per class scope; recall per class, every miss and every forbidden hit.
inline checkpoint_score score_checkpoint(std::string_view text, const checkpoint_facts& facts)
{
    checkpoint_score s;
    for (const auto& f : facts.required)
    {
        auto& [found, total] = s.recall[f.cls];
        ++total;
        if (scope(text, f.cls).find(lowered(f.phrase)) != std::string::npos)
            ++found;
        else
            s.missing.push_back(f.cls + ": " + f.phrase);
    }
    for (const auto& f : facts.forbidden)
        if (scope(text, f.cls).find(lowered(f.phrase)) != std::string::npos)
            s.forbidden_found.push_back(f.cls + ": " + f.phrase);
    return s;
}

}  // namespace agentctx::test
