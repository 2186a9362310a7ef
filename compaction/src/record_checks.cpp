// Record checks: bounds, summary validation, redaction of what a compaction writes, line size.
#include <agentctx/compaction/record_checks.hpp>

#include <agentctx/compaction/json_text.hpp>
#include <agentctx/compaction/limits.hpp>
#include <agentctx/compaction/pinned.hpp>
#include <agentctx/compaction/summary.hpp>

#include <unordered_set>

namespace agentctx::compaction {

namespace {

result<void> over(diagnostics& diag, std::string field, std::string what)
{
    diag.message = "checkpoint field '" + field + "': " + what;
    diag.field = std::move(field);
    return errc::checkpoint_invalid;
}

result<void> check_files(const std::vector<std::string>& files, const char* field, diagnostics& diag)
{
    if (files.size() > max_file_list_entries)
        return over(
            diag,
            field,
            std::to_string(files.size()) + " paths, over the bound of " +
                std::to_string(max_file_list_entries)
        );
    for (std::size_t i = 0; i < files.size(); ++i)
        if (files[i].size() > max_file_path_bytes)
            return over(
                diag,
                std::string(field) + "[" + std::to_string(i) + "]",
                std::to_string(files[i].size()) + " bytes, over the bound of " +
                    std::to_string(max_file_path_bytes)
            );
    return {};
}

// The text before a trailing `\n\n<tag>\n...\n</tag>` block, or `s` when it ends with none.
std::string_view without_block(std::string_view s, std::string_view tag)
{
    const std::string close = "</" + std::string(tag) + ">";
    if (!s.ends_with(close))
        return s;
    const auto open = s.rfind("\n\n<" + std::string(tag) + ">\n");
    return open == std::string_view::npos ? s : s.substr(0, open);
}

}  // namespace

result<void> check_record_bounds(const checkpoint_record& r, diagnostics& diag)
{
    const std::pair<const char*, const std::string*> strings[] = {
        {"source.sessionId", &r.session_id},
        {"source.compactionId", &r.compaction_id},
        {"source.timestamp", &r.created_at},
        {"firstKeptEntryId", &r.first_kept_entry_id},
        {"identity.provider", &r.identity.provider},
        {"identity.model", &r.identity.model},
    };
    for (const auto& [field, s] : strings)
        if (s->size() > max_record_string_bytes)
            return over(
                diag,
                field,
                std::to_string(s->size()) + " bytes, over the bound of " +
                    std::to_string(max_record_string_bytes)
            );
    for (std::size_t i = 0; i < r.covered_ids.size(); ++i)
        if (r.covered_ids[i].size() > max_record_string_bytes)
            return over(
                diag,
                "coveredIds[" + std::to_string(i) + "]",
                "over the bound of " + std::to_string(max_record_string_bytes) + " bytes"
            );
    if (auto ok = check_files(r.read_files, "readFiles", diag); !ok)
        return ok;
    if (auto ok = check_files(r.modified_files, "modifiedFiles", diag); !ok)
        return ok;
    if (r.kept_verbatim_ids.size() > max_carried_entries)
        return over(
            diag,
            "keptVerbatim",
            std::to_string(r.kept_verbatim_ids.size()) + " ids, over the bound of " +
                std::to_string(max_carried_entries)
        );
    std::unordered_set<std::string_view> seen;
    for (std::size_t i = 0; i < r.kept_verbatim_ids.size(); ++i)
        if (!seen.insert(r.kept_verbatim_ids[i]).second)
            return over(
                diag,
                "keptVerbatim[" + std::to_string(i) + "]",
                "names '" + r.kept_verbatim_ids[i] + "' a second time"
            );
    return {};
}

std::string_view summary_core(std::string_view summary)
{
    std::string_view s = summary;
    if (const auto open = s.rfind("\n\n" + std::string(pinned_block_open));
        open != std::string_view::npos && s.ends_with(pinned_block_close))
        s = s.substr(0, open);
    s = without_block(s, "modified-files");
    return without_block(s, "read-files");
}

result<void> check_carried_summary(
    std::string_view summary, std::uint32_t max_output_tokens, diagnostics& diag
)
{
    const summary_output out{std::string(summary_core(summary)), stop_reason::stop, std::nullopt};
    if (auto ok = check_summary_output(out, max_output_tokens, diag); !ok)
    {
        diag.field = "summary";
        diag.message = "checkpoint field 'summary': " + diag.message;
        return ok;
    }
    return {};
}

void redact_strings(boost::json::value& v, const redactor& r, std::map<std::string, std::size_t>& counts)
{
    if (auto* s = v.if_string())
    {
        auto out = r.redact(*s);
        if (out.counts.empty())
            return;
        for (const auto& [rule, n] : out.counts)
            counts[rule] += n;
        *s = out.text;
    }
    else if (auto* a = v.if_array())
        for (auto& x : *a)
            redact_strings(x, r, counts);
    else if (auto* o = v.if_object())
        for (auto& kv : *o)
            if (kv.key() !=
                "encrypted_content")  // opaque ciphertext: no readable secret, and altered it is useless
                redact_strings(kv.value(), r, counts);
}

void redact_compaction(
    std::string& summary,
    boost::json::value& details,
    const redactor& r,
    std::map<std::string, std::size_t>& counts
)
{
    auto out = r.redact(summary);
    for (const auto& [rule, n] : out.counts)
        counts[rule] += n;
    summary = std::move(out.text);
    redact_strings(details, r, counts);
}

void redact_record(checkpoint_record& record, const redactor& r, std::map<std::string, std::size_t>& counts)
{
    auto scrub = [&](std::string& s) {
        auto out = r.redact(s);
        for (const auto& [rule, n] : out.counts)
            counts[rule] += n;
        s = std::move(out.text);
    };
    scrub(record.summary);
    for (auto& f : record.read_files)
        scrub(f);
    for (auto& f : record.modified_files)
        scrub(f);
}

result<void> check_line_fits(const entry& e, std::size_t max_line_bytes, diagnostics& diag)
{
    const std::size_t bytes = stringify(e.raw).size();
    if (bytes <= max_line_bytes)
        return {};
    diag.message = "the " + e.type_name + " entry would be a line of " + std::to_string(bytes) +
                   " bytes, over the session file's limit of " + std::to_string(max_line_bytes);
    return errc::over_limit;
}

}  // namespace agentctx::compaction
