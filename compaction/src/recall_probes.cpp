// The recall gate's probes: user rules (with overrides), artifacts, open work and decisions of a span.
#include <agentctx/compaction/recall.hpp>

#include <agentctx/compaction/file_ops.hpp>
#include <agentctx/compaction/unresolved_calls.hpp>

#include "recall_text.hpp"

#include <algorithm>
#include <map>

namespace agentctx::compaction {

namespace {

using detail::sentence;

// A statement under consideration: its words, its polarity, whether it says it overrides.
struct statement
{
    std::string text;
    std::vector<std::string> terms;
    bool negative = false;
    bool marker = false;  ///< `actually`, `instead`, `no longer`, `you may`, ...
    bool rule = false;    ///< reads as a rule by itself
    std::string entry_id;
};

bool has_seq(const std::vector<std::string>& w, std::initializer_list<std::string_view> seq)
{
    if (seq.size() == 0 || w.size() < seq.size())
        return false;
    for (std::size_t i = 0; i + seq.size() <= w.size(); ++i)
        if (std::equal(seq.begin(), seq.end(), w.begin() + static_cast<std::ptrdiff_t>(i)))
            return true;
    return false;
}

bool any_of_words(const std::vector<std::string>& w, std::initializer_list<std::string_view> list)
{
    return std::any_of(w.begin(), w.end(), [&](const std::string& x) {
        return std::find(list.begin(), list.end(), x) != list.end();
    });
}

// Leading words that do not change what a sentence is (`please`, `also`, `from now on`, ...).
std::size_t skip_fillers(const std::vector<std::string>& w, bool& standing)
{
    std::size_t i = 0;
    for (;;)
    {
        // Both arms are string_views: a `?:` of std::string and "" would make a temporary string
        // and return a view of it.
        const auto at = [&](std::size_t k) {
            return i + k < w.size() ? std::string_view(w[i + k]) : std::string_view();
        };
        if (at(0) == "from" && at(1) == "now" && at(2) == "on")
            standing = true, i += 3;
        else if ((at(0) == "going" && at(1) == "forward") || (at(0) == "in" && at(1) == "future"))
            standing = true, i += 2;
        else if (at(0) == "please" || at(0) == "also" || at(0) == "and" || at(0) == "but" || at(0) == "so" || at(0) == "ok" || at(0) == "okay" || at(0) == "remember" || at(0) == "note" || at(0) == "important" || at(0) == "again" || at(0) == "actually" || at(0) == "btw" || at(0) == "oh" || at(0) == "reminder" || at(0) == "and")
            ++i;
        else
            return i;
    }
}

bool rule_phrase(const std::vector<std::string>& w)
{
    return any_of_words(w, {"must", "mustn't", "forbidden"}) || has_seq(w, {"shall", "not"}) ||
           has_seq(w, {"should", "never"}) || has_seq(w, {"should", "always"}) ||
           has_seq(w, {"not", "allowed"}) || has_seq(w, {"is", "required"}) ||
           has_seq(w, {"are", "required"}) || has_seq(w, {"under", "no", "circumstances"}) ||
           has_seq(w, {"at", "all", "times"}) || has_seq(w, {"no", "matter", "what"});
}

bool override_marker(const std::vector<std::string>& w)
{
    return any_of_words(w, {"actually", "instead", "forget", "ignore", "allowed"}) ||
           has_seq(w, {"no", "longer"}) || has_seq(w, {"changed", "my", "mind"}) ||
           has_seq(w, {"scratch", "that"}) || has_seq(w, {"you", "may"}) || has_seq(w, {"you", "can"}) ||
           has_seq(w, {"feel", "free"}) || has_seq(w, {"is", "fine"}) || has_seq(w, {"it's", "fine"}) ||
           has_seq(w, {"is", "ok"}) || has_seq(w, {"is", "okay"}) || has_seq(w, {"go", "ahead"});
}

// Whether a user's sentence sets a rule (imperative, negation, always/never/must/only, a constraint).
bool is_rule(const std::vector<std::string>& all)
{
    bool standing = false;
    const std::size_t i = skip_fillers(all, standing);
    const std::vector<std::string> w(all.begin() + static_cast<std::ptrdiff_t>(i), all.end());
    if (w.size() < 2)
        return false;
    const auto& first = w[0];
    const auto& second = w[1];
    const std::string_view third = w.size() > 2 ? std::string_view(w[2]) : std::string_view{};
    // A statement about oneself, a thing or a state is not an instruction (`I never liked it`).
    static constexpr std::string_view subjects[] = {
        "i",   "i'm",  "i've",  "i'd",  "it",  "it's", "this", "that", "there", "there's", "he",
        "she", "they", "which", "what", "why", "how",  "who",  "when", "where", "if"};
    if (std::find(std::begin(subjects), std::end(subjects), first) != std::end(subjects))
        return false;
    if (standing)
        return true;
    static constexpr std::string_view openers[] = {
        "always",
        "never",
        "don't",
        "dont",
        "avoid",
        "only",
        "keep",
        "use",
        "prefer",
        "stop",
        "ensure",
        "stick"};
    if (std::find(std::begin(openers), std::end(openers), first) != std::end(openers))
        return true;
    if ((first == "do" && second == "not") || (first == "make" && second == "sure"))
        return true;
    if ((first == "you" || first == "we") &&
        (second == "always" || second == "never" || second == "only" || second == "must" ||
         second == "mustn't" || second == "can't" || second == "cannot" || second == "shouldn't" ||
         (second == "should" && (third == "never" || third == "always" || third == "not")) ||
         (second == "may" && third == "not")))
        return true;
    return w.back() == "only" || rule_phrase(w);
}

// Two statements about the same thing: they share at least half of the smaller one's words.
std::size_t shared_terms(const std::vector<std::string>& a, const std::vector<std::string>& b)
{
    return static_cast<std::size_t>(std::count_if(a.begin(), a.end(), [&](const std::string& t) {
        return std::find(b.begin(), b.end(), t) != b.end();
    }));
}

bool related(const std::vector<std::string>& a, const std::vector<std::string>& b)
{
    const auto o = shared_terms(a, b);
    return o >= 1 && 2 * o >= std::min(a.size(), b.size());
}

// The active rules after `s`: the rules it contradicts are revoked (and named), a restated one
// replaced; `s` joins them when it is a rule or overrides one.
void apply_statement(statement s, std::vector<recall_probe>& rules)
{
    std::string overridden;
    std::erase_if(rules, [&](const recall_probe& r) {
        if (!related(r.terms, s.terms))
            return false;
        if (r.negative != s.negative || s.marker)
        {
            overridden = r.text;
            return true;
        }
        return s.rule && shared_terms(r.terms, s.terms) == r.terms.size();  // restated
    });
    if (!s.rule && overridden.empty())
        return;
    recall_probe p;
    p.kind = probe_kind::rule;
    p.text = std::move(s.text);
    p.terms = std::move(s.terms);
    p.negative = s.negative;
    p.entry_id = std::move(s.entry_id);
    p.overrides = std::move(overridden);
    rules.push_back(std::move(p));
}

statement make_statement(const std::string& text, const std::string& entry_id)
{
    statement s;
    const auto w = detail::words_of(text);
    s.text = text;
    s.terms = recall_terms(text);
    s.negative = std::any_of(w.begin(), w.end(), [](const std::string& x) { return detail::is_negation(x); });
    s.marker = override_marker(w);
    s.rule = is_rule(w);
    s.entry_id = entry_id;
    return s;
}

bool is_users(const message& m)
{
    return m.role == role::user && m.peer.empty();
}

std::string assistant_text(const message& m)
{
    std::string out;
    for (const auto& b : m.content.blocks)
        if (const auto* t = std::get_if<text_block>(&b))
            out += (out.empty() ? "" : "\n") + t->text;
    return out;
}

std::vector<recall_probe> user_rules(
    std::span<const context_message> span, std::span<const std::string> carried
)
{
    std::vector<recall_probe> rules;
    for (const auto& c : carried)
    {
        auto s = make_statement(c, "");
        s.rule = true;  // it was a rule when it was said
        apply_statement(std::move(s), rules);
    }
    for (const auto& cm : span)
    {
        if (!cm.msg || !is_users(*cm.msg))
            continue;
        for (const auto& sen : detail::sentences_of(content_text(cm.msg->content)))
        {
            if (sen.question)
                continue;
            auto s = make_statement(sen.text, cm.entry_id);
            if (!s.terms.empty() && (s.rule || s.marker))
                apply_statement(std::move(s), rules);
        }
    }
    return rules;
}

// A sentence of the assistant that states a decision (`I'll use`, `decided to`, `going with`, ...).
bool is_decision(const std::vector<std::string>& w)
{
    return has_seq(w, {"i'll", "use"}) || has_seq(w, {"i", "will", "use"}) || has_seq(w, {"we'll", "use"}) ||
           has_seq(w, {"let's", "use"}) || has_seq(w, {"decided", "to"}) || has_seq(w, {"i", "chose"}) ||
           has_seq(w, {"we", "chose"}) || has_seq(w, {"going", "with"}) || has_seq(w, {"go", "with"}) ||
           has_seq(w, {"switching", "to"}) || has_seq(w, {"switch", "to"}) || has_seq(w, {"opted", "for"}) ||
           has_seq(w, {"opted", "to"}) || has_seq(w, {"i'll", "keep"}) || has_seq(w, {"we'll", "keep"}) ||
           has_seq(w, {"instead", "of"});
}

std::vector<recall_probe> decisions(std::span<const context_message> span, std::size_t max)
{
    std::vector<recall_probe> out;
    for (const auto& cm : span)
    {
        if (!cm.msg || cm.msg->role != role::assistant)
            continue;
        for (const auto& sen : detail::sentences_of(assistant_text(*cm.msg)))
        {
            const auto w = detail::words_of(sen.text);
            if (sen.question || !is_decision(w))
                continue;
            auto s = make_statement(sen.text, cm.entry_id);
            if (s.terms.empty())
                continue;
            // A later decision on the same thing reverses (or restates) the earlier one.
            std::erase_if(out, [&](const recall_probe& r) { return related(r.terms, s.terms); });
            recall_probe p{probe_kind::decision, s.text, s.terms, {}, s.negative, s.entry_id, {}};
            out.push_back(std::move(p));
        }
    }
    if (out.size() > max)
        out.erase(out.begin(), out.end() - static_cast<std::ptrdiff_t>(max));  // the latest
    return out;
}

}  // namespace

std::string_view to_string(probe_kind k) noexcept
{
    switch (k)
    {
    case probe_kind::rule:
        return "rule";
    case probe_kind::artifact:
        return "artifact";
    case probe_kind::open_work:
        return "open_work";
    case probe_kind::decision:
        return "decision";
    }
    return "rule";
}

std::vector<std::string> recall_terms(std::string_view text)
{
    std::vector<std::string> out;
    for (const auto& w : detail::words_of(text))
    {
        if (w.size() < 2 || detail::is_stop_word(w) || detail::is_negation(w))
            continue;
        auto s = detail::stem(w);
        if (s.size() >= 2 && std::find(out.begin(), out.end(), s) == out.end())
            out.push_back(std::move(s));
    }
    return out;
}

namespace detail {
std::vector<recall_probe> artifact_probes(std::span<const context_message> span, std::size_t max);
std::vector<recall_probe> open_work_probes(std::span<const context_message> span, std::size_t max);
}  // namespace detail

std::vector<recall_probe> extract_probes(
    std::span<const context_message> span,
    std::span<const std::string> carried,
    const probe_limits& limits,
    const std::function<void(std::string&)>& scrub
)
{
    auto rules = user_rules(span, carried);
    if (rules.size() > limits.max_rules)
        rules.resize(limits.max_rules);  // the earliest: they are the ones a summary loses first
    std::vector<recall_probe> out = std::move(rules);
    for (auto&& part : {
             detail::open_work_probes(span, limits.max_open_work),
             decisions(span, limits.max_decisions),
             detail::artifact_probes(span, limits.max_artifacts),
         })
        out.insert(out.end(), part.begin(), part.end());
    std::vector<recall_probe> bounded;
    std::size_t total = 0;
    for (auto& p : out)
    {
        if (scrub)
        {
            const auto raw = p.text;
            scrub(p.text);
            scrub(p.overrides);
            if (p.kind == probe_kind::artifact && p.text != raw)
                continue;  // a name that is a secret: nothing a summary should keep
        }
        p.text = detail::bounded_text(p.text, limits.max_text_chars);
        p.overrides = detail::bounded_text(p.overrides, limits.max_text_chars);
        if (p.kind != probe_kind::artifact)
        {
            p.terms = recall_terms(p.text);
            p.names = detail::names_in(p.text);
        }
        else if (!p.names.empty())
            p.names = {p.text};  // a path or an identifier: it appears as written
        else
            p.terms = recall_terms(p.text);  // a command: its words
        if (p.terms.empty() && p.names.empty())
            continue;  // nothing a summary could be checked for
        if (total + p.text.size() > limits.max_total_chars)
            break;
        total += p.text.size();
        bounded.push_back(std::move(p));
    }
    return bounded;
}

}  // namespace agentctx::compaction
