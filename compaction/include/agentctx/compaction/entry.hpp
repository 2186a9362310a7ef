// Session log entries (Pi 1.6): the header, the eleven entry types, unknown ones.
#pragma once

#include <agentctx/compaction/error.hpp>
#include <agentctx/compaction/message.hpp>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace agentctx::compaction {

inline constexpr int current_session_version = 3;

enum class entry_type
{
    message,
    thinking_level_change,
    model_change,
    compaction,
    branch_summary,
    custom,
    custom_message,
    label,
    session_info,
    usage,         ///< Pi 1.6: model usage outside assistant messages (never in context)
    context_edit,  ///< Pi 1.6: omits or replaces an earlier entry's contribution to context
    unknown,       ///< a type written by a newer tool; kept and written back unchanged
};

std::string_view to_string(entry_type t) noexcept;
entry_type entry_type_from_string(std::string_view s) noexcept;

struct session_header
{
    int version = 1;  ///< absent = 1
    std::string id;
    std::string timestamp;
    std::optional<std::string> cwd;
    std::optional<std::string> parent_session;
    boost::json::object raw;  ///< exactly as read (or as written)
};

/// One non-header line. `raw` is the source of truth for writing (lossless: unknown fields and
/// key order survive); the typed fields are its validated view.
struct entry
{
    entry_type type = entry_type::unknown;
    std::string type_name;
    std::string id;
    std::optional<std::string> parent_id;  ///< nullopt = root
    std::string timestamp;                 ///< ISO-8601

    std::shared_ptr<const struct message> message;  ///< type message

    std::string thinking_level;      ///< thinking_level_change
    std::string provider, model_id;  ///< model_change

    std::string summary;                                   ///< compaction, branch_summary
    std::optional<struct usage> usage;                     ///< compaction, branch_summary, usage (Pi 1.6)
    std::shared_ptr<const struct message> system_message;  ///< compaction: the prompt checkpoint (Pi 1.6)
    std::string first_kept_entry_id;                       ///< compaction
    double tokens_before = 0;                              ///< compaction
    boost::json::value details;  ///< compaction, branch_summary, custom_message (null if absent)
    bool from_hook = false;      ///< compaction, branch_summary
    std::string from_id;         ///< branch_summary

    std::string custom_type;  ///< custom, custom_message
    struct content content;   ///< custom_message
    bool display = false;     ///< custom_message

    std::string target_id;  ///< label, context_edit
    /// context_edit: nullopt = `replacement: null` (omit the target), else the new content.
    std::optional<struct content> replacement;
    std::string usage_kind;            ///< usage (`cache_warm`, ...)
    std::optional<std::string> label;  ///< label (absent/empty = clear)
    std::optional<std::string> name;   ///< session_info

    boost::json::object raw;
};

using entry_ptr = std::shared_ptr<const entry>;

/// Decodes a header object (line 1). Errors: missing_header, wrong_type, unsupported_version.
result<session_header> decode_header(const boost::json::object& o, diagnostics& diag);

/// Decodes an entry object strictly (see decode_message). `raw` is moved into the entry.
result<entry> decode_entry(boost::json::object raw, diagnostics& diag);

/// Builds a header as Pi writes it: type, version, id, timestamp, cwd[, parentSession].
session_header make_header(std::string id, std::string timestamp, std::string cwd);

/// Builders for the entries agentctx writes, in Pi's field order.
result<entry> make_message_entry(
    std::string id,
    std::optional<std::string> parent_id,
    std::string timestamp,
    boost::json::object message,
    diagnostics& diag
);
/// A compaction in Pi 1.6's field order: ..., details?, usage?, fromHook, systemMessage?.
/// `system_message` is the replayed prompt (its timestamp is replaced by the entry's time).
entry make_compaction_entry(
    std::string id,
    std::optional<std::string> parent_id,
    std::string timestamp,
    std::string summary,
    std::string first_kept_entry_id,
    double tokens_before,
    boost::json::value details,
    bool from_hook,
    std::optional<boost::json::object> usage = std::nullopt,
    std::optional<boost::json::object> system_message = std::nullopt
);

/// A `context_edit` entry (Pi 1.6). `replacement` null omits the target.
entry make_context_edit_entry(
    std::string id,
    std::optional<std::string> parent_id,
    std::string timestamp,
    std::string target_id,
    boost::json::value replacement
);

/// Current time as Pi writes it: `2026-01-15T09:00:00.000Z`.
std::string iso_timestamp_now();

/// Unix milliseconds of an ISO-8601 UTC timestamp (`Date.parse`), nullopt if unparseable.
std::optional<double> parse_iso_timestamp(std::string_view s) noexcept;

/// A new entry id: 8 lowercase hex characters, not in `taken`.
template <class Taken>
std::string new_entry_id(const Taken& taken);
std::string random_hex8();

template <class Taken>
std::string new_entry_id(const Taken& taken)
{
    for (;;)
    {
        std::string id = random_hex8();
        if (!taken(id))
            return id;
    }
}

}  // namespace agentctx::compaction
