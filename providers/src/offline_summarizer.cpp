// The offline summarizer: rule-based extraction from the serialized transcript, within the cap.
#include <agentctx/providers/offline_summarizer.hpp>

#include <agentctx/compaction/json_text.hpp>
#include <agentctx/compaction/summary_prompt.hpp>

#include <boost/asio/append.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace agentctx::providers {

namespace {

struct part
{
    std::string label;  // "User", "Assistant", "Assistant thinking", "Assistant tool calls", "Tool result"
    std::string text;
};

std::string between(std::string_view s, std::string_view open, std::string_view close)
{
    const auto a = s.find(open);
    if (a == std::string_view::npos)
        return {};
    const auto b = s.find(close, a + open.size());
    if (b == std::string_view::npos)
        return {};
    return std::string(s.substr(a + open.size(), b - a - open.size()));
}

// Splits serialize_conversation output back into its labelled parts.
std::vector<part> parse_parts(std::string_view conv)
{
    static const std::vector<std::string> labels{"[User]: ", "[Assistant thinking]: ", "[Assistant tool calls]: ",
                                                 "[Assistant]: ", "[Tool result]: "};
    auto label_at = [&](std::size_t pos) -> const std::string* {
        for (const auto& l : labels)
            if (conv.substr(pos, l.size()) == l)
                return &l;
        return nullptr;
    };
    std::vector<part> parts;
    std::size_t pos = 0;
    while (pos < conv.size())
    {
        const std::string* l = label_at(pos);
        if (!l)
            break;
        const std::size_t start = pos + l->size();
        std::size_t next = start;
        for (;;)
        {
            next = conv.find("\n\n[", next);
            if (next == std::string_view::npos || label_at(next + 2))
                break;
            next += 2;
        }
        const std::size_t end = next == std::string_view::npos ? conv.size() : next;
        parts.push_back({l->substr(1, l->size() - 4), std::string(conv.substr(start, end - start))});
        pos = next == std::string_view::npos ? conv.size() : next + 2;
    }
    return parts;
}

// Cuts at a code point boundary, in UTF-16 units, with an ellipsis.
std::string clip(std::string_view s, std::size_t n)
{
    if (compaction::utf16_length(s) <= n)
        return std::string(s);
    std::string p = compaction::utf16_prefix(s, n);
    if (p.size() >= 3 && p.compare(p.size() - 3, 3, "\xEF\xBF\xBD") == 0 && s.substr(p.size() - 3, 3) != "\xEF\xBF\xBD")
        p.erase(p.size() - 3);
    return p + "…";
}

std::string one_line(std::string_view s)
{
    std::string out;
    bool space = false;
    for (char c : s)
    {
        const bool ws = c == '\n' || c == '\r' || c == '\t' || c == ' ';
        if (ws)
            space = !out.empty();
        else
        {
            if (space)
                out += ' ';
            space = false;
            out += c;
        }
    }
    return out;
}

std::vector<std::string> sentences(std::string_view s)
{
    std::vector<std::string> out;
    std::string cur;
    for (std::size_t i = 0; i < s.size(); ++i)
    {
        const char c = s[i];
        if (c == '\n' || ((c == '.' || c == '!' || c == '?') && (i + 1 == s.size() || s[i + 1] == ' ' || s[i + 1] == '\n')))
        {
            if (c != '\n')
                cur += c;
            if (auto t = one_line(cur); !t.empty())
                out.push_back(t);
            cur.clear();
        }
        else
            cur += c;
    }
    if (auto t = one_line(cur); !t.empty())
        out.push_back(t);
    return out;
}

std::string lower(std::string_view s)
{
    std::string out(s);
    for (auto& c : out)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

bool has_word(const std::string& lowered, std::string_view word)
{
    for (std::size_t p = lowered.find(word); p != std::string::npos; p = lowered.find(word, p + 1))
    {
        const bool left = p == 0 || !std::isalnum(static_cast<unsigned char>(lowered[p - 1]));
        const std::size_t e = p + word.size();
        const bool right = e >= lowered.size() || !std::isalnum(static_cast<unsigned char>(lowered[e]));
        if (left && right)
            return true;
    }
    return false;
}

void add_unique(std::vector<std::string>& v, std::string item)
{
    if (!item.empty() && std::find(v.begin(), v.end(), item) == v.end())
        v.push_back(std::move(item));
}

// `read(path="src/a.ts", offset=1)` -> `read src/a.ts`; several calls joined by "; ".
std::vector<std::string> calls_of(std::string_view text)
{
    std::vector<std::string> out;
    std::size_t pos = 0;
    while (pos < text.size())
    {
        const auto open = text.find('(', pos);
        if (open == std::string_view::npos)
            break;
        std::string name(text.substr(pos, open - pos));
        name = one_line(name);
        std::string arg;
        const auto q = text.find('"', open);
        if (q != std::string_view::npos)
        {
            std::size_t e = q + 1;
            while (e < text.size() && (text[e] != '"' || text[e - 1] == '\\'))
                ++e;
            arg = one_line(text.substr(q + 1, e - q - 1));
        }
        out.push_back(clip(arg.empty() ? name : name + " " + arg, 120));
        const auto next = text.find("); ", open);
        if (next == std::string_view::npos)
            break;
        pos = next + 3;
    }
    return out;
}

// Tokens that look like file paths: contain '/' or end in .ext.
void paths_of(std::string_view text, std::vector<std::string>& out)
{
    std::size_t i = 0;
    while (i < text.size())
    {
        while (i < text.size() && (std::isspace(static_cast<unsigned char>(text[i])) || text[i] == '"' || text[i] == '\'' ||
                                   text[i] == '(' || text[i] == '=' || text[i] == ','))
            ++i;
        std::size_t j = i;
        while (j < text.size() && !std::isspace(static_cast<unsigned char>(text[j])) && text[j] != '"' && text[j] != '\'' &&
               text[j] != ',' && text[j] != ')' && text[j] != '(')
            ++j;
        std::string tok(text.substr(i, j - i));
        while (!tok.empty() && (tok.back() == '.' || tok.back() == ':' || tok.back() == ';'))
            tok.pop_back();
        const auto dot = tok.rfind('.');
        const bool ext = dot != std::string::npos && dot > 0 && dot + 1 < tok.size() && tok.size() - dot <= 5 &&
                         std::all_of(tok.begin() + static_cast<long>(dot) + 1, tok.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)); });
        if (tok.size() >= 3 && tok.size() <= 160 && (tok.find('/') != std::string::npos || ext) &&
            tok.find("://") == std::string::npos && std::isalnum(static_cast<unsigned char>(tok.back())))
            add_unique(out, tok);
        i = j + 1;
    }
}

