// Progress records: canonical JSON, strict parse with named reasons, the resume check, remaining pieces.
#include <agentctx/compaction/progress_record.hpp>

#include <algorithm>
#include <set>

namespace agentctx::compaction {

namespace json = boost::json;

const char* to_string(progress_reason r) noexcept
{
    switch (r)
    {
    case progress_reason::none:
        return "none";
    case progress_reason::corrupt:
        return "corrupt";
    case progress_reason::unsupported_format:
        return "unsupported_format";
    case progress_reason::other_base:
        return "other_base";
    case progress_reason::other_identity:
        return "other_identity";
    case progress_reason::other_configuration:
        return "other_configuration";
    case progress_reason::shortened:
        return "shortened";
    case progress_reason::replaced:
        return "replaced";
    case progress_reason::nothing_remaining:
        return "nothing_remaining";
    case progress_reason::misaligned:
        return "misaligned";
    }
    return "unknown";
}

json::object to_json(const progress_record& r)
{
    json::array remaining;
    for (const auto n : r.remaining)
        remaining.push_back(static_cast<std::uint64_t>(n));
    return json::object{
        {"format", progress_format},
        {"base", r.base ? json::value(*r.base) : json::value(nullptr)},
        {"note", r.note},
        {"covered",
         json::object{
             {"count", static_cast<std::uint64_t>(r.covered.count)},
             {"sha256", r.covered.sha256},
             {"lastEntryId", r.covered_last_entry_id}}},
        {"remaining", std::move(remaining)},
        {"prefixMessages", static_cast<std::uint64_t>(r.prefix_messages)},
        {"completed", static_cast<std::uint64_t>(r.completed)},
        {"identity", to_json(r.identity)},
        {"configDigest", r.config_digest},
    };
}

namespace {

// One refusal: the reason, the field, a message.
struct refusal
{
    progress_reason& why;
    diagnostics& diag;
    errc code;
    errc operator()(progress_reason r, std::string field, std::string message) const
    {
        why = r;
        diag.field = std::move(field);
        diag.message = std::move(message);
        return code;
    }
};

bool exactly(const json::object& o, std::initializer_list<std::string_view> keys)
{
    if (o.size() != keys.size())
        return false;
    return std::all_of(keys.begin(), keys.end(), [&](std::string_view k) { return o.contains(k); });
}

bool is_hex64(const json::value* v)
{
    if (!v || !v->is_string() || v->get_string().size() != 64)
        return false;
    const auto s = v->get_string();
    return std::all_of(s.begin(), s.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
    });
}

const json::string* str(const json::object& o, std::string_view k)
{
    const auto* v = o.if_contains(k);
    return v && v->is_string() ? &v->get_string() : nullptr;
}

std::optional<std::size_t> count(const json::value* v)
{
    if (!v)
        return std::nullopt;
    if (v->is_uint64())
        return static_cast<std::size_t>(v->get_uint64());
    if (v->is_int64() && v->get_int64() >= 0)
        return static_cast<std::size_t>(v->get_int64());
    return std::nullopt;
}

}  // namespace

namespace {

// A refusal of a corrupt record; errc{} stands for no refusal.
struct corrupt_refusal
{
    refusal bad;
    errc operator()(std::string field, std::string what) const
    {
        return bad(progress_reason::corrupt, field, "progress record: field '" + field + "' " + what);
    }
};

// `covered`: {count, sha256, lastEntryId}.
errc parse_covered(const json::value& cov, progress_record& r, const corrupt_refusal& corrupt)
{
    if (!cov.is_object() || !exactly(cov.get_object(), {"count", "sha256", "lastEntryId"}))
        return corrupt("covered", "must be {count, sha256, lastEntryId}");
    const auto n = count(cov.get_object().if_contains("count"));
    if (!n || *n == 0)
        return corrupt("covered.count", "must be a positive integer");
    if (!is_hex64(cov.get_object().if_contains("sha256")))
        return corrupt("covered.sha256", "must be 64 lowercase hex digits");
    const auto* last = str(cov.get_object(), "lastEntryId");
    if (!last || last->empty())
        return corrupt("covered.lastEntryId", "must be a non-empty string");
    r.covered = {*n, std::string(cov.get_object().at("sha256").get_string())};
    r.covered_last_entry_id = std::string(*last);
    return {};
}

// `remaining`, `prefixMessages` and `completed`: the pieces left, after what is covered.
errc parse_pieces(const json::object& o, progress_record& r, const corrupt_refusal& corrupt)
{
    const auto& rem = o.at("remaining");
    if (!rem.is_array())
        return corrupt("remaining", "must be an array");
    std::size_t prev = r.covered.count;
    for (const auto& e : rem.get_array())
    {
        const auto end = count(&e);
        if (!end || *end <= prev)
            return corrupt("remaining", "must hold strictly ascending message counts above covered.count");
        r.remaining.push_back(prev = *end);
    }
    const auto pm = count(o.if_contains("prefixMessages"));
    if (!pm || *pm < prev || (r.remaining.empty() ? false : *pm != prev))
        return corrupt("prefixMessages", "must be the end of the last remaining piece");
    r.prefix_messages = *pm;
    const auto done = count(o.if_contains("completed"));
    if (!done || *done == 0 || *done > r.covered.count)
        return corrupt("completed", "must be a positive integer, at most covered.count");
    r.completed = *done;
    return {};
}

// `identity` and `configDigest`.
errc parse_identity(const json::object& o, progress_record& r, const corrupt_refusal& corrupt)
{
    const auto& id = o.at("identity");
    if (!id.is_object() || !exactly(id.get_object(), {"provider", "model"}) ||
        !str(id.get_object(), "provider") || !str(id.get_object(), "model"))
        return corrupt("identity", "must be {provider, model} strings");
    r.identity = {
        std::string(*str(id.get_object(), "provider")), std::string(*str(id.get_object(), "model"))};
    if (!is_hex64(o.if_contains("configDigest")))
        return corrupt("configDigest", "must be 64 lowercase hex digits");
    r.config_digest = std::string(o.at("configDigest").get_string());
    return {};
}

}  // namespace

