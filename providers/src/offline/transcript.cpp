// Reads the summary prompt back into its pieces: transcript parts, decoded tool calls, previous summary.
#include "transcript.hpp"

#include "text.hpp"

#include <agentctx/compaction/serialize.hpp>

#include <boost/json/parse.hpp>

#include <array>

namespace agentctx::providers::offline {

namespace {

constexpr std::array<std::string_view, 5> labels{
    "[User]: ", "[Assistant thinking]: ", "[Assistant tool calls]: ", "[Assistant]: ", "[Tool result]: "};

std::string_view label_at(std::string_view conv, std::size_t pos)
{
    for (auto l : labels)
        if (conv.substr(pos, l.size()) == l)
            return l;
    // A peer's label names the agent: `[Agent NAME (another agent, not the user)]: ` on one line.
    if (conv.substr(pos, compaction::peer_label_prefix.size()) != compaction::peer_label_prefix)
        return {};
    const auto end = conv.find(std::string(compaction::peer_label_suffix) + ": ", pos);
    if (end == std::string_view::npos || conv.substr(pos, end - pos).find('\n') != std::string_view::npos)
        return {};
    return conv.substr(pos, end - pos + compaction::peer_label_suffix.size() + 2);
}

std::vector<part> parse_parts(std::string_view conv)
{
    std::vector<part> parts;
    std::size_t pos = 0;
    while (pos < conv.size())
    {
        const auto l = label_at(conv, pos);
        if (l.empty())
            break;
        const std::size_t start = pos + l.size();
        std::size_t next = start;
        while ((next = conv.find("\n\n[", next)) != std::string_view::npos && label_at(conv, next + 2).empty()
        )
            next += 2;
        const std::size_t end = next == std::string_view::npos ? conv.size() : next;
        part p{std::string(l.substr(1, l.size() - 4)), std::string(conv.substr(start, end - start)), {}};
        if (l.starts_with(compaction::peer_label_prefix))
            p.label = "Agent";  // another agent's words: never the user's request or permission
        if (p.label == "Assistant tool calls")
            p.calls = parse_calls(p.text);
        parts.push_back(std::move(p));
        pos = next == std::string_view::npos ? conv.size() : next + 2;
    }
    return parts;
}

// End of the JSON value starting at `i` (a string, a bracketed value, or a scalar).
std::size_t value_end(std::string_view s, std::size_t i)
{
    int depth = 0;
    bool in_string = false;
    for (std::size_t j = i; j < s.size(); ++j)
    {
        const char c = s[j];
        if (in_string)
        {
            if (c == '\\')
                ++j;
            else if (c == '"')
            {
                in_string = false;
                if (depth == 0)
                    return j + 1;
            }
            continue;
        }
        if (c == '"')
            in_string = true;
        else if (c == '{' || c == '[')
            ++depth;
        else if (c == '}' || c == ']')
        {
            if (--depth == 0)
                return j + 1;
        }
        else if (depth == 0 && (c == ',' || c == ')'))
            return j;
    }
    return std::string_view::npos;
}

std::string_view take_between(std::string_view s, std::string_view open, std::string_view close)
{
    const auto a = s.find(open);
    if (a == std::string_view::npos)
        return {};
    const auto b = s.find(close, a + open.size());
    return b == std::string_view::npos ? std::string_view{} : s.substr(a + open.size(), b - a - open.size());
}

}  // namespace

std::string tool_call::arg(std::string_view key) const
{
    const auto* v = args.if_contains(key);
    return v && v->is_string() ? std::string(v->get_string()) : std::string();
}

std::vector<tool_call> parse_calls(std::string_view text)
{
    std::vector<tool_call> out;
    std::size_t pos = 0;
    while (pos < text.size())
    {
        const auto open = text.find('(', pos);
        if (open == std::string_view::npos)
            break;
        tool_call c{one_line(text.substr(pos, open - pos)), {}};
        std::size_t i = open + 1;
        while (i < text.size() && text[i] != ')')
        {
            const auto eq = text.find('=', i);
            const auto end = eq == std::string_view::npos ? eq : value_end(text, eq + 1);
            if (end == std::string_view::npos)
                break;
            boost::system::error_code ec;
            auto v = boost::json::parse(text.substr(eq + 1, end - eq - 1), ec);
            if (!ec)
                c.args[one_line(text.substr(i, eq - i))] = std::move(v);
            i = end;
            if (text.substr(i, 2) == ", ")
                i += 2;
        }
        out.push_back(std::move(c));
        const auto next = text.find("; ", i);
        if (next == std::string_view::npos)
            break;
        pos = next + 2;
    }
    return out;
}

std::string section_body(std::string_view summary, std::string_view heading)
{
    const std::string h = std::string(heading) + "\n";
    auto a = summary.find(h);
    if (a == std::string_view::npos)
        return {};
    a += h.size();
    std::size_t b = a;
    while ((b = summary.find("\n#", b)) != std::string_view::npos && summary.substr(b + 1, 2) != "##" &&
           summary.substr(b + 1, 2) != "# ")
        ++b;
    return std::string(summary.substr(a, b == std::string_view::npos ? std::string_view::npos : b - a));
}

prompt_view read_prompt(std::string_view prompt)
{
    prompt_view v;
    std::string_view conv;
    std::size_t after = std::string_view::npos;
    if (const auto open = prompt.find("<conversation>\n"); open != std::string_view::npos)
    {
        const auto close = prompt.find(
            "\n</conversation>", open
        );  // an empty transcript: "<conversation>\n\n</conversation>"
        conv = prompt.substr(
            open + 15, close == std::string_view::npos || close < open + 15 ? 0 : close - open - 15
        );
        after = close == std::string_view::npos ? close : close + 16;
    }
    else if (const auto c = prompt.find("# Conversation\n"); c != std::string_view::npos)
    {
        const auto start = c + 15;
        const auto ins =
            prompt.rfind("\n\n# Instructions\n");  // the last one: the transcript may quote the heading
        conv = prompt.substr(
            start, ins == std::string_view::npos || ins < start ? std::string_view::npos : ins - start
        );
        after = ins != std::string_view::npos && ins >= start ? ins : std::string_view::npos;
    }
    while (!conv.empty() && conv.back() == '\n')
        conv.remove_suffix(1);
    v.parts = parse_parts(conv);
    v.instructions = after == std::string_view::npos ? std::string() : std::string(prompt.substr(after));
    v.previous_summary =
        std::string(take_between(v.instructions, "<previous-summary>\n", "\n</previous-summary>"));
    std::string own = v.instructions;  // the instructions without the previous checkpoint
    if (!v.previous_summary.empty())
        own.erase(own.find(v.previous_summary), v.previous_summary.size());
    v.turn_prefix = own.find("## Original Request") != std::string::npos;
    if (const auto f = v.instructions.rfind("\n\nAdditional focus: ");
        f != std::string::npos && !v.turn_prefix)
        v.focus = one_line(v.instructions.substr(f + 20));
    return v;
}

}  // namespace agentctx::providers::offline