struct section
{
    std::string title;
    std::vector<std::string> items;  // already formatted lines
    std::string empty = "- (none)";
};

std::string render(const std::vector<section>& sections)
{
    std::string out;
    for (const auto& s : sections)
    {
        if (!out.empty())
            out += "\n\n";
        out += s.title;
        if (s.items.empty())
            out += "\n" + s.empty;
        for (const auto& i : s.items)
            out += "\n" + i;
    }
    return out;
}

std::size_t tokens_of(const std::string& s)
{
    return (compaction::utf16_length(s) + 3) / 4;
}

// Drops items (oldest first, from the longest list) until the text fits the cap.
std::string fit(std::vector<section> sections, std::uint32_t cap)
{
    std::string text = render(sections);
    while (cap && tokens_of(text) > cap)
    {
        auto longest = std::max_element(sections.begin(), sections.end(), [](const section& a, const section& b) {
            return a.items.size() < b.items.size();
        });
        if (longest->items.empty())
            return clip(text, cap * 4 - 1);
        longest->items.erase(longest->items.begin());
        text = render(sections);
    }
    return text;
}

}  // namespace

compaction::summary_output offline_summary(const compaction::summary_prompt& prompt)
{
    const bool prefix_mode = prompt.prompt.find(compaction::turn_prefix_instructions) != std::string::npos;
    // The turn-prefix prompt is `# Conversation\n…\n\n# Instructions\n…` (no tags, no previous summary).
    std::string conv, previous;
    if (prefix_mode)
    {
        constexpr std::string_view head = "# Conversation\n", tail = "\n\n# Instructions\n";
        const std::string_view text = prompt.prompt;
        if (const auto end = text.rfind(tail); text.starts_with(head) && end != std::string_view::npos && end >= head.size())
            conv = std::string(text.substr(head.size(), end - head.size()));
    }
    else
    {
        conv = between(prompt.prompt, "<conversation>\n", "\n</conversation>");
        previous = between(prompt.prompt, "<previous-summary>\n", "\n</previous-summary>");
    }
    std::string focus;
    if (const auto f = prompt.prompt.rfind("\n\nAdditional focus: "); f != std::string::npos)
        focus = one_line(prompt.prompt.substr(f + 20));
    const auto parts = parse_parts(conv);

    std::vector<std::string> users, constraints, done, decisions, context, errors, commands;
    std::optional<std::string> pending_call;
    for (std::size_t i = 0; i < parts.size(); ++i)
    {
        const auto& p = parts[i];
        if (p.label == "User")
        {
            users.push_back(p.text);
            for (const auto& s : sentences(p.text))
            {
                const auto l = lower(s);
                if (has_word(l, "must") || has_word(l, "never") || has_word(l, "always") || has_word(l, "don't") ||
                    has_word(l, "do not") || has_word(l, "prefer"))
                    add_unique(constraints, "- " + clip(s, 200));
            }
            paths_of(p.text, context);
        }
        else if (p.label == "Assistant tool calls")
        {
            const bool answered = i + 1 < parts.size() && parts[i + 1].label == "Tool result";
            for (const auto& c : calls_of(p.text))
            {
                if (answered)
                    add_unique(done, "- [x] " + c);
                else
                    pending_call = c;
                if (c.rfind("bash ", 0) == 0)
                    add_unique(commands, "- `" + c.substr(5) + "`");
            }
            paths_of(p.text, context);
        }
        else if (p.label == "Assistant")
        {
            for (const auto& s : sentences(p.text))
            {
                const auto l = lower(s);
                if (has_word(l, "will") || has_word(l, "because") || has_word(l, "decided") || has_word(l, "instead") ||
                    has_word(l, "i'll") || has_word(l, "should"))
                    add_unique(decisions, "- **" + clip(s, 60) + "**: stated by the assistant");
            }
        }
        else if (p.label == "Tool result")
        {
            for (const auto& line : sentences(p.text))
            {
                const auto l = lower(line);
                if (l.find("error") != std::string::npos || l.find("fail") != std::string::npos ||
                    l.find("exception") != std::string::npos || l.find("panic") != std::string::npos)
                    add_unique(errors, "- `" + clip(line, 160) + "`");
            }
        }
    }
    // Keep the newest items: later work matters most to the continuation.
    auto newest = [](std::vector<std::string> v, std::size_t n) {
        if (v.size() > n)
            v.erase(v.begin(), v.end() - static_cast<long>(n));
        return v;
    };
    std::vector<std::string> critical;
    for (const auto& p : newest(context, 15))
        critical.push_back("- " + p);
    for (auto& c : newest(commands, 5))
        critical.push_back(std::move(c));
    for (auto& e : newest(errors, 5))
        critical.push_back(std::move(e));

    std::vector<section> sections;
    const std::string first_request = users.empty() ? std::string() : clip(one_line(users.front()), 400);
    if (prefix_mode)
    {
        sections.push_back({"## Original Request", {first_request.empty() ? "(not in the kept text)" : first_request}});
        sections.push_back({"## Progress So Far", newest(done, 20)});
        if (!focus.empty())
            critical.push_back("- Focus: " + clip(focus, 200));
        sections.push_back({"## Context Needed to Continue", critical});
    }
    else
    {
        std::string goal = one_line(between(previous + "\n\n", "## Goal\n", "\n\n"));
        if (goal.empty())
            goal = first_request.empty() ? "(not stated in the summarized messages)" : first_request;
        std::vector<std::string> prev_constraints;
        for (const auto& line : sentences(between(previous + "\n\n", "## Constraints & Preferences\n", "\n\n")))
            if (line != "- (none)" && line.rfind("- ", 0) == 0)
                add_unique(prev_constraints, line);
        for (auto& c : constraints)
            add_unique(prev_constraints, std::move(c));
        std::vector<std::string> prev_done;
        for (const auto& line : sentences(between(previous + "\n\n", "### Done\n", "\n\n")))
            if (line.rfind("- [x]", 0) == 0)
                add_unique(prev_done, line);
        for (auto& d : done)
            add_unique(prev_done, std::move(d));
        std::vector<std::string> next;
        if (!users.empty())
            next.push_back("1. Continue with: " + clip(one_line(users.back()), 300));
        if (!focus.empty())
            next.push_back(std::to_string(next.size() + 1) + ". Focus: " + clip(focus, 200));
        sections.push_back({"## Goal", {goal}});
        sections.push_back({"## Constraints & Preferences", newest(prev_constraints, 12), "- (none)"});
        sections.push_back({"## Progress\n### Done", newest(prev_done, 25), "- [x] (nothing completed yet)"});
        sections.push_back({"### In Progress", pending_call ? std::vector<std::string>{"- [ ] " + *pending_call} : std::vector<std::string>{}, "- [ ] (none)"});
        sections.push_back({"### Blocked", {}, "- (none)"});
        sections.push_back({"## Key Decisions", newest(decisions, 8), "- (none)"});
        sections.push_back({"## Next Steps", next, "1. Ask the user for the next task."});
        sections.push_back({"## Critical Context", critical, "- (none)"});
    }
    return {fit(std::move(sections), prompt.max_output_tokens), compaction::stop_reason::stop, std::nullopt};
}

void offline_summarizer::summarize_impl(
    compaction::summary_prompt prompt,
    boost::asio::any_completion_handler<summarize_signature> handler
)
{
    // Synchronous work, completed through the executor so the handler never runs inline.
    auto out = offline_summary(prompt);
    if (delay_.count() == 0)
    {
        boost::asio::post(ex_, boost::asio::append(std::move(handler), boost::system::error_code{}, std::move(out)));
        return;
    }
    auto strand = boost::asio::make_strand(ex_);
    auto timer = std::make_shared<boost::asio::steady_timer>(strand, delay_);
    auto slot = boost::asio::get_associated_cancellation_slot(handler);
    if (slot.is_connected())
        slot.assign([timer, strand](boost::asio::cancellation_type) {
            boost::asio::post(strand, [timer] { timer->cancel(); });
        });
    timer->async_wait([timer, handler = std::move(handler), out = std::move(out)](boost::system::error_code ec) mutable {
        boost::asio::get_associated_cancellation_slot(handler).clear();
        if (ec)
            std::move(handler)(boost::asio::error::operation_aborted, compaction::summary_output{});
        else
            std::move(handler)(boost::system::error_code{}, std::move(out));
    });
}

}  // namespace agentctx::providers
