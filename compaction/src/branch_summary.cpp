// Branch summaries as Pi 1.6 writes them: collection, budgeted preparation, prompt, text (see
// branch_summary.hpp).
#include <agentctx/compaction/branch_summary.hpp>

#include <agentctx/compaction/llm_convert.hpp>
#include <agentctx/compaction/projection.hpp>
#include <agentctx/compaction/serialize.hpp>
#include <agentctx/compaction/token_estimate.hpp>

#include <map>
#include <unordered_set>

namespace agentctx::compaction {

const std::string_view branch_summary_instructions =
    R"pi(Create a structured summary of this conversation branch for context when returning later.

Use this EXACT format:

## Goal
[What was the user trying to accomplish in this branch?]

## Constraints & Preferences
- [Any constraints, preferences, or requirements mentioned]
- [Or "(none)" if none were mentioned]

## Progress
### Done
- [x] [Completed tasks/changes]

### In Progress
- [ ] [Work that was started but not finished]

### Blocked
- [Issues preventing progress, if any]

## Key Decisions
- **[Decision]**: [Brief rationale]

## Next Steps
1. [What should happen next to continue this work]

Keep each section concise. Preserve exact file paths, function names, and error messages.)pi";

const std::string_view branch_summary_preamble = "The user explored a different conversation branch before "
                                                 "returning here.\nSummary of that exploration:\n\n";

const std::string_view branch_nothing_to_summarize = "No content to summarize";

std::vector<std::uint32_t> branch_entries_to_summarize(
    const session_log& log, std::optional<std::size_t> old_leaf, std::size_t target
)
{
    if (!old_leaf)
        return {};
    const auto old_path = log.path_to(old_leaf);
    const std::unordered_set<std::uint32_t> on_old(old_path.begin(), old_path.end());
    const auto target_path = log.path_to(target);
    std::optional<std::uint32_t> ancestor;
    for (std::size_t k = target_path.size(); k-- > 0 && !ancestor;)
        if (on_old.contains(target_path[k]))
            ancestor = target_path[k];
    // old_path is root first: everything after the common ancestor, in that order.
    std::size_t from = 0;
    if (ancestor)
        for (std::size_t k = 0; k < old_path.size(); ++k)
            if (old_path[k] == *ancestor)
                from = k + 1;
    return {old_path.begin() + static_cast<std::ptrdiff_t>(from), old_path.end()};
}

namespace {

// Pi's getMessageFromEntry for branch summaries: the message an entry adds, or null.
std::shared_ptr<const message> branch_message(const entry& e, const entry* edit)
{
    auto first_projected = [&]() -> std::shared_ptr<const message> {
        auto v = project_entry(e, edit);
        return v.empty() ? nullptr : v.front();
    };
    switch (e.type)
    {
    case entry_type::message:
        if (!e.message || e.message->role == role::tool_result)
            return nullptr;  // the context is in the assistant's tool call
        return edit ? first_projected() : e.message;
    case entry_type::custom_message:
        return edit ? first_projected() : message_of_entry(e, true);
    case entry_type::branch_summary:
        return message_of_entry(e, true);
    case entry_type::compaction:
        return compaction_summary_message(e);
    default:
        return nullptr;
    }
}

}  // namespace

branch_preparation prepare_branch_entries(std::span<const entry_ptr> entries, std::int64_t token_budget)
{
    branch_preparation out;
    // File lists carry on from the branch's own earlier branch summaries (a hook's are not ours).
    for (const auto& e : entries)
        if (e->type == entry_type::branch_summary && !e->from_hook && e->details.is_object())
            seed_file_ops(e->details, out.file_ops);
    std::map<std::string, const entry*> edits;  // the latest edit of each target wins
    for (const auto& e : entries)
        if (e->type == entry_type::context_edit)
            edits[e->target_id] = e.get();
    for (std::size_t k = entries.size(); k-- > 0;)
    {
        const entry& e = *entries[k];
        const auto it = edits.find(e.id);
        auto m = branch_message(e, it == edits.end() ? nullptr : it->second);
        if (!m)
            continue;
        extract_file_ops(*m, out.file_ops);  // before the budget test, as Pi
        const auto tokens = static_cast<std::int64_t>(estimate_tokens(*m));
        if (token_budget > 0 && out.total_tokens + tokens > token_budget)
        {
            // A summary is important context: it still goes in while under 90% of the budget.
            const bool summary = e.type == entry_type::compaction || e.type == entry_type::branch_summary;
            if (summary && static_cast<double>(out.total_tokens) < static_cast<double>(token_budget) * 0.9)
            {
                out.messages.insert(out.messages.begin(), std::move(m));
                out.total_tokens += tokens;
            }
            break;
        }
        out.messages.insert(out.messages.begin(), std::move(m));
        out.total_tokens += tokens;
    }
    return out;
}

summary_prompt branch_summary_prompt(
    std::span<const std::shared_ptr<const message>> messages,
    const std::optional<std::string>& custom_instructions,
    bool replace_instructions,
    std::int64_t context_window,
    std::int64_t model_max_tokens
)
{
    std::string instructions(branch_summary_instructions);
    if (custom_instructions && !custom_instructions->empty())
        instructions = replace_instructions ? *custom_instructions
                                            : instructions + "\n\nAdditional focus: " + *custom_instructions;
    summary_prompt p;
    p.system_prompt = summarization_system_prompt;
    p.prompt = "<conversation>\n" + serialize_conversation(convert_to_llm(messages, summary_framing::pi)) +
               "\n</conversation>\n\n" + instructions;
    p.max_output_tokens = summary_output_budget(p, context_window, model_max_tokens);
    return p;
}

branch_summary_text finish_branch_summary(
    std::string_view model_text, const file_operations& ops, compat_mode mode
)
{
    const bool pi = mode == compat_mode::pi;
    const auto lists =
        compute_file_lists(ops, pi ? std::nullopt : std::optional<file_list_bounds>(file_list_bounds{}));
    branch_summary_text out;
    out.summary = std::string(branch_summary_preamble) + std::string(model_text) +
                  (pi ? format_file_operations(lists) : format_file_operations(lists, file_list_bounds{}));
    out.details = file_lists_details(lists);
    return out;
}

}  // namespace agentctx::compaction
