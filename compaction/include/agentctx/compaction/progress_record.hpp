// The progress record of a piecewise summary: what a completed piece leaves behind,
// strictly parsed, and the rule that decides whether a later pass may resume from it.
#pragma once

#include <agentctx/compaction/checkpoint.hpp>
#include <agentctx/compaction/piece_plan.hpp>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace agentctx::compaction {

inline constexpr std::string_view progress_format = "agentctx-progress-v1";
/// The `customType` of the session-file entry that holds a record in its `data` (Pi ignores
/// `custom` entries in context).
inline constexpr std::string_view progress_custom_type = "agentctx.compaction_progress";

/// Only derived data: the running note, the exact identity of the part it covers, and where
/// the remaining pieces end. The pending source is regenerated from the transcript.
struct progress_record
{
    std::optional<std::string> base;  ///< the previous compaction's id (nullopt: none)
    std::string note;                 ///< the running note over messages [0, covered.count)
    covered_identity covered;
    std::string covered_last_entry_id;
    std::vector<std::size_t> remaining;  ///< message index where each remaining piece ends, ascending
    std::size_t prefix_messages = 0;     ///< the chosen prefix's message count when written
    std::size_t completed = 0;           ///< pieces the note covers (for progress displays)
    checkpoint_identity identity;        ///< the summarizer that wrote the note
    std::string config_digest;           ///< its summary-generation settings (as checkpoints)
    friend bool operator==(const progress_record&, const progress_record&) = default;
};

/// Why a record was refused.
enum class progress_reason
{
    none,
    corrupt,              ///< not a well-formed record
    unsupported_format,   ///< another `format`
    other_base,           ///< written against another previous compaction
    other_identity,       ///< another summarizer provider or model
    other_configuration,  ///< other summary-generation settings
    shortened,            ///< the prefix now has fewer messages than the record covers
    replaced,             ///< a covered message changed (other entry, other text)
    nothing_remaining,    ///< the record covers the whole prefix: no piece is left to summarize
    misaligned,           ///< the covered part ends inside a tool round (a piece would start in it)
};
const char* to_string(progress_reason r) noexcept;

/// `{"format", "base", "note", "covered": {"count", "sha256", "lastEntryId"}, "remaining",
/// "prefixMessages", "completed", "identity": {"provider", "model"}, "configDigest"}` in this order.
boost::json::object to_json(const progress_record& r);

/// Strict: exactly the fields above, each of its type, `sha256` 64 lowercase hex digits,
/// `count` >= 1, `remaining` strictly ascending and above `count`. Errors are `progress_invalid`
/// with `why` = `corrupt` or `unsupported_format` and the field named in `diag`.
result<progress_record> parse_progress(const boost::json::value& v, progress_reason& why, diagnostics& diag);

/// What the current pass knows about the prefix it is about to summarize.
struct progress_context
{
    std::span<const context_message> prefix;  ///< the chosen prefix's summarized messages
    std::optional<std::string> base;
    checkpoint_identity identity;
    std::string config_digest;
};

/// Whether `r` may be resumed: the same base, identity and configuration, and the covered part
/// still the first `count` messages with the same ids and text (messages after it may differ or
/// be new), ending at an exchange boundary (never inside a tool round) with at least one message
/// after it. Checked in that order; fails with `progress_mismatch`, `why` naming the reason: a
/// refused record is started over, never an error of the summarizer.
result<void> check_progress(
    const progress_record& r, const progress_context& now, progress_reason& why, diagnostics& diag
);

/// The pieces still to summarize after a compatible `r`: its recorded boundaries when the prefix
/// is the one it was written for and each is still a batch boundary, else a fresh plan of the
/// rest (from `covered.count`) under `max_source_chars`.
std::vector<summary_piece> remaining_pieces(
    const progress_record& r, std::span<const context_message> prefix, std::size_t max_source_chars
);

}  // namespace agentctx::compaction
