// Portable checkpoints: records, digests, the covered prefix's sourceRevision, restore checks, verify.
#include <agentctx/compaction/checkpoint.hpp>

#include <agentctx/compaction/carried_checks.hpp>
#include <agentctx/compaction/json_text.hpp>
#include <agentctx/compaction/limits.hpp>
#include <agentctx/compaction/pinned.hpp>
#include <agentctx/compaction/summary_prompt.hpp>

#include <agentctx/compaction/record_checks.hpp>

#include "json/exact_json.hpp"
#include "sha256.hpp"

#include <boost/json/parse.hpp>

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace agentctx::compaction {

namespace json = boost::json;

std::string sha256_hex(std::string_view bytes)
{
    detail::sha256 h;
    h.update(bytes);
    return h.hex();
}

const char* to_string(checkpoint_reason r) noexcept
{
    switch (r)
    {
    case checkpoint_reason::none:
        return "none";
    case checkpoint_reason::corrupt:
        return "corrupt";
    case checkpoint_reason::unsupported_format:
        return "unsupported_format";
    case checkpoint_reason::shortened:
        return "shortened";
    case checkpoint_reason::replaced:
        return "replaced";
    case checkpoint_reason::other_identity:
        return "other_identity";
    case checkpoint_reason::other_configuration:
        return "other_configuration";
    case checkpoint_reason::no_compaction:
        return "no_compaction";
    case checkpoint_reason::unrecorded:
        return "unrecorded";
    case checkpoint_reason::evidence_mismatch:
        return "evidence_mismatch";
    }
    return "none";
}

const char* to_string(verify_status s) noexcept
{
    switch (s)
    {
    case verify_status::ok:
        return "ok";
    case verify_status::changed:
        return "changed";
    case verify_status::unrecorded:
        return "unrecorded";
    case verify_status::invalid:
        return "invalid";
    }
    return "unrecorded";
}

// ---- configuration digest -------------------------------------------------------------------

json::object summary_config_json(const summary_config& c)
{
    json::array allow;
    for (const auto& a : c.redaction_allowlist)
        allow.emplace_back(a);
    auto strings = [](const std::vector<std::string>& v) {
        json::array a;
        for (const auto& x : v)
            a.emplace_back(x);
        return a;
    };
    json::object out{
        {"format", summary_config_format},
        {"keepRecentTokens", c.keep_recent_tokens},
        {"contextWindow", c.context_window},
        {"maxOutputTokens", c.max_output_tokens},
        {"redaction", json::object{{"enabled", c.redaction_enabled}, {"allowlist", std::move(allow)}}},
        {"prompts",
         json::object{
             {"system", summarization_system_prompt},
             {"initial", initial_summary_instructions},
             {"update", update_summary_instructions},
             {"turnPrefix", turn_prefix_instructions},
         }},
    };
    if (!c.pinned_custom_types.empty() || !c.pinned_ids.empty() || c.pinned_by_predicate)
        out["pinned"] = json::object{
            {"customTypes", strings(c.pinned_custom_types)},
            {"ids", strings(c.pinned_ids)},
            {"predicate", c.pinned_by_predicate}};
    if (!c.pinned_snapshot_types.empty())
        out["pinnedSnapshotTypes"] = strings(c.pinned_snapshot_types);
    if (!c.required_custom_types.empty() || !c.required_ids.empty() || c.required_by_predicate)
        out["required"] = json::object{
            {"customTypes", strings(c.required_custom_types)},
            {"ids", strings(c.required_ids)},
            {"predicate", c.required_by_predicate}};
    if (c.keep_recent_exchanges != 4)
        out["keepRecentExchanges"] = c.keep_recent_exchanges;
    return out;
}

std::string config_digest(const summary_config& c)
{
    return sha256_hex(stringify(summary_config_json(c)));
}

// ---- the record -----------------------------------------------------------------------------

namespace {

json::array strings_json(const std::vector<std::string>& v)
{
    json::array a;
    a.reserve(v.size());
    for (const auto& s : v)
        a.emplace_back(s);
    return a;
}

bool is_hex64(std::string_view s)
{
    return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
           });
}

