// The redactor: compiled RE2 rules, an optional RE2::Set prefilter, allowlist, marker substitution.
#include <agentctx/compaction/redaction.hpp>

#include <re2/re2.h>
#include <re2/set.h>

#include <algorithm>
#include <iterator>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>

namespace agentctx::compaction {

namespace {

constexpr std::string_view allow_pattern_prefix = "re:";

// Byte-wise matching: patterns are ASCII, and any UTF-8 sequence around a secret is just bytes
// that no rule consumes, so it comes out unchanged (valid or not).
RE2::Options rule_options()
{
    RE2::Options o;
    o.set_encoding(RE2::Options::EncodingLatin1);
    o.set_log_errors(false);
    return o;
}

struct compiled_rule
{
    std::unique_ptr<RE2> re;
    std::string marker;  // "[REDACTED:<name>]"
    std::size_t name_index;
    double min_entropy;
    std::size_t min_length;
    bool word_start;
    bool skip_identifiers;
};

bool is_word_byte(char c) noexcept
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// See redaction_rule::skip_identifiers. `next` is the byte after the value (0 at the end).
bool reads_as_identifier(std::string_view v, char next) noexcept
{
    if (next == '(' || v.front() == '$')
        return true;
    bool lower = false, upper = false, dot = false;
    for (char c : v)
    {
        if (c >= 'a' && c <= 'z')
            lower = true;
        else if (c >= 'A' && c <= 'Z')
            upper = true;
        else if (c == '.')
            dot = true;
        else if (c != '_' && c != '-')
            return false;  // a digit or a symbol: could be random
    }
    return dot || !(lower && upper);
}

// Whether text[at] continues a word. A JSON escape (`\n`, `\t`, `\r`) ends one, so a key at the
// start of a line inside a serialized JSON string still counts as starting a word.
bool follows_word(std::string_view text, std::size_t at) noexcept
{
    if (at == 0 || !is_word_byte(text[at - 1]))
        return false;
    const char c = text[at - 1];
    return !((c == 'n' || c == 't' || c == 'r') && at >= 2 && text[at - 2] == '\\');
}

struct span
{
    std::size_t begin;
    std::size_t end;
    std::size_t rule;
};

}  // namespace

struct redactor::impl
{
    std::vector<std::string> names;  // distinct rule names, first-seen order
    std::vector<compiled_rule> rules;
    std::unique_ptr<RE2::Set> set;  // null: run every rule
    std::unordered_set<std::string> allow_exact;
    std::vector<std::unique_ptr<RE2>> allow_patterns;

    bool allowed(std::string_view secret) const
    {
        if (allow_exact.count(std::string(secret)))
            return true;
        return std::any_of(allow_patterns.begin(), allow_patterns.end(), [&](const auto& re) {
            return RE2::FullMatch(re2::StringPiece(secret.data(), secret.size()), *re);
        });
    }

    // Adds the rule's acceptable matches that overlap nothing accepted before (higher priority).
    void collect(const compiled_rule& r, std::string_view text, std::map<std::size_t, span>& taken) const
    {
        const re2::StringPiece input(text.data(), text.size());
        const int groups = std::min(r.re->NumberOfCapturingGroups(), 1);
        re2::StringPiece sub[2];
        std::size_t pos = 0;
        while (pos <= text.size() && r.re->Match(input, pos, text.size(), RE2::UNANCHORED, sub, groups + 1))
        {
            re2::StringPiece secret = (groups == 1 && sub[1].data() != nullptr) ? sub[1] : sub[0];
            const auto match_begin = static_cast<std::size_t>(sub[0].data() - text.data());
            const auto b = static_cast<std::size_t>(secret.data() - text.data());
            const auto e = b + secret.size();
            if (r.word_start && follows_word(text, match_begin))
            {
                pos = match_begin + 1;  // as a leading \b would: try again one byte on
                continue;
            }
            pos = std::max(e, match_begin + 1);
            const std::string_view s(secret.data(), secret.size());
            if (s.empty() || s.size() < r.min_length ||
                (r.min_entropy > 0 && shannon_entropy(s) < r.min_entropy) ||
                (r.skip_identifiers && reads_as_identifier(s, e < text.size() ? text[e] : '\0')) ||
                allowed(s))
                continue;
            auto next = taken.lower_bound(b);
            if (next != taken.end() && next->second.begin < e)
                continue;
            if (next != taken.begin() && std::prev(next)->second.end > b)
                continue;
            taken.emplace(b, span{b, e, static_cast<std::size_t>(&r - rules.data())});
        }
    }