result<progress_record> parse_progress(const json::value& v, progress_reason& why, diagnostics& diag)
{
    const refusal bad{why, diag, errc::progress_invalid};
    const corrupt_refusal corrupt{bad};
    if (!v.is_object())
        return corrupt("", "must be an object");
    const auto& o = v.get_object();
    const auto* format = str(o, "format");
    if (!format)
        return corrupt("format", "must be a string");
    if (*format != progress_format)
        return bad(
            progress_reason::unsupported_format,
            "format",
            "progress record: format '" + std::string(*format) + "' is not " + std::string(progress_format)
        );
    if (!exactly(
            o,
            {"format",
             "base",
             "note",
             "covered",
             "remaining",
             "prefixMessages",
             "completed",
             "identity",
             "configDigest"}
        ))
        return corrupt("", "has missing or unknown fields");
    progress_record r;
    if (const auto& b = o.at("base"); b.is_string())
        r.base = std::string(b.get_string());
    else if (!b.is_null())
        return corrupt("base", "must be a string or null");
    const auto* note = str(o, "note");
    if (!note || note->empty())
        return corrupt("note", "must be a non-empty string");
    r.note = std::string(*note);
    if (const errc e = parse_covered(o.at("covered"), r, corrupt); e != errc{})
        return e;
    if (const errc e = parse_pieces(o, r, corrupt); e != errc{})
        return e;
    if (const errc e = parse_identity(o, r, corrupt); e != errc{})
        return e;
    why = progress_reason::none;
    return r;
}

result<void> check_progress(
    const progress_record& r, const progress_context& now, progress_reason& why, diagnostics& diag
)
{
    const refusal bad{why, diag, errc::progress_mismatch};
    if (r.base != now.base)
        return bad(
            progress_reason::other_base,
            "base",
            "the progress was made after compaction " + r.base.value_or("(none)") +
                ", the prefix now starts after " + now.base.value_or("(none)")
        );
    if (r.identity != now.identity)
        return bad(
            progress_reason::other_identity,
            "identity",
            "the note was written by " + r.identity.provider + ":" + r.identity.model +
                ", this pass summarizes with " + now.identity.provider + ":" + now.identity.model
        );
    if (r.config_digest != now.config_digest)
        return bad(
            progress_reason::other_configuration,
            "configDigest",
            "the summary-generation settings changed since the progress was made"
        );
    if (now.prefix.size() < r.covered.count)
        return bad(
            progress_reason::shortened,
            "covered.count",
            "the prefix has " + std::to_string(now.prefix.size()) + " messages, the progress covers " +
                std::to_string(r.covered.count)
        );
    const auto covered = now.prefix.first(r.covered.count);
    if (covered.back().entry_id != r.covered_last_entry_id || identity_of(covered) != r.covered)
        return bad(
            progress_reason::replaced,
            "covered.sha256",
            "the covered history changed since the progress was made (its " +
                std::to_string(r.covered.count) + " messages no longer hash as recorded)"
        );
    if (r.covered.count == now.prefix.size())
        return bad(
            progress_reason::nothing_remaining,
            "remaining",
            "the progress covers all " + std::to_string(r.covered.count) +
                " messages of the prefix: no piece remains"
        );
    if (!is_batch_boundary(now.prefix, r.covered.count))
        return bad(
            progress_reason::misaligned,
            "covered.count",
            "the covered part ends inside a tool round (after message " + std::to_string(r.covered.count) +
                "): the next piece would start in it"
        );
    why = progress_reason::none;
    return {};
}

std::vector<summary_piece> remaining_pieces(
    const progress_record& r, std::span<const context_message> prefix, std::size_t max_source_chars
)
{
    const auto batches = exchange_batches(prefix);
    std::set<std::size_t> ends;
    for (const auto& b : batches)
        ends.insert(b.end);
    const bool recorded_fits =
        prefix.size() == r.prefix_messages && !r.remaining.empty() &&
        std::all_of(r.remaining.begin(), r.remaining.end(), [&](std::size_t e) { return ends.contains(e); });
    if (!recorded_fits)
        return plan_pieces(prefix, max_source_chars, r.covered.count);
    std::vector<summary_piece> out;
    std::size_t begin = r.covered.count;
    for (const auto end : r.remaining)
    {
        const std::size_t chars = source_chars(prefix.subspan(begin, end - begin));
        out.push_back({begin, end, chars, max_source_chars != 0 && chars > max_source_chars});
        begin = end;
    }
    return out;
}

}  // namespace agentctx::compaction