// Strict field reading for parse_checkpoint: every failure names the field.
struct reader
{
    const json::object& o;
    diagnostics& diag;
    bool ok = true;

    bool fail(std::string_view field, std::string_view what)
    {
        if (ok)
        {
            diag.field = std::string(field);
            diag.message = "checkpoint field '" + std::string(field) + "': " + std::string(what);
        }
        ok = false;
        return false;
    }
    const json::value* need(const json::object& in, std::string_view field, std::string_view path)
    {
        const auto* v = in.if_contains(field);
        if (!v)
            fail(path, "missing");
        return v;
    }
    std::string str(const json::object& in, std::string_view field, std::string_view path)
    {
        const auto* v = need(in, field, path);
        if (v && !v->is_string())
            fail(path, "expected a string");
        return v && v->is_string() ? std::string(v->get_string()) : std::string();
    }
    std::string hex(const json::object& in, std::string_view field, std::string_view path)
    {
        auto s = str(in, field, path);
        if (ok && !is_hex64(s))
            fail(path, "expected 64 lowercase hex digits");
        return s;
    }
    std::vector<std::string> strings(const json::object& in, std::string_view field, std::string_view path)
    {
        std::vector<std::string> out;
        const auto* v = need(in, field, path);
        if (!v)
            return out;
        if (!v->is_array())
        {
            fail(path, "expected an array of strings");
            return out;
        }
        for (const auto& e : v->get_array())
        {
            if (!e.is_string())
            {
                fail(path, "expected an array of strings");
                return {};
            }
            out.emplace_back(e.get_string());
        }
        return out;
    }
    std::int64_t count(const json::object& in, std::string_view field, std::string_view path)
    {
        const auto* v = need(in, field, path);
        if (!v)
            return 0;
        if (v->is_int64() && v->get_int64() >= 0)
            return v->get_int64();
        if (v->is_uint64() && v->get_uint64() <= static_cast<std::uint64_t>(INT64_MAX))
            return static_cast<std::int64_t>(v->get_uint64());
        if (v->is_double() && v->get_double() >= 0 && v->get_double() < 9007199254740992.0 &&
            std::floor(v->get_double()) == v->get_double())
            return static_cast<std::int64_t>(v->get_double());
        fail(path, "expected a non-negative integer");
        return 0;
    }
    const json::object* obj(const json::object& in, std::string_view field, std::string_view path)
    {
        const auto* v = need(in, field, path);
        if (v && !v->is_object())
            fail(path, "expected an object");
        return v && v->is_object() ? &v->get_object() : nullptr;
    }
    void only(const json::object& in, std::initializer_list<std::string_view> known, std::string_view prefix)
    {
        for (const auto& kv : in)
            if (std::find(known.begin(), known.end(), std::string_view(kv.key())) == known.end())
                fail(std::string(prefix) + std::string(kv.key()), "unknown field");
    }
    // A `sourceRevision` object; `prefix` goes before the field names in failures.
    source_revision revision(const json::object& rev, std::string_view prefix)
    {
        source_revision out;
        out.count = static_cast<std::size_t>(count(rev, "count", std::string(prefix) + "count"));
        out.sha256 = hex(rev, "sha256", std::string(prefix) + "sha256");
        return out;
    }
    // An `evidence` array, bounded; `covered`: entries in the covered prefix (0: not checked).
    std::vector<evidence_reference> evidence(
        const json::object& in, std::string_view path, std::size_t covered
    )
    {
        std::vector<evidence_reference> out;
        const auto* v = need(in, "evidenceRefs", path);
        if (!v || (!v->is_array() && !fail(path, "expected an array")))
            return out;
        if (v->get_array().size() > max_evidence_references)
            fail(
                path,
                std::to_string(v->get_array().size()) + " references, over the bound of " +
                    std::to_string(max_evidence_references)
            );
        for (std::size_t k = 0; ok && k < v->get_array().size(); ++k)
        {
            const std::string at = std::string(path) + "[" + std::to_string(k) + "].";
            const auto& e = v->get_array()[k];
            if (!e.is_object())
            {
                fail(at, "expected an object");
                break;
            }
            only(e.get_object(), {"ref", "from", "count", "sha256"}, at);
            evidence_reference r;
            r.ref = str(e.get_object(), "ref", at + "ref");
            r.from = static_cast<std::size_t>(count(e.get_object(), "from", at + "from"));
            r.count = static_cast<std::size_t>(count(e.get_object(), "count", at + "count"));
            r.sha256 = hex(e.get_object(), "sha256", at + "sha256");
            if (ok && (r.ref.empty() || r.ref.size() > max_record_string_bytes))
                fail(at + "ref", "expected 1 to " + std::to_string(max_record_string_bytes) + " bytes");
            if (ok && (r.count == 0 || (covered > 0 && (r.from >= covered || r.count > covered - r.from))))
                fail(at + "count", "the range is empty or reaches past the covered prefix");
            out.push_back(std::move(r));
        }
        return out;
    }
    // An `identity` object; `prefix` goes before the field names in failures.
    checkpoint_identity identity(const json::object& id, std::string_view prefix)
    {
        return {
            str(id, "provider", std::string(prefix) + "provider"),
            str(id, "model", std::string(prefix) + "model")};
    }
};

}  // namespace

