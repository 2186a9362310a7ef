// Summary assembly and validation: nothing is produced unless every check passes.
#pragma once

#include <agentctx/compaction/prepare.hpp>
#include <agentctx/compaction/summary_prompt.hpp>

#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace agentctx::compaction {

/// What a summarizer returned for one request.
struct summary_output
{
    std::string text;
    stop_reason stop = stop_reason::stop;
    std::optional<std::string> error_message;  ///< for stop reason `error`; never a raw body
};

/// Rejects a summary: `summary_truncated` (length), `summary_failed` (error), `summary_aborted`,
/// `summary_empty` (empty or whitespace), `summary_too_long` (more estimated tokens than the cap).
result<void> check_summary_output(const summary_output& out, std::uint32_t max_output_tokens, diagnostics& diag);

/// `history + "\n\n---\n\n**Turn Context (split turn):**\n\n" + prefix`; "No prior history." when
/// there is no history summary.
std::string merge_split_turn(const std::optional<std::string>& history, const std::string& prefix);

/// The entry-ready result of a compaction (spec §7.5).
struct compaction_result
{
    std::string summary;  ///< with the file blocks appended
    std::string first_kept_entry_id;
    std::int64_t tokens_before = 0;
    boost::json::value details;  ///< {readFiles, modifiedFiles}
    std::int64_t tokens_after = 0;  ///< estimated tokens of summary + retained suffix
};

/// Assembles the stored summary from the validated parts and checks the reduction: the context it
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
