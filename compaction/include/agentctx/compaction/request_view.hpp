// A budgeted request view: the newest whole interaction groups that fit.
#pragma once

#include <agentctx/compaction/projection.hpp>
#include <agentctx/compaction/token_accounting.hpp>

#include <agentctx/compaction/required.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace agentctx::compaction {

struct request_budget
{
    std::int64_t max_tokens = 0;
    std::int64_t reserved_output = 0;
    std::int64_t safety_margin = 0;
    std::int64_t system_tokens = 0;  ///< the host's system prompt (and tool definitions)
    /// Messages the view must keep (the host's required entries): the group of the oldest one and
    /// every newer group stay, whatever the budget. Empty: only the newest group must stay.
    std::function<bool(const context_message&)> required;
};

enum class fit_reason
{
    fits,                   ///< every group was kept
    trimmed,                ///< older groups were left out
    single_group_overflow,  ///< the newest group alone is over budget; kept whole anyway
    required_overflow,      ///< the groups from the oldest required message on are over budget; kept anyway
};

const char* to_string(fit_reason r) noexcept;

struct fit_tokens
{
    std::int64_t max_tokens = 0;
    std::int64_t system = 0;
    std::int64_t fixed = 0;  ///< the compaction summary at the head of the context
    std::int64_t messages = 0;
    std::int64_t reserved_output = 0;
    std::int64_t safety_margin = 0;
    std::int64_t available_for_messages = 0;
    std::int64_t total = 0;
};

struct fit_result
{
    std::vector<context_message> messages;    ///< fixed messages, then the kept groups in order
    std::vector<std::string> kept_entry_ids;  ///< entries of the kept groups (not the fixed summary)
    fit_reason reason = fit_reason::fits;
    fit_tokens tokens;
    /// Set when what must stay (the newest group, or everything from the oldest required message
    /// on) is over `available_for_messages`: the numbers, never content. `input_tokens` is the
    /// whole context (summary and every group), `required_tokens` the summary and what must stay;
    /// the boundary is the first trimmable message, the required position where what must stay
    /// begins (positions in the context).
    std::optional<budget_shortfall> shortfall;
};

/// Groups start at each user-like message (user, bashExecution, custom, branchSummary); groups
/// that share a tool round are merged, so no group split orphans a tool result. Selection walks
/// from the newest group back and stops at the first that does not fit. Every unresolved tool call
/// (unresolved_calls.hpp) is answered with its unknown-outcome observation, so each call of the
/// view has a result.
fit_result fit_request(
    const session_context& ctx,
    const request_budget& budget,
    const token_counter& counter = default_token_counter()
);

}  // namespace agentctx::compaction
