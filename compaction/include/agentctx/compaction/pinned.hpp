// Pinned entries (retained contents): which entries stay verbatim through every compaction.
#pragma once

#include <agentctx/compaction/entry.hpp>
#include <agentctx/compaction/message.hpp>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace agentctx::compaction {

/**
 * @brief What the host pins: entries by id, custom messages by `customType`, or a predicate.
 *
 * Pinnable are `custom_message` entries and user messages (entries that stand alone: pinning an
 * assistant's tool call without its result would break the tool pairing of every request). A
 * pinned entry inside a summarized prefix is not summarized; the compaction carries it verbatim
 * (`details.agentctx.pinned`, the entry's own JSON) and agentctx projects it right after the
 * summary, in its original order. Pins never move the cut.
 */
struct pin_policy
{
    std::vector<std::string> ids;
    std::vector<std::string> custom_types;
    /// Custom types whose entries are replacement snapshots (a reminder the host re-sends as it
    /// changes): pinned, but only the latest one stays in the working request; older snapshots
    /// remain in history and are neither carried nor summarized.
    std::vector<std::string> snapshot_types;
    std::function<bool(const entry&)> predicate;

    bool empty() const noexcept
    {
        return ids.empty() && custom_types.empty() && snapshot_types.empty() && !predicate;
    }
    /// Whether `e` is pinnable and pinned.
    bool pins(const entry& e) const;
};

/// Reads `{"pinned": {"customTypes": [..], "ids": [..], "snapshotTypes": [..]}}` from a settings object,
/// strictly typed
/// (`invalid_settings` naming the field). Absent = nothing pinned.
result<pin_policy> parse_pin_settings(const boost::json::object& settings, diagnostics& diag);

/// The delimiters of the block a compaction's summary carries for Pi, whose projection knows no
/// pins: the pinned entries' text, so Pi keeps them too.
inline constexpr std::string_view pinned_block_open =
    "<pinned-entries>\nKept verbatim (pinned by the host; not part of the summary above):\n";
inline constexpr std::string_view pinned_block_close = "</pinned-entries>";

/// The pinned entries a compaction carries: the `details.agentctx.pinned` array, or null.
const boost::json::array* pinned_of(const entry& compaction);

/// One carried item of a compaction: the entry decoded from its JSON, its message, the JSON.
struct carried_entry
{
    entry source;
    std::shared_ptr<const message> msg;
    const boost::json::object* raw = nullptr;  ///< into the array it was read from
};

/// The items of `pinned` that decode to a pinnable entry with a message, in order (a hand-edited
/// item is skipped, never a load failure).
std::vector<carried_entry> carried_entries(const boost::json::array& pinned);

/// The messages of a compaction's pinned entries, in their order (undecodable items skipped).
std::vector<std::shared_ptr<const message>> pinned_messages(const entry& compaction);

/// The block for `pinned` (entry JSON objects): one `[customType]` or `[user]` line per entry,
/// then its text. Empty when there is nothing pinned.
std::string render_pinned_block(const boost::json::array& pinned);

/// What the summarizer is told when entries are pinned (appended to its prompt): they are kept
/// verbatim beside the summary, so it neither restates nor paraphrases them. Empty without pins.
std::string pinned_prompt_note(const boost::json::array& pinned);

/// `summary` without its trailing pinned block (what agentctx shows, and what a later
/// compaction updates, so the block is never carried twice).
std::string strip_pinned_block(std::string_view summary);

}  // namespace agentctx::compaction
