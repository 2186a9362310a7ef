// Lifecycle events and hooks of a compaction.
#pragma once

#include <agentctx/compaction/prepare.hpp>
#include <agentctx/compaction/summary.hpp>
#include <agentctx/runtime/progress.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace agentctx::runtime {

enum class compaction_reason
{
    threshold,
    overflow,
    manual,
    background,  ///< summarized ahead of the threshold, off the agent's path
    /// Model downshift: the host switched to a smaller window the context does not fit; sized
    /// for the previous model, before the next request (session::async_change_model).
    model_change,
};

const char* to_string(compaction_reason r) noexcept;

struct compaction_start_event
{
    compaction_reason reason;
};

struct compaction_end_event
{
    compaction_reason reason;
    std::optional<compaction::compaction_result> result;  ///< set on success
    bool aborted = false;
    bool will_retry = false;
    std::optional<std::string> error_message;  ///< safe text: never a raw provider body or a key
    /// A background compaction that wrote nothing: why (`branched`, `edited`, `restored`,
    /// `settings_changed`, `over_threshold`, `superseded`, `cancelled`, `closed`, `failed`).
    std::optional<std::string> discarded;
    /// Set on success when the compaction entry stores a usage: the summary calls' (summed as
    /// the entry's `usage`), or what a before_compact hook's decision reported for its result.
    std::optional<compaction::usage> usage;
    /// Set on success when the recall gate ran: probes, found, repaired, verbatim.
    std::optional<compaction::recall_counts> recall;
};

/// A background compaction's summary is validated and held, bound to the prefix it covers; it is
/// committed at the threshold (or at once with `commit: "when-ready"`) if that prefix still holds.
struct compaction_prepared_event
{
    std::string first_kept_entry_id;
    std::size_t covered_entries = 0;  ///< entries before the first kept one on the planned path
    std::int64_t tokens_before = 0;
    std::int64_t elapsed_ms = 0;
    int calls = 0;  ///< model calls it made
};

/// Another node changed the session (a shared store): the session reloaded and swapped its
/// snapshot. `compactions` are the ids of compaction entries that node committed.
struct remote_change_event
{
    std::size_t entries = 0;  ///< entries now stored
    std::vector<std::string> compactions;
};

/// The latest compaction's derived state (carried entries or native state) failed its checks
/// when the session projected it: it is not used, the portable summary stands in. Reported once
/// per new finding (the snapshot's `dropped_derived` lists the current ones, also at open).
struct derived_state_dropped_event
{
    compaction::derived_note note;
};

/// Required context cannot be fitted: a compaction could not cut far enough because required
/// entries (session_config::required) hold the cut, or because even the smallest part the cut
/// can keep leaves no room for the summary's budget under contextWindow - reserveTokens
/// (`summary_tokens` > 0). Emitted at planning, before any model call. Numbers and ids only,
/// never content. The compaction itself fails with compaction `budget_exceeded` and writes nothing.
struct budget_exceeded_event
{
    compaction_reason reason;
    std::int64_t input_tokens = 0;  ///< the context's estimate
    /// The limit that started the compaction: the working budget when it triggered (reasons
    /// threshold and background), else contextWindow - reserveTokens (0: window unknown).
    std::int64_t allowance = 0;
    std::int64_t required_tokens =
        0;  ///< what must stay: from the oldest required entry, or the smallest keepable suffix
    std::string boundary_entry_id;  ///< where the summarizable range starts
    std::string
        required_entry_id;  ///< the oldest required entry, or where the smallest keepable suffix starts
    std::size_t boundary_position = 0;  ///< both as positions in the projected context
    std::size_t required_position = 0;
    /// From a request view the host asked for (session::async_request_view), not a compaction:
    /// `allowance` is then the view's room for messages, `reason` is meaningless.
    bool request_view = false;
    /// The summary's output budget the cut reserved room for (history_output_cap of
    /// reserveTokens and the model's output cap); 0 when required entries held the cut.
    std::int64_t summary_tokens = 0;
};

/// Old tool results were replaced by placeholders (`compaction.clearToolResults`): one batch of
/// context_edit entries, written together. The originals stay in the session (session::async_original).
struct context_cleared_event
{
    std::int64_t results = 0;        ///< tool results cleared
    std::int64_t tokens = 0;         ///< tokens freed (estimated)
    std::int64_t tokens_before = 0;  ///< the context's size that triggered it
    std::vector<std::string>
        target_ids;  ///< the cleared entries (results, and assistants whose arguments were cleared)
    std::vector<std::string> edit_ids;  ///< the context_edit entries written, in order
};

/// The host's evidence store (session_config::preserve_evidence) refused the originals of a
/// clearing, threw, or returned no reference: nothing was written, the turn's check went on, and
/// those entries are not cleared again (nor asked about) until a compaction commits or the
/// history is replaced (a reload, a restored checkpoint).
struct clearing_refused_event
{
    std::vector<std::string> target_ids;  ///< the entries the clearing would have replaced
    std::string reason;                   ///< why (safe text)
    std::int64_t tokens_before = 0;       ///< the context's size that triggered it
};