json::object to_json(const source_revision& r)
{
    return json::object{{"count", r.count}, {"sha256", r.sha256}};
}

json::object to_json(const checkpoint_identity& i)
{
    return json::object{{"provider", i.provider}, {"model", i.model}};
}

json::object to_json(const evidence_reference& r)
{
    return json::object{{"ref", r.ref}, {"from", r.from}, {"count", r.count}, {"sha256", r.sha256}};
}

namespace {

json::array evidence_json(const std::vector<evidence_reference>& v)
{
    json::array a;
    for (const auto& r : v)
        a.push_back(to_json(r));
    return a;
}

}  // namespace

json::object to_json(const checkpoint_record& r, bool with_digest)
{
    json::object o{
        {"format", checkpoint_format},
        {"source",
         json::object{
             {"sessionId", r.session_id}, {"compactionId", r.compaction_id}, {"timestamp", r.created_at}}},
        {"summary", r.summary},
        {"readFiles", strings_json(r.read_files)},
        {"modifiedFiles", strings_json(r.modified_files)},
        {"firstKeptEntryId", r.first_kept_entry_id},
        {"tokensBefore", r.tokens_before},
        {"coveredIds", strings_json(r.covered_ids)},
        {"sourceRevision", to_json(r.revision)},
        {"identity", to_json(r.identity)},
        {"configDigest", r.config_digest},
    };
    if (!r.kept_verbatim_ids.empty())
        o["keptVerbatim"] = strings_json(r.kept_verbatim_ids);
    if (!r.evidence.empty())
        o["evidenceRefs"] = evidence_json(r.evidence);
    if (with_digest)
        o["digest"] = r.digest;
    return o;
}

std::string record_digest(const checkpoint_record& r)
{
    return sha256_hex(stringify(to_json(r, false)));
}