    // Indices of the rules worth running, in priority order.
    std::vector<std::size_t> candidates(std::string_view text) const
    {
        std::vector<int> hits;
        if (set)
        {
            RE2::Set::ErrorInfo info{};
            if (set->Match(re2::StringPiece(text.data(), text.size()), &hits, &info) ||
                info.kind == RE2::Set::kNoError)
            {
                std::sort(hits.begin(), hits.end());
                return {hits.begin(), hits.end()};
            }
        }
        std::vector<std::size_t> all(rules.size());
        for (std::size_t i = 0; i < all.size(); ++i)
            all[i] = i;
        return all;
    }
};

result<redactor> redactor::create(
    const std::vector<redaction_rule>& rules,
    const std::vector<std::string>& allowlist,
    diagnostics& diag,
    bool prefilter
)
{
    auto p = std::make_shared<impl>();
    const auto opts = rule_options();
    auto fail = [&](std::string field, const std::string& why) -> result<redactor> {
        diag.field = std::move(field);
        diag.message = "redaction: field '" + diag.field + "': " + why;
        return errc::invalid_settings;
    };
    for (std::size_t i = 0; i < rules.size(); ++i)
    {
        const auto& r = rules[i];
        auto re = std::make_unique<RE2>(r.pattern, opts);
        if (!re->ok())
            return fail(
                "rules[" + std::to_string(i) + "].pattern",
                "invalid pattern for rule '" + r.name + "': " + re->error()
            );
        if (re->NumberOfCapturingGroups() > 1)
            return fail(
                "rules[" + std::to_string(i) + "].pattern",
                "rule '" + r.name + "' has more than one capturing group"
            );
        auto it = std::find(p->names.begin(), p->names.end(), r.name);
        const auto name_index = static_cast<std::size_t>(it - p->names.begin());
        if (it == p->names.end())
            p->names.push_back(r.name);
        p->rules.push_back(
            {std::move(re),
             "[REDACTED:" + r.name + "]",
             name_index,
             r.min_entropy,
             r.min_length,
             r.word_start,
             r.skip_identifiers}
        );
    }
    for (std::size_t i = 0; i < allowlist.size(); ++i)
    {
        const std::string_view entry = allowlist[i];
        if (!entry.starts_with(allow_pattern_prefix))
        {
            p->allow_exact.emplace(entry);
            continue;
        }
        const std::string_view pat = entry.substr(allow_pattern_prefix.size());
        auto re = std::make_unique<RE2>(re2::StringPiece(pat.data(), pat.size()), opts);
        if (!re->ok())
            return fail("redaction.allowlist[" + std::to_string(i) + "]", "invalid pattern: " + re->error());
        p->allow_patterns.push_back(std::move(re));
    }
    if (prefilter && !p->rules.empty())
    {
        auto set_opts = opts;
        set_opts.set_max_mem(16 << 20);  // DFA cache bound; on overflow every rule runs instead
        auto set = std::make_unique<RE2::Set>(set_opts, RE2::UNANCHORED);
        bool ok = true;
        for (const auto& r : rules)
            ok = ok && set->Add(r.pattern, nullptr) >= 0;
        if (ok && set->Compile())
            p->set = std::move(set);  // otherwise every rule runs: slower, same result
    }
    return redactor(std::move(p));
}

result<redactor> redactor::create(const redaction_settings& settings, diagnostics& diag)
{
    // Compiled rules take ~180 KiB and ~3 ms: sessions with the same settings share one copy, and
    // the last few settings stay compiled while no session uses them (a session reopened after the
    // LRU closed it pays neither). Matching a const RE2 is thread-safe.
    constexpr std::size_t kept = 8;
    static std::mutex mutex;
    static std::list<std::pair<std::string, std::shared_ptr<const impl>>> recent;  // newest first
    std::string key(settings.enabled ? "1" : "0");
    for (const auto& a : settings.allowlist)  // length-prefixed: no two lists share a key
        key += std::to_string(a.size()) + ':' + a;
    const std::lock_guard lock(mutex);
    const auto hit =
        std::find_if(recent.begin(), recent.end(), [&](const auto& r) { return r.first == key; });
    if (hit != recent.end())
    {
        recent.splice(recent.begin(), recent, hit);
        return redactor(hit->second);
    }
    static const std::vector<redaction_rule> none;
    auto made = create(settings.enabled ? default_redaction_rules() : none, settings.allowlist, diag);
    if (!made)
        return made;
    recent.emplace_front(std::move(key), made->impl_);
    if (recent.size() > kept)
        recent.pop_back();
    return made;
}

redaction_result redactor::redact(std::string_view text) const
{
    redaction_result out;
    std::map<std::size_t, span> taken;
    for (std::size_t i : impl_->candidates(text))
        impl_->collect(impl_->rules[i], text, taken);
    if (taken.empty())
    {
        out.text.assign(text);
        return out;
    }
    out.text.reserve(text.size());
    std::size_t at = 0;
    for (const auto& [b, s] : taken)
    {
        const auto& r = impl_->rules[s.rule];
        out.text.append(text.substr(at, b - at));
        out.text.append(r.marker);
        ++out.counts[impl_->names[r.name_index]];
        at = s.end;
    }
    out.text.append(text.substr(at));
    return out;
}

boost::json::object redactions_json(const std::map<std::string, std::size_t>& counts)
{
    boost::json::object o;
    for (const auto& [name, n] : counts)
        if (n != 0)
            o[name] = static_cast<std::uint64_t>(n);
    return o;
}

}  // namespace agentctx::compaction
