// check_summary_output, merge_split_turn, assemble_compaction.
#include <agentctx/compaction/summary.hpp>

#include <agentctx/compaction/json_text.hpp>
#include <agentctx/compaction/jobs.hpp>
#include <agentctx/compaction/pinned.hpp>
#include <agentctx/compaction/token_estimate.hpp>

namespace agentctx::compaction {

std::string_view summary_label(summary_kind kind) noexcept
{
    switch (kind)
    {
    case summary_kind::history:
        return "Summarization";
    case summary_kind::turn_prefix:
        return "Turn prefix summarization";
    case summary_kind::branch:
        return "Branch summarization";
    }
    return "Summarization";
}

result<void> check_summary_output(
    const summary_output& out, std::uint32_t max_output_tokens, diagnostics& diag, summary_kind kind
)
{
    const std::string label(summary_label(kind));
    if (out.stop == stop_reason::error)
    {
        const std::string detail =
            out.error_message && !out.error_message->empty() ? *out.error_message : "Unknown error";
        diag.message = label + " failed: " + detail;
        return errc::summary_failed;
    }
    if (out.stop == stop_reason::length)
    {
        diag.message = label + " failed: generation hit the token cap and the summary is incomplete";
        return errc::summary_truncated;
    }
    if (out.tool_calls > 0)
    {
        diag.message = label + " attempted to call a tool";
        return errc::summary_tool_call;
    }
    if (out.stop == stop_reason::aborted)
    {
        diag.message = label + " was aborted";
        return errc::summary_aborted;
    }
    if (out.text.find_first_not_of(" \t\r\n\f\v") == std::string::npos)
    {
        diag.message = label + " returned an empty summary";
        return errc::summary_empty;
    }
    message m;
    m.role = role::compaction_summary;
    m.summary = out.text;
    const auto tokens = estimate_tokens(m);
    if (max_output_tokens && tokens > max_output_tokens)
    {
        diag.message = label + " returned ~" + std::to_string(tokens) + " tokens, over the cap of " +
                       std::to_string(max_output_tokens);
        return errc::summary_too_long;
    }
    return {};
}

std::string merge_split_turn(
    const std::optional<std::string>& history,
    const std::string& prefix,
    const std::optional<std::string>& previous_summary
)
{
    const std::string& base = history            ? *history
                              : previous_summary ? *previous_summary
                                                 : std::string("No prior history.");
    return base + "\n\n---\n\n**Turn Context (split turn):**\n\n" + prefix;
}

usage combine_usage(const usage& a, const usage& b) noexcept
{
    usage u;
    u.input = a.input + b.input;
    u.output = a.output + b.output;
    u.cache_read = a.cache_read + b.cache_read;
    u.cache_write = a.cache_write + b.cache_write;
    if (a.cache_write_1h || b.cache_write_1h)
        u.cache_write_1h = a.cache_write_1h.value_or(0) + b.cache_write_1h.value_or(0);
    if (a.reasoning || b.reasoning)
        u.reasoning = a.reasoning.value_or(0) + b.reasoning.value_or(0);
    u.total_tokens = a.total_tokens + b.total_tokens;
    u.cost.input = a.cost.input + b.cost.input;
    u.cost.output = a.cost.output + b.cost.output;
    u.cost.cache_read = a.cost.cache_read + b.cost.cache_read;
    u.cost.cache_write = a.cost.cache_write + b.cost.cache_write;
    u.cost.total = a.cost.total + b.cost.total;
    u.total_from_provider = a.total_from_provider && b.total_from_provider;
    return u;
}

std::optional<usage> compaction_usage(const std::optional<usage>& history, const std::optional<usage>& prefix)
{
    if (history && prefix)
        return combine_usage(*history, *prefix);
    return history ? history : prefix;
}

boost::json::object usage_to_json(const usage& u)
{
    boost::json::object o;
    o["input"] = u.input;
    o["output"] = u.output;
    o["cacheRead"] = u.cache_read;
    o["cacheWrite"] = u.cache_write;
    if (u.cache_write_1h)
        o["cacheWrite1h"] = *u.cache_write_1h;
    if (u.reasoning)
        o["reasoning"] = *u.reasoning;
    o["totalTokens"] = u.total_tokens;
    o["cost"] = boost::json::object{
        {"input", u.cost.input},
        {"output", u.cost.output},
        {"cacheRead", u.cost.cache_read},
        {"cacheWrite", u.cost.cache_write},
        {"total", u.cost.total},
        {"totalFromProvider", u.total_from_provider},
    };
    return o;
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
        "(after)",
        path.back()->id,
        ts,
        summary,
        path[first_kept_index]->id,
        0,
        nullptr,
        false,
        std::nullopt,
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
        r.summary = merge_split_turn(history_summary, *turn_prefix_summary, prep.previous_summary);
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
    const file_lists lists = compute_file_lists(prep.file_ops, prep.file_bounds);
    r.summary += format_file_operations(lists, prep.file_bounds.value_or(file_list_bounds{}));
    r.summary += render_running_jobs_block(prep.running_jobs);
    r.summary += render_pinned_block(prep.pinned);
    r.pinned = prep.pinned;
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
