// Portable checkpoints: a compaction's result as a self-verifying record, the
// `sourceRevision` of a compaction's covered prefix, and the checks that decide whether a record
// may be restored into a session. Pure: no I/O beyond the session_log's own line reads.
#pragma once

#include <agentctx/compaction/error.hpp>
#include <agentctx/compaction/session_log.hpp>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace agentctx::compaction {

/// The record's versioned format name.
inline constexpr std::string_view checkpoint_format = "agentctx-checkpoint-v1";
/// The format name inside the summary-configuration digest's input.
inline constexpr std::string_view summary_config_format = "agentctx-summary-config-v1";

/// The lowercase hex SHA-256 of `bytes` (FIPS 180-4, from OpenSSL's libcrypto).
std::string sha256_hex(std::string_view bytes);

/// The exact covered prefix of a compaction: how many entries, and the SHA-256 over their lines
/// as stored in the session file, in path order, each followed by `\n`.
struct source_revision
{
    std::size_t count = 0;
    std::string sha256;
    friend bool operator==(const source_revision&, const source_revision&) = default;
};

/// Who wrote the summary: the summarizer's provider and model (`offline`/`` for the offline one,
/// `hook`/`` for a before_compact hook's result).
struct checkpoint_identity
{
    std::string provider;
    std::string model;
    friend bool operator==(const checkpoint_identity&, const checkpoint_identity&) = default;
};

/// What a host's evidence store kept of the original entries a compaction summarized or clipped:
/// the host's own reference (opaque here) bound to the range it holds, as positions in the
/// covered prefix and the SHA-256 of the range's lines as stored (each followed by `\n`).
struct evidence_reference
{
    std::string ref;
    std::size_t from = 0;   ///< the range's first entry, 0-based in the covered prefix
    std::size_t count = 0;  ///< entries in the range (at least one)
    std::string sha256;
    friend bool operator==(const evidence_reference&, const evidence_reference&) = default;
};

/// `{"ref", "from", "count", "sha256"}`.
boost::json::object to_json(const evidence_reference& r);

/// The settings that shape a summary (and only those): what is summarized (`keepRecentTokens`),
/// the output budget (the model's window and output limit), redaction, and the prompt texts.
/// Trigger settings (`enabled`, `reserveTokens`), retries, observers and call allowances are
/// deliberately absent: changing them never invalidates a checkpoint.
struct summary_config
{
    std::int64_t keep_recent_tokens = 0;
    std::int64_t context_window = 0;
    std::int64_t max_output_tokens = 0;
    bool redaction_enabled = true;
    std::vector<std::string> redaction_allowlist;
    /// Pins change what is summarized: they are summary-generation settings too. In the digest
    /// only when any is set, so records written without pins keep their digest.
    std::vector<std::string> pinned_custom_types;
    std::vector<std::string> pinned_ids;
    std::vector<std::string> pinned_snapshot_types;
    bool pinned_by_predicate = false;
    /// Required entries hold the cut: in the digest only when any is set.
    std::vector<std::string> required_custom_types;
    std::vector<std::string> required_ids;
    bool required_by_predicate = false;
    /// agentctx's long-run rule (compaction.keepRecentExchanges): in the digest only when it is
    /// not the default 4, so records written before it existed keep their digest.
    std::int64_t keep_recent_exchanges = 4;
};

/// The canonical JSON the configuration digest is taken over (format, the fields above, and the
/// system, initial, update and turn-prefix prompt texts).
boost::json::object summary_config_json(const summary_config& c);
/// SHA-256 of JSON.stringify(summary_config_json(c)).
std::string config_digest(const summary_config& c);

