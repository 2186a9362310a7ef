// The bounds on what a compaction entry or a checkpoint record may hold: every list and string a
// client or a record file can make a session write or project is capped here, in one place.
#pragma once

#include <cstddef>

namespace agentctx::compaction {

/// A checkpoint record's text, in bytes (the session file's default line limit).
inline constexpr std::size_t max_record_bytes = 64u * 1024u * 1024u;
/// Paths in `readFiles` / `modifiedFiles` (and the summary's `<read-files>` / `<modified-files>`
/// blocks): at most this many per list.
inline constexpr std::size_t max_file_list_entries = 1000;
/// One file path, in bytes.
inline constexpr std::size_t max_file_path_bytes = 4096;
/// One identifier-like string of a record: ids, timestamps, provider and model names.
inline constexpr std::size_t max_record_string_bytes = 1024;
/// Entries a compaction carries verbatim (`details.agentctx.pinned` / a record's `keptVerbatim`).
inline constexpr std::size_t max_carried_entries = 1000;
/// Their total size as JSON text, in bytes.
inline constexpr std::size_t max_carried_bytes = 8u * 1024u * 1024u;
/// Evidence references a compaction or a record holds (`details.agentctx.evidenceRefs` / `evidenceRefs`).
inline constexpr std::size_t max_evidence_references = 1000;
/// A compaction's native provider state (`details.agentctx.native`) as JSON text, in bytes.
inline constexpr std::size_t max_native_state_bytes = 4u * 1024u * 1024u;

}  // namespace agentctx::compaction