namespace {

// parse_checkpoint's steps, in the order its failures are reported (the first one is kept).

void read_source(reader& rd, const json::object& o, checkpoint_record& r)
{
    if (const auto* src = rd.obj(o, "source", "source"))
    {
        rd.only(*src, {"sessionId", "compactionId", "timestamp"}, "source.");
        r.session_id = rd.str(*src, "sessionId", "source.sessionId");
        r.compaction_id = rd.str(*src, "compactionId", "source.compactionId");
        r.created_at = rd.str(*src, "timestamp", "source.timestamp");
    }
}

// `keptVerbatim`: optional, bounded, and only ids of covered entries.
void read_kept_verbatim(reader& rd, const json::object& o, checkpoint_record& r)
{
    if (o.contains("keptVerbatim"))
        r.kept_verbatim_ids = rd.strings(o, "keptVerbatim", "keptVerbatim");
    if (rd.ok && r.kept_verbatim_ids.size() > max_carried_entries)
        rd.fail(
            "keptVerbatim",
            std::to_string(r.kept_verbatim_ids.size()) + " ids, over the bound of " +
                std::to_string(max_carried_entries)
        );
    if (rd.ok && !r.kept_verbatim_ids.empty())
    {
        const std::unordered_set<std::string_view> covered(r.covered_ids.begin(), r.covered_ids.end());
        for (const auto& id : r.kept_verbatim_ids)
            if (rd.ok && !covered.contains(id))
                rd.fail("keptVerbatim", "names '" + id + "', which is not a covered entry");
    }
}

void read_revision_and_identity(reader& rd, const json::object& o, checkpoint_record& r)
{
    if (const auto* rev = rd.obj(o, "sourceRevision", "sourceRevision"))
    {
        rd.only(*rev, {"count", "sha256"}, "sourceRevision.");
        r.revision = rd.revision(*rev, "sourceRevision.");
    }
    if (const auto* id = rd.obj(o, "identity", "identity"))
    {
        rd.only(*id, {"provider", "model"}, "identity.");
        r.identity = rd.identity(*id, "identity.");
    }
}

// Every field of the record, strictly; the failures are in `rd`.
checkpoint_record read_record(reader& rd, const json::object& o)
{
    rd.only(
        o,
        {"format",
         "source",
         "summary",
         "readFiles",
         "modifiedFiles",
         "firstKeptEntryId",
         "tokensBefore",
         "coveredIds",
         "sourceRevision",
         "identity",
         "configDigest",
         "digest",
         "keptVerbatim",
         "evidenceRefs"},
        ""
    );
    checkpoint_record r;
    read_source(rd, o, r);
    r.summary = rd.str(o, "summary", "summary");
    r.read_files = rd.strings(o, "readFiles", "readFiles");
    r.modified_files = rd.strings(o, "modifiedFiles", "modifiedFiles");
    r.first_kept_entry_id = rd.str(o, "firstKeptEntryId", "firstKeptEntryId");
    r.tokens_before = rd.count(o, "tokensBefore", "tokensBefore");
    r.covered_ids = rd.strings(o, "coveredIds", "coveredIds");
    read_kept_verbatim(rd, o, r);
    read_revision_and_identity(rd, o, r);
    r.config_digest = rd.hex(o, "configDigest", "configDigest");
    r.digest = rd.hex(o, "digest", "digest");
    if (rd.ok && r.revision.count != r.covered_ids.size())
        rd.fail(
            "sourceRevision.count",
            "is " + std::to_string(r.revision.count) + " but coveredIds lists " +
                std::to_string(r.covered_ids.size()) + " entries"
        );
    if (rd.ok && r.revision.count == 0)
        rd.fail("sourceRevision.count", "a checkpoint covers at least one entry");
    if (rd.ok && o.contains("evidenceRefs"))
        r.evidence = rd.evidence(o, "evidenceRefs", r.revision.count);
    return r;
}

}  // namespace

result<checkpoint_record> parse_checkpoint(const json::value& v, checkpoint_reason& why, diagnostics& diag)
{
    why = checkpoint_reason::corrupt;
    if (!v.is_object())
    {
        diag.message = "a checkpoint record is a JSON object";
        return errc::checkpoint_invalid;
    }
    const auto& o = v.get_object();
    reader rd{o, diag};
    // The format first: another version's fields are not ours to judge.
    const auto format = rd.str(o, "format", "format");
    if (rd.ok && format != checkpoint_format)
    {
        why = checkpoint_reason::unsupported_format;
        diag.field = "format";
        diag.message = "unsupported checkpoint format '" + format + "' (expected " +
                       std::string(checkpoint_format) + ")";
        return errc::checkpoint_invalid;
    }
    auto r = read_record(rd, o);
    if (!rd.ok)
        return errc::checkpoint_invalid;
    // Bounded before anything is hashed or written: a record is checked like a compaction.
    if (auto ok = check_record_bounds(r, diag); !ok)
        return ok.error();
    if (const auto d = record_digest(r); d != r.digest)
    {
        diag.field = "digest";
        diag.message = "the record's digest does not match its content (expected " + d + ")";
        return errc::checkpoint_invalid;
    }
    why = checkpoint_reason::none;
    return r;
}

