// check_summary_output, merge_split_turn, assemble_compaction.
#include <agentctx/compaction/summary.hpp>

#include <agentctx/compaction/json_text.hpp>
#include <agentctx/compaction/token_estimate.hpp>

namespace agentctx::compaction {

result<void> check_summary_output(const summary_output& out, std::uint32_t max_output_tokens, diagnostics& diag)
{
    switch (out.stop)
    {
    case stop_reason::length:
        diag.message = "the summary was cut off at the output cap (" + std::to_string(max_output_tokens) + " tokens)";
        return errc::summary_truncated;
    case stop_reason::error:
        diag.message = "the summarizer failed: " + out.error_message.value_or("unknown error");
        return errc::summary_failed;
    case stop_reason::aborted:
        diag.message = "the summary request was aborted";
        return errc::summary_aborted;
    default: break;
    }
    if (out.text.find_first_not_of(" \t\r\n\f\v") == std::string::npos)
    {
        diag.message = "the summary is empty";
        return errc::summary_empty;
    }
    message m;
    m.role = role::compaction_summary;
    m.summary = out.text;
    const auto tokens = estimate_tokens(m);
    if (max_output_tokens && tokens > max_output_tokens)
    {
        diag.message = "the summary has ~" + std::to_string(tokens) + " tokens, over the cap of " +
                       std::to_string(max_output_tokens);
        return errc::summary_too_long;
    }
    return {};
}

std::string merge_split_turn(const std::optional<std::string>& history, const std::string& prefix)
{
    return history.value_or("No prior history.") + "\n\n---\n\n**Turn Context (split turn):**\n\n" + prefix;
}

std::int64_t tokens_after_compaction(
    std::span<const entry_ptr> path,
    std::size_t first_kept_index,
    const std::string& summary,
    const token_counter& counter
)
{
    // Pi 1.6's estimatedTokensAfter: every message of the projection the new compaction would
    // produce (its system checkpoint, the summary, the kept entries as edited), no usage.
    if (path.empty() || first_kept_index >= path.size())
        return 0;
    const std::string ts = path.back()->timestamp;
    const auto checkpoint = system_checkpoint(build_session_context(path), ts);
    std::vector<entry_ptr> next(path.begin(), path.end());
    next.push_back(std::make_shared<const entry>(make_compaction_entry(
        "(after)", path.back()->id, ts, summary, path[first_kept_index]->id, 0, nullptr, false, std::nullopt,
        checkpoint
    )));
    std::int64_t total = 0;
    for (const auto& m : build_session_context(next).messages)
        total += static_cast<std::int64_t>(counter.count(*m.msg));
    return total;
}

result<compaction_result> assemble_compaction(
    std::span<const entry_ptr> path,
    const compaction_preparation& prep,
    const std::optional<std::string>& history_summary,
    const std::optional<std::string>& turn_prefix_summary,
    std::int64_t context_window,
    const compaction_settings& settings,
    diagnostics& diag,
    const token_counter& counter
)
{
    compaction_result r;
    if (prep.is_split_turn && !prep.turn_prefix_messages.empty())
    {
        if (!turn_prefix_summary)
        {
            diag.message = "a split turn needs a turn-prefix summary";
            return errc::summary_empty;
        }
        r.summary = merge_split_turn(history_summary, *turn_prefix_summary);
    }
    else
    {
        if (!history_summary)
        {
            diag.message = "no history summary";
            return errc::summary_empty;
        }
        r.summary = *history_summary;
    }
    const file_lists lists = compute_file_lists(prep.file_ops);
    r.summary += format_file_operations(lists);
    r.details = file_lists_details(lists);
    r.first_kept_entry_id = prep.first_kept_entry_id;
    r.tokens_before = prep.tokens_before;
    r.tokens_after = tokens_after_compaction(path, prep.first_kept_index, r.summary, counter);
    const std::int64_t threshold = context_window - settings.reserve_tokens;
    if (context_window > 0 && r.tokens_after > threshold)
    {
        diag.message = "the compacted context would still hold ~" + std::to_string(r.tokens_after) +
                       " tokens, over the threshold of " + std::to_string(threshold);
        return errc::insufficient_reduction;
    }
    return r;
}

}  // namespace agentctx::compaction
