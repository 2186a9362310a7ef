// Error codes and diagnostics of the compaction module (session log parsing, planning, validation).
#pragma once

#include <boost/system/error_code.hpp>
#include <boost/system/result.hpp>

#include <cstddef>
#include <string>
#include <type_traits>

namespace agentctx::compaction {

/// Stable error codes. Names and values never change once released.
enum class errc
{
    // Session log: reading.
    empty_file = 1,          ///< The file has no lines at all.
    missing_header,          ///< The first line is not a `session` header with a string id.
    unsupported_version,     ///< The header's version is newer than this library understands.
    invalid_json,            ///< A line is not valid JSON.
    invalid_utf8,            ///< A line is not valid UTF-8.
    line_too_long,           ///< A line exceeds the configured size limit.
    nesting_too_deep,        ///< A line nests deeper than the configured depth.
    wrong_type,              ///< A field has the wrong JSON type.
    missing_field,           ///< A required field is absent.
    duplicate_id,            ///< Two entries share one id.
    dangling_parent,         ///< An entry's parentId names no entry of the session.
    parent_cycle,            ///< Following parentId links loops.
                             // Session log: tree operations.
    entry_not_found,         ///< An id passed to a tree operation is unknown.
    migration_required,      ///< A v1/v2 file must be migrated before it can be appended to.
                             // Planning.
    transcript_invalid,      ///< tool calls and results do not pair up (see validate_transcript)
    already_compacted,       ///< the last entry of the path is a compaction
    nothing_to_compact,      ///< no message lies before the cut: the model would get nothing
    boundary_unavailable,    ///< no safe cut point exists in the range
    invalid_settings,        ///< a settings value has the wrong type or range (field named)
                             // Summary validation.
    summary_truncated,       ///< the model stopped at its output cap (stop reason `length`)
    summary_failed,          ///< the model reported an error (stop reason `error`)
    summary_aborted,         ///< the request was aborted (stop reason `aborted`)
    summary_empty,           ///< empty or whitespace-only text
    summary_too_long,        ///< more tokens than the request's output cap
    insufficient_reduction,  ///< summary + retained suffix would still be over the threshold
    summary_tool_call,       ///< the summarizer answered with a tool call (Pi 1.6)
                        // Portable checkpoints (checkpoint.hpp); the named reason travels beside the code.
    checkpoint_invalid,      ///< the record is not a valid agentctx-checkpoint-v1 (corrupt, other format)
    checkpoint_mismatch,     ///< the record does not fit this session (history, identity, settings)
    checkpoint_unavailable,  ///< nothing to export: no compaction, or one without an agentctx record
                             // Piecewise summaries (progress_record.hpp); the named reason travels beside the
                             // code.
    progress_invalid,   ///< a progress record is not a valid agentctx-progress-v1 (corrupt, other format)
    progress_mismatch,  ///< a progress record does not fit this history (changed, shortened, other settings)
                        // Hostile input from clients and record files.
    duplicate_key,      ///< a JSON object names one key twice (records are refused, never resolved by order)
    reserved_type,      ///< a client appended an entry type the runtime writes only for itself (`agentctx.*`)
    over_limit,         ///< a list or string is over its bound (limits.hpp), or a line over max_line_bytes
                        // The host's requirements.
    budget_exceeded,    ///< required context cannot be fitted: the cut cannot pass a required entry
    reserved_field,     ///< a client wrote a top-level entry field the runtime reserves (`agentctx*`)
                        // Client values.
    invalid_value,      ///< a value out of its range: a negative or huge usage count, a non-finite number,
                        ///< image data that is not base64, an image type no provider accepts
};

const boost::system::error_category& error_category() noexcept;

inline boost::system::error_code make_error_code(errc e) noexcept
{
    return {static_cast<int>(e), error_category()};
}

/// The name of a code as written in JSON output (`"duplicate_id"`).
const char* to_string(errc e) noexcept;

/// Human-readable detail of a failure: where it happened and why.
struct diagnostics
{
    std::size_t line = 0;  ///< 1-based line in the session file, 0 when not tied to a line.
    std::string field;     ///< JSON path of the offending field (`message.content[2].text`), may be empty.
    std::string message;   ///< Full sentence including the line and field.

    void clear()
    {
        line = 0;
        field.clear();
        message.clear();
    }
};

template <class T>
using result = boost::system::result<T>;

}  // namespace agentctx::compaction

template <>
struct boost::system::is_error_code_enum<agentctx::compaction::errc> : std::true_type
{};
