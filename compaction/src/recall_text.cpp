// The recall gate's words: sentence splitting, words, stop words, stemming and names in text.
#include "recall_text.hpp"

#include <algorithm>
#include <array>
#include <cctype>

namespace agentctx::compaction::detail {

namespace {

bool word_char(char c) noexcept
{
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

std::string collapse(std::string_view s)
{
    std::string out;
    for (const char c : s)
    {
        const bool space = c == ' ' || c == '\t' || c == '\r' || c == '\n';
        if (space && (out.empty() || out.back() == ' '))
            continue;
        out += space ? ' ' : c;
    }
    while (!out.empty() && out.back() == ' ')
        out.pop_back();
    return out;
}

// `e.g.`, `i.e.`, `vs.`, `cf.` end at `line[dot]`: not a sentence end.
bool abbreviation_before(std::string_view line, std::size_t dot)
{
    for (const std::string_view a : {"e.g", "i.e", "vs", "cf", "E.g", "I.e"})
        if (dot >= a.size() && line.substr(dot - a.size(), a.size()) == a &&
            (dot == a.size() || line[dot - a.size() - 1] == ' ' || line[dot - a.size() - 1] == '('))
            return true;
    return false;
}

// Splits one line at sentence ends: `.`, `!`, `?`, `;` followed by a space or the end.
void split_line(std::string_view line, std::vector<sentence>& out)
{
    std::size_t start = 0;
    for (std::size_t i = 0; i < line.size(); ++i)
    {
        const char c = line[i];
        const bool end_mark = c == '.' || c == '!' || c == '?' || c == ';';
        const bool at_end = i + 1 == line.size() || line[i + 1] == ' ' || line[i + 1] == '\t';
        if (!end_mark || !at_end || (c == '.' && abbreviation_before(line, i)))
            continue;
        if (auto s = collapse(line.substr(start, i + 1 - start)); !s.empty())
            out.push_back({std::move(s), c == '?'});
        start = i + 1;
    }
    if (auto s = collapse(line.substr(start)); !s.empty())
        out.push_back({std::move(s), false});
}

template <std::size_t N>
bool in(std::string_view w, const std::array<std::string_view, N>& list) noexcept
{
    return std::find(list.begin(), list.end(), w) != list.end();
}

constexpr auto stop_words = std::to_array<std::string_view>({
    "a",     "an",     "the",  "and",      "or",      "but",    "if",     "then",   "so",      "to",
    "of",    "in",     "on",   "at",       "by",      "for",    "with",   "from",   "as",      "into",
    "onto",  "about",  "over", "under",    "is",      "are",    "was",    "were",   "be",      "been",
    "being", "am",     "do",   "does",     "did",     "done",   "doing",  "have",   "has",     "had",
    "will",  "would",  "can",  "could",    "may",     "might",  "shall",  "should", "must",    "need",
    "i",     "me",     "my",   "mine",     "we",      "us",     "our",    "you",    "your",    "yours",
    "it",    "its",    "this", "that",     "these",   "those",  "there",  "here",   "they",    "them",
    "their", "he",     "she",  "him",      "her",     "please", "always", "never",  "only",    "not",
    "no",    "don't",  "dont", "doesn't",  "didn't",  "won't",  "can't",  "cannot", "mustn't", "shouldn't",
    "just",  "also",   "very", "really",   "all",     "any",    "some",   "each",   "every",   "yes",
    "ok",    "okay",   "now",  "actually", "instead", "again",  "still",  "even",   "ever",    "make",
    "sure",  "ensure", "what", "which",    "who",     "when",   "where",  "how",
});

constexpr auto weak_verbs = std::to_array<std::string_view>({
    "use",
    "keep",
    "prefer",
    "avoid",
    "stop",
    "stick",
    "leave",
    "put",
    "let",
    "run",
    "go",
    "get",
    "add",
    "write",
});

constexpr auto negations = std::to_array<std::string_view>({
    "never",
    "not",
    "no",
    "don't",
    "dont",
    "doesn't",
    "didn't",
    "won't",
    "can't",
    "cannot",
    "mustn't",
    "shouldn't",
    "avoid",
    "without",
    "forbidden",
    "stop",
    "nothing",
    "neither",
});

bool name_like(std::string_view t) noexcept
{
    if (t.size() < 3)
        return false;
    const bool has_alpha =
        std::any_of(t.begin(), t.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)); });
    if (!has_alpha)
        return false;
    const auto dot = t.find('.');
    if (t.find('/') != std::string_view::npos && dot != std::string_view::npos)
        return true;  // a path with an extension
    if (t.find("::") != std::string_view::npos || t.ends_with("()"))
        return true;
    if (t.find('_') != std::string_view::npos && t.front() != '_' && t.back() != '_')
        return true;
    // camelCase / PascalCase with an inner capital after a lower-case letter.
    for (std::size_t i = 1; i < t.size(); ++i)
        if (std::isupper(static_cast<unsigned char>(t[i])) &&
            std::islower(static_cast<unsigned char>(t[i - 1])))
            return true;
    // a file name with a short extension: export.py, settings.json (not `e.g`)
    if (dot != std::string_view::npos && dot > 1 && dot + 1 < t.size() && t.size() - dot - 1 <= 5 &&
        std::all_of(t.begin() + static_cast<std::ptrdiff_t>(dot) + 1, t.end(), [](char c) {
            return std::isalpha(static_cast<unsigned char>(c));
        }))
        return true;
    return false;
}

