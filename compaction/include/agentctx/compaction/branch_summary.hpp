// Branch summaries (Pi 1.6's tree navigation): what an abandoned branch held, the request that summarizes it,
// its text.
#pragma once

#include <agentctx/compaction/cut_point.hpp>
#include <agentctx/compaction/entry.hpp>
#include <agentctx/compaction/file_ops.hpp>
#include <agentctx/compaction/session_log.hpp>
#include <agentctx/compaction/summary_prompt.hpp>

#include <boost/json/value.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace agentctx::compaction {

/// Pi's branch prompt and the preamble its summaries start with.
extern const std::string_view branch_summary_instructions;
extern const std::string_view branch_summary_preamble;
/// The summary written without a model call when the branch holds no message.
extern const std::string_view branch_nothing_to_summarize;
/// Pi's `branchSummary.reserveTokens` default: the budget is the window (128000 when unknown) minus it.
inline constexpr std::int64_t default_branch_reserve_tokens = 16384;

/// The entries from `old_leaf` back to, not including, the deepest entry `target`'s path shares
/// with it, oldest first (log indices); none without an old leaf. Compactions on the way are included.
std::vector<std::uint32_t> branch_entries_to_summarize(
    const session_log& log, std::optional<std::size_t> old_leaf, std::size_t target
);

struct branch_preparation
{
    std::vector<std::shared_ptr<const message>> messages;  ///< oldest first
    file_operations file_ops;
    std::int64_t total_tokens = 0;
};

/// Pi 1.6's prepareBranchEntries: file lists seeded from the branch's own branch summaries (not a
/// hook's), the latest context edit per target applied, then newest to oldest while the estimate
/// fits `token_budget` (0 = no limit): tool results are skipped, a compaction or branch summary
/// over the budget still goes in while the total is under 90% of it, and the walk stops there.
branch_preparation prepare_branch_entries(std::span<const entry_ptr> entries, std::int64_t token_budget);

/// `<conversation>\n…\n</conversation>\n\n` + the branch prompt (`\n\nAdditional focus: …` after
/// it, or `custom_instructions` alone with `replace_instructions`); the summarization system
/// prompt; the output clamp of a summary request for the model.
summary_prompt branch_summary_prompt(
    std::span<const std::shared_ptr<const message>> messages,
    const std::optional<std::string>& custom_instructions,
    bool replace_instructions,
    std::int64_t context_window,
    std::int64_t model_max_tokens
);

/// The entry's summary and details: the preamble, the model's text, the file-list blocks (sorted
/// and unbounded with `compat_mode::pi`, bounded newest first otherwise); details
/// `{readFiles, modifiedFiles}`.
struct branch_summary_text
{
    std::string summary;
    boost::json::value details;
};
branch_summary_text finish_branch_summary(
    std::string_view model_text, const file_operations& ops, compat_mode mode
);

}  // namespace agentctx::compaction
