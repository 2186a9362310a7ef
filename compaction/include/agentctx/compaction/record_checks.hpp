// The checks a checkpoint record (or a compaction entry read back) gets before it is trusted like
// a compaction the runtime wrote itself: bounded lists and strings, a valid summary, redaction of
// everything it writes, and a line that fits the session file's limit.
#pragma once

#include <agentctx/compaction/checkpoint.hpp>
#include <agentctx/compaction/entry.hpp>
#include <agentctx/compaction/redaction.hpp>

#include <boost/json/value.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace agentctx::compaction {

/// The bounds of limits.hpp over a parsed record: file lists (count and path length), the
/// identifier-like strings, and `keptVerbatim` (no id twice, at most max_carried_entries).
/// Fails with `checkpoint_invalid`, `diag.field` naming the field.
result<void> check_record_bounds(const checkpoint_record& r, diagnostics& diag);

/// A compaction's summary without what the compaction appends to the model's text: the
/// `<pinned-entries>` block and the `<read-files>` / `<modified-files>` blocks.
std::string_view summary_core(std::string_view summary);

/// The summary a record carries, validated as a model's summary is (check_summary_output):
/// its core not empty (`summary_empty`) and, with `max_output_tokens` > 0, not over that many
/// estimated tokens (`summary_too_long`). `diag.field` is `summary`.
result<void> check_carried_summary(
    std::string_view summary, std::uint32_t max_output_tokens, diagnostics& diag
);

/// Replaces secrets in every string value of `v` (keys are left alone, and so is opaque
/// provider ciphertext under `encrypted_content`), adding the replacements to `counts`.
void redact_strings(boost::json::value& v, const redactor& r, std::map<std::string, std::size_t>& counts);

/// Replaces secrets in everything a compaction entry writes: the summary (with its file lists and
/// pinned block) and every string of `details` (file lists, carried entries, native state).
void redact_compaction(
    std::string& summary,
    boost::json::value& details,
    const redactor& r,
    std::map<std::string, std::size_t>& counts
);

/// The record's summary and file lists with their secrets replaced (what an export writes, and
/// what a restore appends).
void redact_record(checkpoint_record& record, const redactor& r, std::map<std::string, std::size_t>& counts);

/// Whether `e` as a session-file line (JSON.stringify of its raw object) is at most
/// `max_line_bytes`; else `over_limit` naming the size, so nothing that a later load would
/// refuse as `line_too_long` is ever written.
result<void> check_line_fits(const entry& e, std::size_t max_line_bytes, diagnostics& diag);

}  // namespace agentctx::compaction
