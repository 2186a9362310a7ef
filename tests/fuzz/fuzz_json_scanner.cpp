// Differential: the session-line scanner (line_indexer) against Boost.JSON 1.81 `parse`.
//
// Both must agree on accept/reject for every input, except where agentctx documents a
// difference, which this harness recognises exactly:
//   - lone surrogate escapes (`"\ud83d"`): the scanner accepts them (Pi wrote them), Boost
//     refuses them. Rule: the input must be accepted by Boost after replace_lone_surrogates
//     (same length, `\ufffd` in their place) and the scanner must treat both texts alike.
// Everything else, numbers with huge exponents included, must agree exactly. Also checked:
//   - the scanner's nesting_too_deep is Boost's too_deep (same limit, 64);
//   - the scan without the vector string skipper gives the same verdict, message and fields;
//   - the exact reader (parse_exact, which loads entries) accepts exactly what parse accepts and
//     builds the same value (doubles: within Boost 1.81's inexact rounding);
//   - the captured index fields (type, id, parentId, message.role ...) are what the value holds;
//   - stringify (JSON.stringify) output re-parses and re-stringifies to the same bytes.
#include "fuzz_check.hpp"
#include "json/exact_json.hpp"
#include "json/line_indexer.hpp"

#include <agentctx/compaction/json_text.hpp>

#include <boost/json/parse.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

namespace json = boost::json;
namespace detail = agentctx::compaction::detail;
using agentctx::compaction::errc;