result<json::value> parse_record_json(std::string_view text, checkpoint_reason& why, diagnostics& diag)
{
    if (text.size() > max_record_bytes)
    {
        why = checkpoint_reason::corrupt;
        diag.message = "the checkpoint record is " + std::to_string(text.size()) +
                       " bytes, over the bound of " + std::to_string(max_record_bytes);
        return errc::checkpoint_invalid;
    }
    boost::system::error_code ec;
    std::string repeated;
    auto v = detail::parse_exact(text, 64, ec, nullptr, &repeated);
    if (ec == make_error_code(errc::duplicate_key))
    {
        why = checkpoint_reason::corrupt;
        diag.field = repeated;
        diag.message = "the checkpoint record names the key '" + repeated + "' twice in one object";
        return errc::checkpoint_invalid;
    }
    if (ec)
    {
        why = checkpoint_reason::corrupt;
        diag.message = "the checkpoint record is not valid JSON: " + ec.message();
        return errc::checkpoint_invalid;
    }
    return v;
}

result<checkpoint_record> parse_checkpoint_text(
    std::string_view text, checkpoint_reason& why, diagnostics& diag
)
{
    auto v = parse_record_json(text, why, diag);
    if (!v)
        return v.error();
    return parse_checkpoint(*v, why, diag);
}

// ---- covered prefixes -----------------------------------------------------------------------

std::vector<std::uint32_t> covered_entries(const session_log& log, std::size_t compaction_index)
{
    auto path = log.path_to(compaction_index);
    path.pop_back();  // the compaction itself
    const std::string& kept = log.meta(compaction_index).first_kept_entry_id;
    for (std::size_t k = 0; k < path.size(); ++k)
        if (log.meta(path[k]).id == kept)
        {
            path.resize(k);
            break;
        }
    return path;
}

std::vector<std::uint32_t> entries_before(const session_log& log, std::size_t first_kept_index)
{
    auto path = log.path_to(first_kept_index);
    path.pop_back();
    return path;
}

result<source_revision> compute_source_revision(
    const session_log& log, std::span<const std::uint32_t> entries, diagnostics& diag
)
{
    detail::sha256 h;
    for (const auto i : entries)
    {
        auto bytes = log.line_bytes(i, diag);
        if (!bytes)
            return bytes.error();
        h.update(*bytes);
        h.update("\n");
    }
    return source_revision{entries.size(), h.hex()};
}

struct source_revision_cache::impl
{
    struct memo
    {
        std::size_t count = 0;
        detail::sha256 state;  ///< after hashing `count` entries ending at the key
    };
    std::unordered_map<std::uint32_t, memo> states;
};

source_revision_cache::source_revision_cache() : impl_(std::make_unique<impl>()) {}
source_revision_cache::~source_revision_cache() = default;
source_revision_cache::source_revision_cache(source_revision_cache&&) noexcept = default;
source_revision_cache& source_revision_cache::operator=(source_revision_cache&&) noexcept = default;

result<source_revision> source_revision_cache::compute(
    const session_log& log, std::span<const std::uint32_t> entries, diagnostics& diag
)
{
    // The longest remembered prefix of `entries` (the table holds one state per hashed prefix).
    std::size_t start = 0;
    detail::sha256 h;
    for (const auto& [last, m] : impl_->states)
        if (m.count > start && m.count <= entries.size() && entries[m.count - 1] == last)
        {
            start = m.count;
            h = m.state;
        }
    for (std::size_t k = start; k < entries.size(); ++k)
    {
        auto bytes = log.line_bytes(entries[k], diag);
        if (!bytes)
            return bytes.error();
        h.update(*bytes);
        h.update("\n");
    }
    if (!entries.empty() && start < entries.size())
    {
        if (impl_->states.size() >= 4096)
            impl_->states.clear();  // a bound, never reached by real sessions' compaction counts
        impl_->states[entries.back()] = impl::memo{entries.size(), h};
    }
    return source_revision{entries.size(), h.hex()};
}

