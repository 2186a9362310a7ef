// The immutable state a reader sees: projected context, model, and incremental token accounting.
#pragma once

#include <agentctx/compaction/pinned.hpp>
#include <agentctx/compaction/projection.hpp>
#include <agentctx/compaction/session_log.hpp>
#include <agentctx/compaction/token_accounting.hpp>
#include <agentctx/providers/provider_types.hpp>
#include <agentctx/runtime/append_list.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace agentctx::runtime {

/// One version of a session's state. Shared as `std::shared_ptr<const snapshot>`; a commit
/// replaces the pointer. Token accounting follows estimate_context_tokens with the stale-usage
/// rule, maintained in O(1) per appended message.
struct snapshot
{
    std::optional<std::string> leaf_id;
    std::size_t entry_count = 0;
    append_list<compaction::context_message> messages;  ///< what the next request carries
    std::string thinking_level = "off";
    std::optional<compaction::model_ref> model;
    std::optional<double> compacted_at;  ///< the latest compaction's time on the path (Unix ms)
    /// The replayed system prompt and tool set (Pi 1.6 system messages; null without any): what
    /// a host puts in its request's system prompt and tool list.
    std::shared_ptr<const compaction::message> system;
    std::int64_t system_tokens = 0;
    /// The latest compaction's native state (`details.agentctx.native`), revalidated when the
    /// snapshot was built (load, resume, commit, branch); null without one or when it is invalid,
    /// and then request views send the portable summary. Pass it to to_wire_messages /
    /// to_responses_input.
    std::shared_ptr<const providers::native_replay> native;
    /// Derived state of the latest compaction that failed its checks and is not used (carried
    /// entries not matching the covered ones, native state invalid, oversized or not of the
    /// compaction's provider): the portable summary stands in. The session reports each new
    /// one as a derived_state_dropped_event.
    std::vector<compaction::derived_note> dropped_derived;
    bool has_edits = false;  ///< a context_edit is among the projected entries  ///< estimate of `system`,
                             ///< counted once in the pure estimate

    std::int64_t total_estimate = 0;         ///< Σ estimates of all non-system messages
    std::optional<std::size_t> usage_index;  ///< fresh usage anchor, if any
    std::int64_t usage_tokens = 0;           ///< its calculate_context_tokens
    std::int64_t trailing_tokens = 0;        ///< estimates after the anchor

    /// Context tokens as Pi 1.6's estimateProjectedContextTokens: anchored usage + trailing
    /// estimates, or without a fresh anchor every message estimated with the prompt counted once.
    std::int64_t context_tokens() const noexcept
    {
        return usage_index ? compaction::saturating_add(usage_tokens, trailing_tokens)
                           : total_estimate + system_tokens;
    }

    /// The last assistant message of the context, if any.
    std::shared_ptr<const compaction::message> last_assistant() const;
};

/// Builds a snapshot from scratch (after a load, a commit or a branch): O(context).
compaction::result<std::shared_ptr<const snapshot>> make_snapshot(
    const compaction::session_log& log,
    const compaction::token_counter& counter,
    compaction::diagnostics& diag
);

/// Builds a snapshot from an already projected context.
std::shared_ptr<const snapshot> snapshot_from_context(
    compaction::session_context ctx, std::size_t entry_count, const compaction::token_counter& counter
);

/// Whether `m` is a reminder snapshot of `pins` (a custom message whose `customType` is one of
/// pin_policy::snapshot_types; the key is the custom type).
bool is_reminder_snapshot(const compaction::pin_policy& pins, const compaction::message& m);

/**
 * @brief `s` without the reminder snapshots a newer one of the same key replaces: of each
 * snapshot type only the newest message stays (a message of an entry `pins.ids` names stays
 * too). The figures follow: `total_estimate` and the trailing estimates lose the dropped
 * messages' estimates; an anchoring usage loses those its request carried (a dropped message
 * before it whose replacement came after it). Null when nothing is dropped. agentctx mode only:
 * the runtime never applies it with `--compat pi`.
 */
std::shared_ptr<const snapshot> without_replaced_snapshots(
    const snapshot& s, const compaction::pin_policy& pins, const compaction::token_counter& counter
);

/// Whether the native state `native` (`details.agentctx.native`) of `compaction` may be
/// replayed: at most max_native_state_bytes as JSON, valid for its provider
/// (providers::parse_native_state), and belonging to the compaction: written by a native
/// summary (`evidence.method` `native`) of a summarizer that is not a hook or the offline one,
/// whose recorded provider, when it names a wire format (`anthropic`, `openai`), is the state's.
/// Empty when it may, else why not.
std::string native_problem(const compaction::entry& compaction, const boost::json::value& native);

/// The snapshot after appending `e` to the log (which must now have `e` as its leaf): O(1).
/// A `context_edit` changes earlier messages: callers rebuild with make_snapshot instead.
std::shared_ptr<const snapshot> extend_snapshot(
    const snapshot& s, const compaction::entry& e, const compaction::token_counter& counter
);

}  // namespace agentctx::runtime