namespace {

constexpr std::size_t max_depth = 64;  // load_options::max_depth

// Values equal up to Boost 1.81's double rounding (it is not correctly rounded; parse_exact is).
bool same_value(const json::value& a, const json::value& b)
{
    if (a.is_number() && b.is_number())
    {
        if (a.is_double() || b.is_double())
        {
            if (!a.is_double() || !b.is_double())
                return false;
            const double x = a.get_double(), y = b.get_double();
            if (x == y || (std::isnan(x) && std::isnan(y)))
                return true;
            if (std::isinf(x) || std::isinf(y))
                return false;
            const double scale = std::max(std::fabs(x), std::fabs(y));
            return scale < 1e-290 || std::fabs(x - y) <= scale * 1e-12;
        }
        return a == b;
    }
    if (a.kind() != b.kind())
        return false;
    if (a.is_object())
    {
        const auto& x = a.get_object();
        const auto& y = b.get_object();
        if (x.size() != y.size())
            return false;
        for (auto i = x.begin(), j = y.begin(); i != x.end(); ++i, ++j)
            if (i->key() != j->key() || !same_value(i->value(), j->value()))
                return false;
        return true;
    }
    if (a.is_array())
    {
        const auto& x = a.get_array();
        const auto& y = b.get_array();
        if (x.size() != y.size())
            return false;
        for (std::size_t i = 0; i < x.size(); ++i)
            if (!same_value(x[i], y[i]))
                return false;
        return true;
    }
    return a == b;
}

const json::value* field(const json::object& o, std::string_view key)
{
    return o.if_contains(key);
}

// The scanner's idea of a field's kind, from the value.
detail::seen kind_of(const json::value* v)
{
    if (!v)
        return detail::seen::absent;
    if (v->is_string())
        return detail::seen::string;
    if (v->is_null())
        return detail::seen::null;
    if (v->is_object())
        return detail::seen::object;
    return detail::seen::other;
}

void check_string_field(const json::object& o, std::string_view key, const std::string& captured)
{
    // A repeated key: the last one wins, in the value as in JSON.parse, and so in the index.
    const auto* v = field(o, key);
    const std::string_view want =
        v && v->is_string() ? std::string_view(v->get_string()) : std::string_view();
    FUZZ_CHECK(
        want == captured, "captured %.*s differs from the value", static_cast<int>(key.size()), key.data()
    );
}

// The index fields the scanner captured against the value the line materializes to.
void check_fields(const detail::line_fields& f, const json::value& v)
{
    FUZZ_CHECK(f.is_object == v.is_object(), "is_object");
    if (!v.is_object())
        return;
    const auto& o = v.get_object();
    FUZZ_CHECK(f.type_kind == kind_of(field(o, "type")), "type kind");
    FUZZ_CHECK(f.id_kind == kind_of(field(o, "id")), "id kind");
    FUZZ_CHECK(f.parent_kind == kind_of(field(o, "parentId")), "parentId kind");
    FUZZ_CHECK(f.message_kind == kind_of(field(o, "message")), "message kind");
    FUZZ_CHECK(f.label_kind == kind_of(field(o, "label")), "label kind");
    check_string_field(o, "type", f.type);
    check_string_field(o, "id", f.id);
    check_string_field(o, "parentId", f.parent_id);
    check_string_field(o, "thinkingLevel", f.thinking_level);
    check_string_field(o, "provider", f.provider);
    check_string_field(o, "modelId", f.model_id);
    check_string_field(o, "firstKeptEntryId", f.first_kept_entry_id);
    check_string_field(o, "targetId", f.target_id);
    check_string_field(o, "label", f.label);
    const auto* fk = field(o, "firstKeptEntryIndex");
    FUZZ_CHECK(
        f.first_kept_entry_index.has_value() == (fk && fk->is_number()), "firstKeptEntryIndex capture"
    );
    const json::object no_message;
    const auto* m = field(o, "message");
    const json::object& mo = m && m->is_object() ? m->get_object() : no_message;
    check_string_field(mo, "role", f.role);
    check_string_field(mo, "provider", f.message_provider);
    check_string_field(mo, "model", f.message_model);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string_view text(reinterpret_cast<const char*>(data), size);

    detail::line_indexer indexer(max_depth);
    agentctx::compaction::diagnostics diag;
    const auto ours = indexer.index(text, diag);
    const bool ours_ok = ours.has_value();
    const errc ours_code = ours_ok ? errc{} : static_cast<errc>(ours.error().value());
    const detail::line_fields fields = ours_ok ? **ours : detail::line_fields{};

    // The vector string skippers only decide faster: without them, the same verdict, message and
    // fields (each width this machine has).
    for (const auto width : {detail::string_skip_width::scalar, detail::string_skip_width::avx2})
    {
        if (!detail::has_string_skip_width(width) || width == detail::best_string_skip_width())
            continue;
        detail::line_fields other_fields;
        std::string other_message;
        const errc other_code =
            detail::line_indexer::scan(text, max_depth, other_fields, other_message, width);
        FUZZ_CHECK(
            other_code == ours_code && (ours_ok || other_message == diag.message),
            "string skipping changed the verdict (%s / %s)",
            diag.message.c_str(),
            other_message.c_str()
        );
        FUZZ_CHECK(
            !ours_ok || (other_fields.type == fields.type && other_fields.id == fields.id &&
                         other_fields.parent_id == fields.parent_id && other_fields.role == fields.role),
            "string skipping changed the captured fields"
        );
    }

    // The documented exception: rewrite lone surrogate escapes first, then demand agreement.
    const auto fixed = detail::replace_lone_surrogates(text);
    const std::string_view boost_text = fixed ? std::string_view(*fixed) : text;
    if (fixed)
    {
        FUZZ_CHECK(fixed->size() == text.size(), "replace_lone_surrogates changed the length");
        agentctx::compaction::diagnostics d2;
        const auto again = indexer.index(*fixed, d2);
        FUZZ_CHECK(
            again.has_value() == ours_ok, "the scanner treats the text with U+FFFD escapes differently"
        );
    }

    json::parse_options opts;
    opts.max_depth = max_depth;
    boost::system::error_code bec;
    json::value bv = json::parse(boost_text, bec, {}, opts);
    const bool boost_ok = !bec;
    FUZZ_CHECK(
        ours_ok == boost_ok,
        "scanner %s, Boost.JSON %s (%s / %s)",
        ours_ok ? "accepts" : "rejects",
        boost_ok ? "accepts" : "rejects",
        diag.message.c_str(),
        bec.message().c_str()
    );
    if (!ours_ok)
    {
        FUZZ_CHECK(
            (ours_code == errc::nesting_too_deep) == (bec == json::error::too_deep),
            "depth verdicts differ (%s / %s)",
            diag.message.c_str(),
            bec.message().c_str()
        );
    }

    // The exact reader: the same grammar (it is Boost's basic_parser) and the same value.
    boost::system::error_code eec;
    const json::value ev = detail::parse_exact(boost_text, max_depth, eec);
    FUZZ_CHECK(!eec == boost_ok, "parse_exact %s, parse %s", eec.message().c_str(), bec.message().c_str());
    if (!boost_ok)
        return 0;
    FUZZ_CHECK(same_value(ev, bv), "parse_exact and parse build different values");
    check_fields(fields, ev);

    // JSON.stringify output is JSON, and stable under a second round.
    const std::string s1 = agentctx::compaction::stringify(ev);
    FUZZ_CHECK(agentctx::compaction::is_valid_utf8(s1), "stringify wrote invalid UTF-8");
    boost::system::error_code rec;
    const json::value rv = detail::parse_exact(s1, max_depth, rec);
    FUZZ_CHECK(!rec, "stringify output does not parse: %s", rec.message().c_str());
    FUZZ_CHECK(agentctx::compaction::stringify(rv) == s1, "stringify is not stable under a round trip");
    return 0;
}