namespace {

const json::object* agentctx_details(const entry& e)
{
    if (!e.details.is_object())
        return nullptr;
    const auto* a = e.details.get_object().if_contains("agentctx");
    return a && a->is_object() ? &a->get_object() : nullptr;
}

std::vector<std::string> string_list(const json::value& details, std::string_view field)
{
    std::vector<std::string> out;
    if (!details.is_object())
        return out;
    if (const auto* v = details.get_object().if_contains(field); v && v->is_array())
        for (const auto& s : v->get_array())
            if (s.is_string())
                out.emplace_back(s.get_string());
    return out;
}

}  // namespace

namespace {

// What `read` takes from a compaction's details.agentctx; nullopt when there is none, or when
// `read` declines or finds a field malformed.
template <class Read>
auto read_recorded(const entry& compaction, Read read)
    -> decltype(read(std::declval<reader&>(), std::declval<const json::object&>()))
{
    const auto* a = agentctx_details(compaction);
    if (!a)
        return std::nullopt;
    diagnostics ignored;
    reader rd{*a, ignored};
    auto out = read(rd, *a);
    if (!rd.ok)
        return std::nullopt;
    return out;
}

}  // namespace

std::optional<source_revision> recorded_revision(const entry& compaction)
{
    return read_recorded(compaction, [](reader& rd, const json::object& a) -> std::optional<source_revision> {
        const auto* rev = rd.obj(a, "sourceRevision", "sourceRevision");
        if (!rev)
            return std::nullopt;
        return rd.revision(*rev, "");
    });
}

std::optional<recorded_checkpoint> recorded_fields(const entry& compaction)
{
    return read_recorded(
        compaction,
        [](reader& rd, const json::object& a) -> std::optional<recorded_checkpoint> {
            const auto* rev = rd.obj(a, "sourceRevision", "sourceRevision");
            const auto* id = rd.obj(a, "identity", "identity");
            if (!rev || !id)
                return std::nullopt;
            recorded_checkpoint out;
            out.revision = rd.revision(*rev, "");
            out.identity = rd.identity(*id, "");
            out.config_digest = rd.hex(a, "configDigest", "configDigest");
            if (a.contains("evidenceRefs"))
                out.evidence = rd.evidence(a, "evidenceRefs", out.revision.count);
            return out;
        }
    );
}

namespace {

// The references a clearing's context_edit carries (details.agentctx.evidenceRefs), if well-formed.
std::vector<evidence_reference> cleared_evidence(const entry& edit, std::size_t covered)
{
    const auto* d = edit.raw.if_contains("details");
    const auto* a = d && d->is_object() ? d->get_object().if_contains("agentctx") : nullptr;
    if (!a || !a->is_object() || !a->get_object().contains("evidenceRefs"))
        return {};
    diagnostics ignored;
    reader rd{a->get_object(), ignored};
    auto out = rd.evidence(a->get_object(), "evidenceRefs", covered);
    return rd.ok ? out : std::vector<evidence_reference>{};
}

// After the compaction's own: the references the clearings inside the covered prefix recorded
// (their context_edit entries), each once, every range still hashing as the host was told.
result<void> add_cleared_evidence(
    const session_log& log,
    std::span<const std::uint32_t> covered,
    std::vector<evidence_reference>& out,
    checkpoint_reason& why,
    diagnostics& diag
)
{
    for (const auto i : covered)
    {
        if (log.meta(i).type != entry_type::context_edit)
            continue;
        auto e = log.get(i, diag);
        if (!e)
            return e.error();
        for (auto& ref : cleared_evidence(**e, covered.size()))
        {
            if (std::find(out.begin(), out.end(), ref) != out.end())
                continue;
            auto now = compute_source_revision(log, covered.subspan(ref.from, ref.count), diag);
            if (!now)
                return now.error();
            if (now->sha256 != ref.sha256)
            {
                why = checkpoint_reason::evidence_mismatch;
                diag.message = "the entry cleared under evidence '" + ref.ref + "' (entry " +
                               std::to_string(ref.from + 1) + ") changed since it was kept";
                return errc::checkpoint_mismatch;
            }
            if (out.size() == max_evidence_references)
            {
                why = checkpoint_reason::unrecorded;
                diag.message = "the covered prefix holds more than " +
                               std::to_string(max_evidence_references) + " evidence references";
                return errc::checkpoint_unavailable;
            }
            out.push_back(std::move(ref));
        }
    }
    return {};
}

}  // namespace

