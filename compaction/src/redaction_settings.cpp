// Reads `{"redaction": {"enabled": bool, "allowlist": [..]}}` from a settings object, strictly typed.
#include <agentctx/compaction/redaction.hpp>

#include "json/field_reader.hpp"

#include <re2/re2.h>

namespace agentctx::compaction {

namespace {

result<redaction_settings> bad(
    diagnostics& diag, std::string field, const std::string& expected, const boost::json::value& got
)
{
    diag.field = std::move(field);
    diag.message = "settings: field '" + diag.field + "': expected " + expected + ", got " +
                   detail::kind_name(got.kind());
    return errc::invalid_settings;
}

}  // namespace

result<redaction_settings> parse_redaction_settings(const boost::json::object& settings, diagnostics& diag)
{
    redaction_settings out;
    const auto* section = settings.if_contains("redaction");
    if (!section)
        return out;
    if (!section->is_object())
        return bad(diag, "redaction", "object", *section);
    const auto& sec = section->get_object();
    if (const auto* v = sec.if_contains("enabled"))
    {
        if (!v->is_bool())
            return bad(diag, "redaction.enabled", "boolean", *v);
        out.enabled = v->get_bool();
    }
    if (const auto* v = sec.if_contains("allowlist"))
    {
        if (!v->is_array())
            return bad(diag, "redaction.allowlist", "array of strings", *v);
        const auto& arr = v->get_array();
        for (std::size_t i = 0; i < arr.size(); ++i)
        {
            const std::string field = "redaction.allowlist[" + std::to_string(i) + "]";
            if (!arr[i].is_string())
                return bad(diag, field, "string", arr[i]);
            const std::string_view entry = arr[i].get_string();
            if (entry.empty())
            {
                diag.field = field;
                diag.message = "settings: field '" + field + "': expected a non-empty string";
                return errc::invalid_settings;
            }
            if (entry.starts_with("re:"))
            {
                RE2::Options o;
                o.set_encoding(RE2::Options::EncodingLatin1);
                o.set_log_errors(false);
                const RE2 re(re2::StringPiece(entry.data() + 3, entry.size() - 3), o);
                if (!re.ok())
                {
                    diag.field = field;
                    diag.message = "settings: field '" + field + "': invalid RE2 pattern: " + re.error();
                    return errc::invalid_settings;
                }
            }
            out.allowlist.emplace_back(entry);
        }
    }
    return out;
}

}  // namespace agentctx::compaction
