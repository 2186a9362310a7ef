// Text rules for the offline summarizer: sentences, keyword tests, word-safe clipping, secret masking.
#include "text.hpp"

#include <agentctx/compaction/json_text.hpp>

#include <algorithm>
#include <cctype>

namespace agentctx::providers::offline {

namespace {

bool is_space(char c)
{
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}
bool is_alnum(char c)
{
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || static_cast<unsigned char>(c) >= 0x80;
}

bool looks_like_secret(std::string_view t)
{
    auto tail_ok = [&](std::size_t from, std::size_t min) {
        if (t.size() < from + min)
            return false;
        return std::all_of(t.begin() + static_cast<long>(from), t.end(), [](char c) {
            return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
        });
    };
    for (std::string_view p : {"sk-", "ghp_", "gho_", "ghs_", "github_pat_", "xoxb-", "xoxp-"})
        if (t.substr(0, p.size()) == p && tail_ok(p.size(), 16))
            return true;
    return t.substr(0, 4) == "AKIA" && t.size() >= 20 && std::all_of(t.begin() + 4, t.end(), [](char c) {
               return std::isupper(static_cast<unsigned char>(c)) ||
                      std::isdigit(static_cast<unsigned char>(c));
           });
}

}  // namespace

std::string one_line(std::string_view s)
{
    std::string out;
    bool space = false;
    for (char c : s)
    {
        if (is_space(c))
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

std::string lower(std::string_view s)
{
    std::string out(s);
    for (auto& c : out)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

std::vector<std::string> sentences(std::string_view s)
{
    std::vector<std::string> out;
    std::string cur;
    auto flush = [&] {
        if (auto t = one_line(cur); !t.empty())
            out.push_back(std::move(t));
        cur.clear();
    };
    for (std::size_t i = 0; i < s.size(); ++i)
    {
        const char c = s[i];
        if (c == '\n')
        {
            flush();
            continue;
        }
        cur += c;
        // Only a terminator before a space or the end can end a sentence: the normalised text is
        // built for those alone (building it per character was quadratic in the sentence).
        const bool terminator = c == '.' || c == '!' || c == '?' || c == ';';
        if (!terminator || !(i + 1 == s.size() || s[i + 1] == ' ' || s[i + 1] == '\n'))
            continue;
        const auto t = one_line(cur);
        const bool list_number = c == '.' && t.size() <= 3 && std::all_of(t.begin(), t.end() - 1, [](char d) {
                                     return std::isdigit(static_cast<unsigned char>(d));
                                 });
        const bool abbreviation = c == '.' && (t.ends_with("e.g.") || t.ends_with("i.e.") ||
                                               t.ends_with("vs.") || t.ends_with("cf."));
        if (!list_number && !abbreviation)
            flush();
    }
    flush();
    return out;
}

std::vector<std::string> lines(std::string_view s)
{
    std::vector<std::string> out;
    std::size_t pos = 0;
    while (pos <= s.size())
    {
        auto nl = s.find('\n', pos);
        if (nl == std::string_view::npos)
            nl = s.size();
        if (auto t = one_line(s.substr(pos, nl - pos)); !t.empty())
            out.push_back(std::move(t));
        pos = nl + 1;
    }
    return out;
}

bool has_word(std::string_view lowered, std::string_view phrase)
{
    for (auto p = lowered.find(phrase); p != std::string_view::npos; p = lowered.find(phrase, p + 1))
    {
        const auto e = p + phrase.size();
        const bool left = p == 0 || !is_alnum(lowered[p - 1]) || !is_alnum(phrase.front());
        const bool right = e >= lowered.size() || !is_alnum(lowered[e]) || !is_alnum(phrase.back());
        if (left && right)
            return true;
    }
    return false;
}

bool has_any_word(std::string_view lowered, std::initializer_list<std::string_view> phrases)
{
    return std::any_of(phrases.begin(), phrases.end(), [&](std::string_view p) {
        return has_word(lowered, p);
    });
}

bool has_any_word(std::string_view lowered, std::span<const std::string_view> phrases)
{
    return std::any_of(phrases.begin(), phrases.end(), [&](std::string_view p) {
        return has_word(lowered, p);
    });
}

bool starts_with_any(std::string_view lowered, std::initializer_list<std::string_view> prefixes)
{
    return std::any_of(prefixes.begin(), prefixes.end(), [&](std::string_view p) {
        return lowered.substr(0, p.size()) == p;
    });
}

std::size_t word_count(std::string_view s)
{
    std::size_t n = 0;
    bool in = false;
    for (char c : s)
    {
        if (is_space(c))
            in = false;
        else if (!in)
        {
            in = true;
            ++n;
        }
    }
    return n;
}

std::size_t length(std::string_view s)
{
    return compaction::utf16_length(s);
}

std::string clip_words(std::string_view s, std::size_t n)
{
    if (length(s) <= n)
        return std::string(s);
    if (n < 2)
        return {};
    std::string p = compaction::utf16_prefix(s, n - 1);  // room for the ellipsis
    const auto cut = p.find_last_of(' ');
    p.erase(cut == std::string::npos ? 0 : cut);
    while (!p.empty() && (p.back() == ',' || p.back() == ':' || p.back() == ';' || p.back() == ' '))
        p.pop_back();
    return p.empty() ? std::string() : p + "…";
}

std::string mask_secrets(std::string_view s)
{
    std::string out;
    std::size_t i = 0;
    while (i < s.size())
    {
        std::size_t j = i;
        while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '-' || s[j] == '_'))
            ++j;
        if (j == i)
        {
            out += s[i++];
            continue;
        }
        const auto tok = s.substr(i, j - i);
        out += looks_like_secret(tok) ? std::string_view("[redacted]") : tok;
        i = j;
    }
    return out;
}

std::string fingerprint(std::string_view s)
{
    std::string out;
    for (char c : s)
        if (is_alnum(c))
            out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

}  // namespace agentctx::providers::offline