void add_unique(std::vector<std::string>& out, std::string s)
{
    if (!s.empty() && std::find(out.begin(), out.end(), s) == out.end())
        out.push_back(std::move(s));
}

}  // namespace

std::vector<sentence> sentences_of(std::string_view text)
{
    std::vector<sentence> out;
    bool fenced = false;
    std::size_t pos = 0;
    while (pos <= text.size())
    {
        const auto nl = text.find('\n', pos);
        const auto line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
        pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
        const auto first = line.find_first_not_of(" \t");
        const auto body = first == std::string_view::npos ? std::string_view{} : line.substr(first);
        if (body.starts_with("```") || body.starts_with("~~~"))
        {
            fenced = !fenced;
            continue;
        }
        if (fenced || body.starts_with(">"))
            continue;
        split_line(body, out);
    }
    return out;
}

std::vector<std::string> words_of(std::string_view text)
{
    std::vector<std::string> out;
    std::string w;
    const auto flush = [&] {
        while (!w.empty() && w.back() == '\'')
            w.pop_back();
        if (!w.empty())
            out.push_back(std::move(w));
        w.clear();
    };
    for (std::size_t i = 0; i < text.size(); ++i)
    {
        const char c = text[i];
        // The typographic apostrophe (U+2019) reads as `'`.
        if (c == '\xE2' && i + 2 < text.size() && text[i + 1] == '\x80' && text[i + 2] == '\x99')
        {
            if (!w.empty())
                w += '\'';
            i += 2;
            continue;
        }
        if (word_char(c))
            w += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        else if (c == '\'' && !w.empty())
            w += '\'';
        else
            flush();
    }
    flush();
    return out;
}

std::string stem(std::string_view word)
{
    std::string w(word);
    if (w.ends_with("'s"))
        w.resize(w.size() - 2);
    const auto cut = [&](std::size_t n) { w.resize(w.size() - n); };
    // A doubled final consonant left by `-ed` / `-ing` is one (`dropped` -> `drop`).
    const auto undouble = [&] {
        const char c = w.back();
        if (w.size() > 3 && c == w[w.size() - 2] && c != 'l' && c != 's' && c != 'z' &&
            std::string_view("aeiou").find(c) == std::string_view::npos)
            w.pop_back();
    };
    if (w.size() > 5 && w.ends_with("ing"))
        cut(3), undouble();
    else if (w.size() > 4 && w.ends_with("ed"))
        cut(2), undouble();
    else if (w.size() > 4 && (w.ends_with("ses") || w.ends_with("xes") || w.ends_with("zes") || w.ends_with("ches") || w.ends_with("shes")))
        cut(2);
    else if (w.size() > 3 && w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us"))
        cut(1);
    return w;
}

bool is_stop_word(std::string_view word) noexcept
{
    return in(word, stop_words);
}

bool is_weak_verb(std::string_view word) noexcept
{
    return in(word, weak_verbs);
}

bool is_negation(std::string_view word) noexcept
{
    return in(word, negations) || word.ends_with("n't");
}

std::string bounded_text(std::string_view text, std::size_t max)
{
    if (text.size() <= max)
        return std::string(text);
    std::size_t n = max >= 3 ? max - 3 : 0;  // room for `…`
    while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80)
        --n;
    return std::string(text.substr(0, n)) + "\u2026";
}

std::vector<std::string> names_in(std::string_view text)
{
    std::vector<std::string> out;
    // Backticked spans first: the user marked them as names.
    for (std::size_t pos = 0;;)
    {
        const auto open = text.find('`', pos);
        if (open == std::string_view::npos)
            break;
        const auto close = text.find('`', open + 1);
        if (close == std::string_view::npos)
            break;
        const auto inner = text.substr(open + 1, close - open - 1);
        if (!inner.empty() && inner.size() <= 120 && inner.find('\n') == std::string_view::npos)
            add_unique(out, std::string(inner));
        pos = close + 1;
    }
    // Tokens that read as paths or identifiers.
    std::string tok;
    const auto flush = [&] {
        while (!tok.empty() && (tok.front() == '(' || tok.front() == '-'))
            tok.erase(0, 1);
        while (!tok.empty() && (tok.back() == '.' || tok.back() == ',' || tok.back() == ':' ||
                                tok.back() == '-' || (tok.back() == ')' && !tok.ends_with("()"))))
            tok.pop_back();
        if (name_like(tok))
            add_unique(out, tok);
        tok.clear();
    };
    for (const char c : text)
    {
        if (word_char(c) || c == '.' || c == '/' || c == ':' || c == '-' || c == '(' || c == ')')
            tok += c;
        else
            flush();
    }
    flush();
    return out;
}

bool contains_nocase(std::string_view haystack, std::string_view needle) noexcept
{
    if (needle.empty())
        return true;
    const auto it =
        std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end(), [](char a, char b) {
            return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
        });
    return it != haystack.end();
}

}  // namespace agentctx::compaction::detail