std::optional<std::size_t> latest_compaction(const session_log& log)
{
    const auto path = log.active_path();
    for (std::size_t k = path.size(); k-- > 0;)
        if (log.meta(path[k]).type == entry_type::compaction)
            return path[k];
    return std::nullopt;
}

result<checkpoint_record> make_checkpoint(
    const session_log& log, std::size_t compaction_index, checkpoint_reason& why, diagnostics& diag
)
{
    auto e = log.get(compaction_index, diag);
    if (!e)
        return e.error();
    const entry& c = **e;
    const auto recorded = recorded_fields(c);
    if (!recorded)
    {
        why = checkpoint_reason::unrecorded;
        diag.message = "compaction " + c.id +
                       " carries no agentctx checkpoint fields (sourceRevision, identity, configDigest)";
        return errc::checkpoint_unavailable;
    }
    const auto covered = covered_entries(log, compaction_index);
    auto now = compute_source_revision(log, covered, diag);
    if (!now)
        return now.error();
    if (*now != recorded->revision)
    {
        why = checkpoint_reason::replaced;
        diag.message = "the history covered by compaction " + c.id +
                       " changed since it was written (recorded " + std::to_string(recorded->revision.count) +
                       " entries " + recorded->revision.sha256.substr(0, 12) + ", now " +
                       std::to_string(now->count) + " entries " + now->sha256.substr(0, 12) + ")";
        return errc::checkpoint_mismatch;
    }
    checkpoint_record r;
    r.session_id = log.header().id;
    r.compaction_id = c.id;
    r.created_at = c.timestamp;
    r.summary = c.summary;
    r.read_files = string_list(c.details, "readFiles");
    r.modified_files = string_list(c.details, "modifiedFiles");
    r.first_kept_entry_id = c.first_kept_entry_id;
    r.tokens_before = static_cast<std::int64_t>(c.tokens_before);
    r.covered_ids.reserve(covered.size());
    for (const auto i : covered)
        r.covered_ids.push_back(log.meta(i).id);
    if (const auto* kept = pinned_of(c))
        for (const auto& v : *kept)
            if (const auto* o = v.if_object(); o && o->contains("id") && o->at("id").is_string())
                r.kept_verbatim_ids.emplace_back(o->at("id").get_string());
    r.revision = recorded->revision;
    r.identity = recorded->identity;
    r.config_digest = recorded->config_digest;
    r.evidence = recorded->evidence;
    if (auto added = add_cleared_evidence(log, covered, r.evidence, why, diag); !added)
        return added.error();
    r.digest = record_digest(r);
    why = checkpoint_reason::none;
    return r;
}

