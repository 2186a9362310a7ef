// prepare_compaction: the range, the cut, what gets summarized and what is kept.
#pragma once

#include <agentctx/compaction/cut_point.hpp>
#include <agentctx/compaction/file_ops.hpp>
#include <agentctx/compaction/jobs.hpp>
#include <agentctx/compaction/pinned.hpp>
#include <agentctx/compaction/projection.hpp>
#include <agentctx/compaction/required.hpp>
#include <agentctx/compaction/settings.hpp>
#include <agentctx/compaction/transcript.hpp>

#include <optional>
#include <span>
#include <string>
#include <vector>

namespace agentctx::compaction {

struct plan_options
{
    compat_mode mode = compat_mode::agentctx;
    const token_counter* counter = nullptr;  ///< nullptr = default (chars/4)
    /// Entries that stay verbatim (agentctx mode): excluded from the summarized input and
    /// carried by the compaction. nullptr = none beyond those the previous compaction carries.
    const pin_policy* pins = nullptr;
    /// Entries that are never summarized: the cut stays at or before the oldest of them
    /// (`budget_exceeded` when that leaves nothing to summarize). nullptr = none.
    const required_policy* required = nullptr;
    /// Queued background jobs (agentctx mode): while a job runs, its launch exchange (the
    /// assistant entry and its results) is carried verbatim like a pinned entry, and the summary
    /// lists the job. A completed launch is ordinary history. nullptr = no jobs.
    const job_rules* jobs = nullptr;
    /// Filled (when set) with the numbers of a `budget_exceeded` failure.
    budget_shortfall* shortfall = nullptr;
    /// The model's window (0 = unknown). With it, keepRecentExchanges keeps at most half of
    /// `contextWindow - reserveTokens` (Pi's threshold): room for the summary and the next turns.
    std::int64_t context_window = 0;
    /// The model's output cap (0 = none). With `context_window` in agentctx mode, the cut keeps
    /// room for the summary's budget under the allowance `contextWindow - reserveTokens`
    /// (reserve_summary_room): history_output_cap(reserveTokens, this), at most half the
    /// allowance. `budget_exceeded` before any model call when even the smallest keepable
    /// suffix leaves no room.
    std::int64_t model_max_tokens = 0;
    /// Whether the cut reserves the summary's room (above). A background plan does not: it
    /// commits later against a context that has grown, and its cut keeps a turn whole on purpose.
    bool reserve_summary_room = true;
    /// agentctx mode, > 0: a split turn whose prefix is at most this many tokens is kept whole
    /// (keep_turn_whole). A background compaction sets it: what it keeps grows until its commit
    /// anyway, and a whole turn saves the turn-prefix summary request.
    std::int64_t whole_turn_tokens = 0;
    /// Keep exactly from this entry (or the first entry the context sees from it): an adopted
    /// provider compaction covers the path before it. The keepRecent* rules and the summary's
    /// room do not move it; it must be an allowed cut point of the range and pass no required
    /// entry, else `boundary_unavailable` with why in the diagnostics. nullptr = the rules' cut.
    const std::string* keep_from = nullptr;
};

struct compaction_preparation
{
    std::string first_kept_entry_id;
    std::size_t first_kept_index = 0;  ///< index on the path of the first kept entry
    std::size_t boundary_start = 0;    ///< path index where the planned range starts
    /// The same two positions among the projected entries (where the cut is computed, Pi 1.6).
    std::size_t first_kept_projected = 0;
    std::size_t boundary_projected = 0;
    bool advanced_past_omitted_attempt = false;  ///< the recovery-suffix rule applied (Pi 1.6)
    std::vector<context_message> messages_to_summarize;
    std::vector<context_message> turn_prefix_messages;
    bool is_split_turn = false;
    std::optional<std::size_t> turn_start_index;
    std::int64_t tokens_before = 0;
    std::optional<std::string> previous_summary;
    file_operations file_ops;
    /// The bounds of the summary's file lists: set in agentctx mode, none in Pi mode.
    std::optional<file_list_bounds> file_bounds;
    std::optional<std::size_t> crossing_index;  ///< where the keepRecentTokens walk stopped
    /// The pinned entries before the cut (the entries' own JSON, in path order): those the
    /// previous compaction carries, then the newly covered ones the policy pins.
    boost::json::array pinned;
    /// The jobs running at planning time (agentctx mode, with `plan_options::jobs`).
    std::vector<running_job> running_jobs;
    /// agentctx mode: what validate_transcript found in the planned range (results with no call,
    /// second answers, conflicting ids). Reported only: none of them stops the plan.
    std::vector<transcript_issue> transcript_issues;
};

/// Plans a compaction of the path (root first, leaf last) as Pi 1.6's prepareCompaction does, on
/// projected entries. Errors: already_compacted, nothing_to_compact (Pi's `undefined`: nothing
/// lies before the cut), budget_exceeded (a required entry holds the cut at the range's start)
/// and, in agentctx mode only, boundary_unavailable. Tool results that do not pair are listed in
/// `transcript_issues` and compacted like the rest (never transcript_invalid).
result<compaction_preparation> prepare_compaction(
    std::span<const entry_ptr> path,
    const compaction_settings& settings,
    const plan_options& opts,
    diagnostics& diag
);

/// The same over a log: materializes only the entries from the previous compaction's kept
/// region onward (plus that compaction); earlier entries are represented by their index data.
result<compaction_preparation> prepare_compaction(
    const session_log& log, const compaction_settings& settings, const plan_options& opts, diagnostics& diag
);

/// The same, given the context of the log's active path that the caller already built with
/// build_session_context(log) (a caller that shows the context and the plan projects once).
result<compaction_preparation> prepare_compaction(
    const session_log& log,
    const session_context& active_context,
    const compaction_settings& settings,
    const plan_options& opts,
    diagnostics& diag
);

/// The materialized path of `log` from which prepare_compaction(log, ...) plans: entries
/// before `needed_from` are index-only stand-ins (type, id, parent, firstKeptEntryId, and the
/// model / thinking level data projection tracks; assistant stand-ins carry no content).
struct planning_path
{
    std::vector<entry_ptr> entries;
    std::size_t needed_from = 0;
};
result<planning_path> load_planning_path(const session_log& log, diagnostics& diag);

}  // namespace agentctx::compaction
