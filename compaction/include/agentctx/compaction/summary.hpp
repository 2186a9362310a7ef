// Summary assembly and validation: nothing is produced unless every check passes.
#pragma once

#include <agentctx/compaction/prepare.hpp>
#include <agentctx/compaction/summary_prompt.hpp>

#include <boost/json/value.hpp>

#include <boost/json/object.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace agentctx::compaction {

/// What a summarizer returned for one request.
struct summary_output
{
    std::string text;  ///< text blocks joined with "\n" (thinking excluded)
    stop_reason stop = stop_reason::stop;
    std::optional<std::string> error_message;  ///< for stop reason `error`; never a raw body
    std::size_t tool_calls = 0;                ///< tool-call blocks in the response (Pi 1.6 rejects any)
    std::optional<struct usage> usage;         ///< the provider's usage of this request, when known
    /// With a failed request (the completion's error code set): the provider's safe account of
    /// it (cause and attempts), so hosts never reach into a particular summarizer for it.
    std::string failure_detail;
};

/// Which request a summary answers; names it in failure messages as Pi does.
enum class summary_kind
{
    history,      ///< `Summarization`
    turn_prefix,  ///< `Turn prefix summarization`
    branch,       ///< `Branch summarization`
};

/// Pi's label of a request kind (`Summarization`, `Turn prefix summarization`, ...).
std::string_view summary_label(summary_kind kind) noexcept;

/// Rejects a summary, checked in this order (Pi 1.6; L = summary_label(kind)):
/// stop reason `error` → `summary_failed`, `L failed: <error message or "Unknown error">`;
/// `length` → `summary_truncated`, `L failed: generation hit the token cap and the summary is
/// incomplete`; any tool call → `summary_tool_call`, `L attempted to call a tool`; `aborted` →
/// `summary_aborted`; empty or whitespace text → `summary_empty` (agentctx's rule: Pi accepts
/// it); more estimated tokens than `max_output_tokens` (0 = no cap) → `summary_too_long`.
/// (Stop reasons are exclusive; an aborted empty reply is `summary_aborted`, matching Pi, whose
/// session turns any abort into a cancellation.)
result<void> check_summary_output(
    const summary_output& out,
    std::uint32_t max_output_tokens,
    diagnostics& diag,
    summary_kind kind = summary_kind::history
);

/// `base + "\n\n---\n\n**Turn Context (split turn):**\n\n" + prefix` where base is the history
/// summary, else `previous_summary` verbatim (Pi 1.6: nothing but the split turn
/// since the last compaction), else "No prior history.".
std::string merge_split_turn(
    const std::optional<std::string>& history,
    const std::string& prefix,
    const std::optional<std::string>& previous_summary = std::nullopt
);

/// Pi's `combineUsage(a, b)` (Pi 1.6): component-wise sums; `cache_write_1h` and `reasoning`
/// present when either has them (missing = 0); `total_from_provider` = both true.
usage combine_usage(const usage& a, const usage& b) noexcept;

/// The usage a compaction stores (Pi 1.6): both requests → combine_usage(history, prefix);
/// otherwise the one that was made (nullopt when neither reported usage).
std::optional<usage> compaction_usage(
    const std::optional<usage>& history, const std::optional<usage>& prefix
);

/// A `Usage` object in Pi's key order: `input, output, cacheRead, cacheWrite, cacheWrite1h?,
/// reasoning?, totalTokens, cost{input, output, cacheRead, cacheWrite, total, totalFromProvider}`
/// (for make_compaction_entry's `usage`; write it with stringify).
boost::json::object usage_to_json(const usage& u);

/// The entry-ready result of a compaction.
struct compaction_result
{
    std::string summary;  ///< with the file blocks appended
    std::string first_kept_entry_id;
    std::int64_t tokens_before = 0;
    boost::json::value details;     ///< {readFiles, modifiedFiles}
    std::int64_t tokens_after = 0;  ///< estimated tokens of summary + retained suffix
    /// The pinned entries the compaction carries (`details.agentctx.pinned`); the summary ends
    /// with their labelled block (render_pinned_block) for Pi.
    boost::json::array pinned;
};

/// Assembles the stored summary from the validated parts (a split turn merges with
/// merge_split_turn(history_summary, prefix, prep.previous_summary)) and checks the reduction: the context it
/// would produce (summary + retained suffix of `path`) must be at or below the threshold
/// `context_window - reserve_tokens`, else `insufficient_reduction` (a compaction that does not
/// get under the threshold would run again next turn: a loop).
result<compaction_result> assemble_compaction(
    std::span<const entry_ptr> path,
    const compaction_preparation& prep,
    const std::optional<std::string>& history_summary,
    const std::optional<std::string>& turn_prefix_summary,
    std::int64_t context_window,
    const compaction_settings& settings,
    diagnostics& diag,
    const token_counter& counter = default_token_counter()
);

/// Estimated tokens of the context a compaction would leave: the summary message plus every
/// message the path projects from `first_kept_index` on (after the new compaction, all usage
/// on them is stale, so they are estimated).
std::int64_t tokens_after_compaction(
    std::span<const entry_ptr> path,
    std::size_t first_kept_index,
    const std::string& summary,
    const token_counter& counter = default_token_counter()
);

}  // namespace agentctx::compaction
