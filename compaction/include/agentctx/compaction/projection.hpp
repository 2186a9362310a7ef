// Context projection (Pi 1.6): the entries and messages the next request sees.
#pragma once

#include <agentctx/compaction/entry.hpp>
#include <agentctx/compaction/session_log.hpp>

#include <boost/json/object.hpp>

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace agentctx::compaction {

struct model_ref
{
    std::string provider;
    std::string model_id;
    bool operator==(const model_ref&) const = default;
};

/// One projected message and the entry it came from (the compaction entry for the summary).
struct context_message
{
    std::shared_ptr<const message> msg;
    std::string entry_id;
};

/// Pi 1.6's ProjectedEntry: a selected entry and the messages it contributes after context
/// edits (none for metadata, omitted entries and older compactions). Cut points, budgets and
/// split detection run on these (Pi 1.6).
struct projected_entry
{
    entry_ptr source;            ///< materialized, or an index-only stand-in for metadata
    std::size_t path_index = 0;  ///< position on the root-to-leaf path
    entry_ptr edit;              ///< the context_edit applied to it (the latest on the range), if any
    std::vector<std::shared_ptr<const message>> messages;
};

/// Derived state of a compaction that failed its checks and is not used: the portable summary
/// stands in for it. `part` is `pinned` (carried entries) or `native` (provider state).
struct derived_note
{
    std::string compaction_id;
    std::string part;
    std::string reason;  ///< a sentence (safe text: ids and counts, never entry content)
    bool operator==(const derived_note&) const = default;
};

struct session_context
{
    std::vector<context_message> messages;
    std::vector<projected_entry> entries;
    /// Replay of the projected system messages (Pi 1.6): the current prompt sections and
    /// tool set. Null when the context holds no system message.
    std::shared_ptr<const message> system;
    /// Path index of the last `context_edit` or `compaction` on the whole path (Pi 1.6).
    std::optional<std::size_t> last_edit_or_compaction;
    std::string thinking_level = "off";
    std::optional<model_ref> model;
    std::optional<std::string> leaf_id;
    /// The latest compaction's carried entries when they failed check_carried: not projected,
    /// its summary shown whole (with the `<pinned-entries>` block Pi reads) instead.
    std::vector<derived_note> dropped;
};

/// Pi's sessionEntryToContextMessages (Pi 1.6): the messages of one entry, no edits applied.
std::vector<std::shared_ptr<const message>> entry_messages(const entry& e);

/// Pi's projectContextEntry (Pi 1.6): `edit` null = unedited.
std::vector<std::shared_ptr<const message>> project_entry(const entry& e, const entry* edit);

/// The message an entry contributes without edits (`message`, `custom_message`, non-empty
/// `branch_summary`), or null. `keep_empty_branch_summary`: also an empty branch summary.
std::shared_ptr<const message> message_of_entry(const entry& e, bool keep_empty_branch_summary = false);

/// The compactionSummary message built from a compaction entry.
std::shared_ptr<const message> compaction_summary_message(const entry& compaction);

/// Pi's getCurrentSystemMessage (Pi 1.6) over messages in order; null without system messages.
std::shared_ptr<const message> replay_system_messages(std::span<const context_message> messages);
std::shared_ptr<const message> replay_system_messages(std::span<const std::shared_ptr<const message>> messages
);

/// A system message as Pi persists a replay: role, content, sections?, toolsAdded?, timestamp
/// (sections in JavaScript key order).
boost::json::object system_message_json(const message& m);

/// The `systemMessage` checkpoint of a compaction appended after this context (Pi 1.6): the
/// replayed prompt with `timestamp = Date.parse(entry_timestamp)`; nullopt without system messages.
std::optional<boost::json::object> system_checkpoint(
    const session_context& ctx, std::string_view entry_timestamp
);
/// The same from an already replayed system message (null: nullopt).
std::optional<boost::json::object> system_checkpoint(
    const std::shared_ptr<const message>& system, std::string_view entry_timestamp
);

/// Projection of the log for `leaf` (default: the log's leaf). Only the entries the context
/// needs are materialized; model and thinking level come from the index.
result<session_context> build_session_context(const session_log& log, diagnostics& diag);
result<session_context> build_session_context(
    const session_log& log, std::optional<std::size_t> leaf, diagnostics& diag
);

/// Projection of a materialized path (root first, leaf last). The carried entries of its
/// compaction are checked against the covered entries; an index-only stand-in among those is
/// read from `log` (by id) when given; without a log, a path holding stand-ins is not checked.
session_context build_session_context(std::span<const entry_ptr> path, const session_log* log = nullptr);

}  // namespace agentctx::compaction
