// Renders checkpoint sections as markdown and trims whole bullets until the text fits the cap.
#include "render.hpp"

#include "text.hpp"

#include <algorithm>

namespace agentctx::providers::offline {

std::string render(const std::vector<section>& sections)
{
    std::string out;
    for (const auto& s : sections)
    {
        if (!out.empty())
            out += "\n\n";
        out += s.title;
        if (s.items.empty())
            out.append(1, '\n').append(s.empty);
        for (const auto& i : s.items)
            out.append(1, '\n').append(mask_secrets(i));
    }
    return out;
}

namespace {

std::size_t tokens_of(const std::string& s)
{
    return (length(s) + 3) / 4;
}

}  // namespace

std::string fit(std::vector<section> sections, std::uint32_t cap)
{
    std::string text = render(sections);
    while (cap && tokens_of(text) > cap)
    {
        if (sections.size() < 2)
            return clip_words(text, std::size_t{cap} * 4);
        // The first section (the goal) is kept whole; the longest other list loses a bullet.
        auto longest =
            std::max_element(sections.begin() + 1, sections.end(), [](const section& a, const section& b) {
                return a.items.size() < b.items.size();
            });
        if (longest->items.empty())
            return clip_words(text, std::size_t{cap} * 4);
        if (longest->newest_first)
            longest->items.pop_back();
        else
            longest->items.erase(longest->items.begin());
        text = render(sections);
    }
    return text;
}

}  // namespace agentctx::providers::offline