/// A portable checkpoint: everything needed to append the same compaction to another copy of the
/// session, and to prove that copy's history is the one that was summarized.
struct checkpoint_record
{
    std::string session_id;     ///< the session it was exported from (informational)
    std::string compaction_id;  ///< its compaction entry there (informational)
    std::string created_at;     ///< that entry's timestamp
    std::string summary;
    std::vector<std::string> read_files;
    std::vector<std::string> modified_files;
    std::string first_kept_entry_id;  ///< in the source session
    std::int64_t tokens_before = 0;
    std::vector<std::string> covered_ids;  ///< the covered entries' ids, in path order
    /// Covered entries the compaction keeps verbatim beside its summary (pinned entries, the
    /// current instruction): `keptVerbatim`, present only when not empty. Restore copies those
    /// entries' own lines from the matching prefix into `details.agentctx.pinned`.
    std::vector<std::string> kept_verbatim_ids;
    source_revision revision;
    checkpoint_identity identity;
    std::string config_digest;
    /// The host's evidence of what was summarized (`evidenceRefs`, present only when not empty);
    /// restore checks each range against its own copy of the covered prefix.
    std::vector<evidence_reference> evidence;
    std::string digest;  ///< SHA-256 over the canonical record without this field
};

/// Why a record was refused (or a compaction could not be exported).
enum class checkpoint_reason
{
    none,
    corrupt,              ///< not a well-formed record, or its digest does not match its content
    unsupported_format,   ///< another `format` name
    shortened,            ///< the session's path is shorter than the covered prefix
    replaced,             ///< an entry of the covered prefix has another id, or other bytes
    other_identity,       ///< another summarizer provider or model
    other_configuration,  ///< other summary-generation settings or prompts
    no_compaction,        ///< export: no compaction on the active path
    unrecorded,           ///< export: the compaction carries no agentctx record
    evidence_mismatch,    ///< an evidence reference's range does not hash as it says here
};
const char* to_string(checkpoint_reason r) noexcept;

/// The record in its canonical key order, with `digest` (or without it: the digest's input).
boost::json::object to_json(const checkpoint_record& r, bool with_digest = true);
/// SHA-256 of JSON.stringify(to_json(r, false)).
std::string record_digest(const checkpoint_record& r);

/// Strict parse: exactly the known fields, each of its type; `format` must be
/// checkpoint_format; the digest must match. Errors are `checkpoint_invalid` with `why` set to
/// `corrupt` or `unsupported_format` and the field named in `diag`.
result<checkpoint_record> parse_checkpoint(
    const boost::json::value& v, checkpoint_reason& why, diagnostics& diag
);
/// Also refused as `corrupt`: a list or string over its bound (check_record_bounds, limits.hpp)
/// and a `keptVerbatim` id named twice.
/// As above from text (JSON; invalid JSON and a key named twice in one object are `corrupt`).
result<checkpoint_record> parse_checkpoint_text(
    std::string_view text, checkpoint_reason& why, diagnostics& diag
);
/// The JSON of a record's text, strictly: a key named twice in one object is refused
/// (`checkpoint_invalid`, `corrupt`, the key in `diag.field`) instead of the later one winning.
result<boost::json::value> parse_record_json(
    std::string_view text, checkpoint_reason& why, diagnostics& diag
);

/// The covered prefix of the compaction at log index `compaction_index`: the entries on its path
/// before its firstKeptEntryId, or (firstKeptEntryId its own id or not on its path) every entry
/// before it. Log indices, root first.
std::vector<std::uint32_t> covered_entries(const session_log& log, std::size_t compaction_index);
/// The covered prefix a compaction keeping from `first_kept_index` will have: its ancestors.
std::vector<std::uint32_t> entries_before(const session_log& log, std::size_t first_kept_index);

/// sourceRevision of `entries` (log indices): count, and SHA-256 over each line's stored bytes
/// followed by `\n`. Fails only when a line cannot be read back.
result<source_revision> compute_source_revision(
    const session_log& log, std::span<const std::uint32_t> entries, diagnostics& diag
);

/// compute_source_revision with memory: it keeps the SHA-256 state at the end of each prefix it
/// hashed, keyed by the prefix's last entry (in an append-only tree the path to an entry is
/// fixed, so that entry names the whole prefix). A longer prefix of the same path then reads and
/// hashes only the entries after the longest remembered one: verifying N compactions of one
/// history reads it once, not N times. Not thread-safe; one per session (or per verify run).
class source_revision_cache
{
public:
    source_revision_cache();
    ~source_revision_cache();
    source_revision_cache(source_revision_cache&&) noexcept;
    source_revision_cache& operator=(source_revision_cache&&) noexcept;