result<void> check_checkpoint(
    const checkpoint_record& r,
    const session_log& log,
    std::span<const std::uint32_t> path,
    const checkpoint_identity& identity,
    std::string_view config_digest_now,
    checkpoint_reason& why,
    diagnostics& diag
)
{
    auto reject = [&](checkpoint_reason reason, std::string message) -> result<void> {
        why = reason;
        diag.message = std::move(message);
        return errc::checkpoint_mismatch;
    };
    if (r.identity != identity)
        return reject(
            checkpoint_reason::other_identity,
            "the record was written by " + r.identity.provider + "/" + r.identity.model +
                ", this session summarizes with " + identity.provider + "/" + identity.model
        );
    if (r.config_digest != config_digest_now)
        return reject(
            checkpoint_reason::other_configuration,
            "the record was written under other summary settings (keepRecentTokens, context window, output "
            "limit, redaction) or prompts (config digest " +
                r.config_digest.substr(0, 12) + ", here " + std::string(config_digest_now.substr(0, 12)) + ")"
        );
    if (path.size() < r.revision.count)
        return reject(
            checkpoint_reason::shortened,
            "the record covers " + std::to_string(r.revision.count) + " entries, the session's path has " +
                std::to_string(path.size())
        );
    for (std::size_t k = 0; k < r.revision.count; ++k)
        if (log.meta(path[k]).id != r.covered_ids[k])
            return reject(
                checkpoint_reason::replaced,
                "covered entry " + std::to_string(k + 1) + " is '" + log.meta(path[k]).id + "' here, '" +
                    r.covered_ids[k] + "' in the record"
            );
    // Each evidence range hashes here as the host was told when it kept it: checked first, so
    // an edited range is named as such, not only as a changed prefix.
    for (const auto& ev : r.evidence)
    {
        auto range = compute_source_revision(log, path.subspan(ev.from, ev.count), diag);
        if (!range)
            return range.error();
        if (range->sha256 != ev.sha256)
            return reject(
                checkpoint_reason::evidence_mismatch,
                "evidence '" + ev.ref + "' names entries " + std::to_string(ev.from + 1) + "-" +
                    std::to_string(ev.from + ev.count) + " with sha256 " + ev.sha256.substr(0, 12) +
                    ", here they hash to " + range->sha256.substr(0, 12)
            );
    }
    auto now = compute_source_revision(log, path.first(r.revision.count), diag);
    if (!now)
        return now.error();
    if (now->sha256 != r.revision.sha256)
        return reject(
            checkpoint_reason::replaced,
            "the covered entries have the record's ids but other bytes (an entry was "
            "edited in place): sha256 " +
                now->sha256.substr(0, 12) + ", recorded " + r.revision.sha256.substr(0, 12)
        );
    why = checkpoint_reason::none;
    return {};
}

result<compaction_verification> verify_compaction(
    const session_log& log, std::size_t compaction_index, diagnostics& diag, source_revision_cache* cache
)
{
    auto e = log.get(compaction_index, diag);
    if (!e)
        return e.error();
    compaction_verification v;
    v.id = log.meta(compaction_index).id;
    v.line = log.meta(compaction_index).line;
    const auto covered = covered_entries(log, compaction_index);
    v.covered = covered.size();
    auto now = cache ? cache->compute(log, covered, diag) : compute_source_revision(log, covered, diag);
    if (!now)
        return now.error();
    v.actual = std::move(*now);
    if (const auto rec = recorded_revision(**e))
    {
        v.recorded = *rec;
        v.status = *v.recorded == v.actual ? verify_status::ok : verify_status::changed;
    }
    v.problems = compaction_problems(log, compaction_index, **e);
    if (!v.problems.empty() && v.status != verify_status::changed)
        v.status = verify_status::invalid;
    return v;
}

std::vector<std::string> compaction_problems(
    const session_log& log, std::size_t compaction_index, const entry& c
)
{
    std::vector<std::string> out;
    diagnostics diag;
    if (auto ok = check_carried_summary(c.summary, 0, diag); !ok)
        out.push_back(diag.message);
    for (const char* field : {"readFiles", "modifiedFiles"})
    {
        const auto files = string_list(c.details, field);
        if (files.size() > max_file_list_entries)
            out.push_back(
                std::string(field) + ": " + std::to_string(files.size()) + " paths, over the bound of " +
                std::to_string(max_file_list_entries)
            );
    }
    if (const auto* pinned = pinned_of(c))
    {
        const auto covered = covered_entries(log, compaction_index);
        const covered_prefix prefix{
            covered.size(),
            [&](std::size_t k) -> std::string_view { return log.meta(covered[k]).id; },
            [&](std::size_t k) { return log.get(covered[k], diag); }};
        if (auto problem = check_carried(*pinned, prefix); !problem.empty())
            out.push_back("details.agentctx.pinned: " + problem);
    }
    return out;
}

result<std::vector<compaction_verification>> verify_compactions(const session_log& log, diagnostics& diag)
{
    std::vector<compaction_verification> out;
    source_revision_cache cache;  // compactions of one history share its prefix: read it once
    for (std::size_t i = 0; i < log.size(); ++i)
    {
        if (log.meta(i).type != entry_type::compaction)
            continue;
        auto v = verify_compaction(log, i, diag, &cache);
        if (!v)
            return v.error();
        out.push_back(std::move(*v));
    }
    return out;
}

}  // namespace agentctx::compaction