/// A provider said what it did to the reasoning a request replayed: an assistant message was
/// appended with `usage.inputTransformations` (wire_input_options::input_transformations).
/// Counts and reasons only.
struct reasoning_transformed_event
{
    std::string entry_id;              ///< the assistant message's entry
    std::int64_t removed = 0;          ///< reasoning items / thinking blocks withheld from the model
    std::int64_t allowed = 0;          ///< blocks that failed the binding check and were shown anyway
    std::vector<std::string> reasons;  ///< one per entry, in request order
};

/// A clearing was put off until the next compaction (one prefix break instead of two): the
/// serving model binds reasoning to the prefix it was made on, and the clearing would drop more
/// reasoning than it frees (docs/providers.md, "Reasoning after an edit").
struct clearing_deferred_event
{
    std::int64_t results = 0;           ///< tool results the clearing would have replaced
    std::int64_t tokens = 0;            ///< tokens it would have freed (estimated)
    std::int64_t reasoning_blocks = 0;  ///< thinking blocks it would have cost
    std::int64_t reasoning_tokens = 0;  ///< their size (estimated)
    std::int64_t tokens_before = 0;     ///< the context's size that triggered it
};

using session_event = std::variant<
    compaction_start_event,
    compaction_end_event,
    remote_change_event,
    compaction_progress_event,
    compaction_finished_event,
    derived_state_dropped_event,
    budget_exceeded_event,
    compaction_prepared_event,
    context_cleared_event,
    clearing_refused_event,
    reasoning_transformed_event,
    clearing_deferred_event>;

/// Passed to before_compact hooks; every reference lives until the hook returns (or, for an
/// awaitable hook, until its awaitable completes).
struct before_compact_event
{
    compaction_reason reason;
    const compaction::compaction_preparation& preparation;
    const std::optional<std::string>& custom_instructions;
    /// Overflow recovery: the host resends its request after this compaction commits.
    bool will_retry = false;
    /// The active path, root to leaf, every entry complete (Pi's `branchEntries`).
    const std::vector<compaction::entry_ptr>& branch_entries;
    /// Emits when the compaction is cancelled (abort_compaction(), close(), the caller's
    /// `terminal` cancellation, a manual compaction superseding an automatic one): bind the
    /// hook's own operations to it. An awaitable hook's `use_awaitable` operations are
    /// cancelled with the compaction already.
    boost::asio::cancellation_slot cancellation;
};

/// A hook's answer: cancel the compaction, or supply the result (validated like our own).
/// A result's `first_kept_entry_id` (empty: the plan's) must be a cut point the plan could have
/// chosen (agentctx mode): on the active path after the previous compaction's boundary, where a
/// cut is allowed (never a tool result, never inside a tool round), not past a required entry,
/// and not past a pinned entry the plan keeps. Otherwise the compaction fails with
/// `hook_invalid_cut` (the message names the entry and why) and writes nothing.
struct before_compact_decision
{
    bool cancel = false;
    std::optional<compaction::compaction_result> result;
    /// What producing `result` cost (the hook's own model call), as a summary call's usage: it
    /// becomes the compaction entry's `usage`, compaction_end_event::usage and the usage of
    /// compaction_finished_event's evidence. Ignored without a `result`.
    std::optional<compaction::usage> usage;
};

struct compacted_event
{
    const compaction::entry& entry;
    bool from_hook;
};

struct compact_failed_event
{
    compaction_reason reason;
    std::optional<std::string> error_message;
    bool aborted = false;
    bool will_retry = false;
    bool from_hook = false;
};

using hook_decision = before_compact_decision;

/// Hooks run on the session's strand in registration order and must not block. A hook that
/// throws is logged and skipped. For before_compact, the last non-empty result wins and a cancel
/// returns at once (as Pi's runner).
using before_compact_hook = std::function<before_compact_decision(const before_compact_event&)>;
/// A before_compact hook that may suspend (its own model call, a lookup): awaited on the
/// session's strand before the summary request; the compaction waits for it.
using async_before_compact_hook =
    std::function<boost::asio::awaitable<before_compact_decision>(const before_compact_event&)>;
using compacted_hook = std::function<void(const compacted_event&)>;
using compact_failed_hook = std::function<void(const compact_failed_event&)>;
/// compacted and compact_failed hooks that may suspend (a database write, a notification):
/// awaited on the session's strand in registration order with the synchronous ones; the
/// operation completes only after every hook has finished. Their cancellation is the
/// operation's: a cancellation while one runs cancels its `use_awaitable` operations, and the
/// operation's outcome stays what it was when the hooks started (a committed compaction is
/// reported committed; the entry is durable). Such a hook must not await a compaction of its
/// own session (it would wait for itself).
using async_compacted_hook = std::function<boost::asio::awaitable<void>(const compacted_event&)>;
using async_compact_failed_hook = std::function<boost::asio::awaitable<void>(const compact_failed_event&)>;
using event_listener = std::function<void(const session_event&)>;

}  // namespace agentctx::runtime