    /// As compute_source_revision(log, entries, diag); `entries` must be a path from the root.
    result<source_revision> compute(
        const session_log& log, std::span<const std::uint32_t> entries, diagnostics& diag
    );

private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

/// `{"count", "sha256"}` and `{"provider", "model"}` as written in `details.agentctx`.
boost::json::object to_json(const source_revision& r);
boost::json::object to_json(const checkpoint_identity& i);
/// The three fields of a compaction's `details.agentctx` that make it a checkpoint, if present
/// and well-formed.
struct recorded_checkpoint
{
    source_revision revision;
    checkpoint_identity identity;
    std::string config_digest;
    std::vector<evidence_reference> evidence;  ///< `evidence`, when recorded
};
std::optional<recorded_checkpoint> recorded_fields(const entry& compaction);
/// Only `details.agentctx.sourceRevision`, if present and well-formed.
std::optional<source_revision> recorded_revision(const entry& compaction);

/// The record of the compaction at log index `compaction_index`, from its entry and its
/// `details.agentctx` fields. Fails with `checkpoint_unavailable` (`unrecorded`) when it carries
/// no record, or `checkpoint_mismatch` (`replaced`) when its covered prefix no longer hashes as
/// recorded: a record is never made from a changed history.
result<checkpoint_record> make_checkpoint(
    const session_log& log, std::size_t compaction_index, checkpoint_reason& why, diagnostics& diag
);
/// The latest compaction on the active path (log index), if any.
std::optional<std::size_t> latest_compaction(const session_log& log);

/// Whether `r` may be restored into the session whose active path is `path` (log indices),
/// summarizing with `identity` under `config_digest`: the same identity, the same configuration,
/// and the whole covered prefix present with the same ids and bytes (entries after it are fine).
/// Fails with `checkpoint_mismatch`, `why` naming the reason, `diag.message` the detail.
result<void> check_checkpoint(
    const checkpoint_record& r,
    const session_log& log,
    std::span<const std::uint32_t> path,
    const checkpoint_identity& identity,
    std::string_view config_digest,
    checkpoint_reason& why,
    diagnostics& diag
);

/// `agentctx verify`: one row per compaction entry of the log, in file order.
enum class verify_status
{
    ok,          ///< the covered prefix hashes as recorded
    changed,     ///< it does not (or its count differs): the history was edited
    unrecorded,  ///< no sourceRevision recorded (Pi's or an older agentctx's compaction)
    invalid,     ///< the history is unchanged, but the entry's own content fails its checks (problems)
};
const char* to_string(verify_status s) noexcept;
struct compaction_verification
{
    std::string id;
    std::size_t line = 0;
    std::size_t covered = 0;                  ///< entries in its covered prefix now
    std::optional<source_revision> recorded;  ///< as written in details.agentctx
    source_revision actual;                   ///< as the file hashes now
    verify_status status = verify_status::unrecorded;
    /// What fails in the entry itself, checked like a compaction the runtime writes: a summary
    /// that is empty, file lists over their bounds, carried entries that are not the covered
    /// ones byte for byte (check_carried). A row with problems whose history is unchanged (or
    /// unrecorded) is `invalid`; its derived state is not used by a session.
    std::vector<std::string> problems;
};
/// The problems of the compaction entry `c` at log index `compaction_index` (see
/// compaction_verification::problems); empty when it passes.
std::vector<std::string> compaction_problems(
    const session_log& log, std::size_t compaction_index, const entry& c
);
/// The row of the compaction entry at log index `compaction_index`.
result<compaction_verification> verify_compaction(
    const session_log& log,
    std::size_t compaction_index,
    diagnostics& diag,
    source_revision_cache* cache = nullptr
);
result<std::vector<compaction_verification>> verify_compactions(const session_log& log, diagnostics& diag);

}  // namespace agentctx::compaction
