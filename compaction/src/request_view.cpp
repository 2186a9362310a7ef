// fit_request: interaction groups, fixed costs first, newest groups while they fit.
#include <agentctx/compaction/request_view.hpp>

#include <agentctx/compaction/call_pairing.hpp>
#include <agentctx/compaction/unresolved_calls.hpp>

#include <algorithm>
#include <unordered_set>

namespace agentctx::compaction {

const char* to_string(fit_reason r) noexcept
{
    switch (r)
    {
    case fit_reason::fits:
        return "fits";
    case fit_reason::trimmed:
        return "trimmed";
    case fit_reason::single_group_overflow:
        return "single_group_overflow";
    case fit_reason::required_overflow:
        return "required_overflow";
    }
    return "fits";
}

namespace {

bool starts_group(role r)
{
    return r == role::user || r == role::bash_execution || r == role::custom || r == role::branch_summary;
}

}  // namespace

namespace {

// The summary of the latest compaction and its pinned entries, which follow it: fixed costs,
// never trimmed. Returns where the trimmable messages start.
std::size_t take_fixed(const std::vector<context_message>& msgs, const token_counter& counter, fit_result& r)
{
    if (msgs.empty() || msgs.front().msg->role != role::compaction_summary)
        return 0;
    r.messages.push_back(msgs.front());
    r.tokens.fixed = static_cast<std::int64_t>(counter.count(*msgs.front().msg));
    std::size_t first = 1;
    while (first < msgs.size() && msgs[first].entry_id == msgs.front().entry_id)
    {
        r.messages.push_back(msgs[first]);
        r.tokens.fixed += static_cast<std::int64_t>(counter.count(*msgs[first].msg));
        ++first;
    }
    return first;
}

// The interaction groups of msgs[first..]: each message's group and each group's first message.
struct groups
{
    std::vector<std::size_t> group_of;
    std::vector<std::size_t> starts;
};

// Group starts, then merge groups joined by a tool round (a result after its call's group).
groups interaction_groups(const std::vector<context_message>& msgs, std::size_t first)
{
    groups g{std::vector<std::size_t>(msgs.size(), 0), {}};
    const auto links = pair_tool_calls(std::span(msgs).subspan(first)).results;  // positions from `first`
    auto link = links.begin();
    for (std::size_t i = first; i < msgs.size(); ++i)
    {
        if (g.starts.empty() || starts_group(msgs[i].msg->role))
            g.starts.push_back(i);
        g.group_of[i] = g.starts.size() - 1;
        if (msgs[i].msg->role != role::tool_result)
            continue;
        const auto& r = *link++;
        if (r.kind == result_link_kind::no_call || g.group_of[first + r.reach_from] >= g.group_of[i])
            continue;
        // Merge every group from the call's through this one.
        const std::size_t into = g.group_of[first + r.reach_from];
        g.starts.resize(into + 1);
        for (std::size_t k = g.starts[into]; k <= i; ++k)
            g.group_of[k] = into;
    }
    return g;
}

// The budget's figures, and the messages' room once the fixed costs are taken.
void set_budget(const request_budget& budget, fit_result& r)
{
    r.tokens.max_tokens = budget.max_tokens;
    r.tokens.system = budget.system_tokens;
    r.tokens.reserved_output = budget.reserved_output;
    r.tokens.safety_margin = budget.safety_margin;
    r.tokens.available_for_messages = std::max<std::int64_t>(
        0,
        budget.max_tokens - budget.system_tokens - r.tokens.fixed - budget.reserved_output -
            budget.safety_margin
    );
}

// The first group that must stay: the newest, or the oldest required message's (then `true`).
std::pair<std::size_t, bool> must_keep_from(
    const std::vector<context_message>& msgs,
    std::size_t first,
    const std::vector<std::size_t>& group_of,
    std::size_t groups,
    const std::function<bool(const context_message&)>& required
)
{
    const std::size_t newest = groups == 0 ? 0 : groups - 1;
    if (!required)
        return {newest, false};
    for (std::size_t i = first; i < msgs.size(); ++i)
        if (required(msgs[i]))
            return group_of[i] < newest ? std::pair{group_of[i], true} : std::pair{newest, false};
    return {newest, false};
}

// The numbers of a view whose required part is over budget: required from message `held` on.
budget_shortfall shortfall_of(
    const std::vector<context_message>& msgs,
    std::size_t first,
    std::size_t held,
    std::int64_t fixed,
    const std::vector<std::int64_t>& cost,
    std::int64_t required
)
{
    budget_shortfall b;
    b.input_tokens = fixed;
    for (const auto c : cost)
        b.input_tokens += c;
    b.required_tokens = fixed + required;
    b.boundary_entry_id = msgs[first].entry_id;
    b.boundary_position = first;
    b.required_entry_id = msgs[held].entry_id;
    b.required_position = held;
    return b;
}

}  // namespace

fit_result fit_request(const session_context& ctx, const request_budget& budget, const token_counter& counter)
{
    fit_result r;
    // Unresolved calls get their unknown-outcome observation first: it is part of the request,
    // costs tokens, and stays in its call's group.
    const auto msgs = with_unknown_outcomes(ctx.messages);
    const std::size_t first = take_fixed(msgs, counter, r);
    const auto [group_of, starts] = interaction_groups(msgs, first);
    std::vector<std::int64_t> cost(starts.size(), 0);
    for (std::size_t i = first; i < msgs.size(); ++i)
        cost[group_of[i]] += static_cast<std::int64_t>(counter.count(*msgs[i].msg));

    set_budget(budget, r);
    const auto [must_from, required_held] =
        must_keep_from(msgs, first, group_of, starts.size(), budget.required);
    std::size_t keep_from = must_from;
    std::int64_t used = 0;
    for (std::size_t g = must_from; g < starts.size(); ++g)
        used += cost[g];
    if (!starts.empty() && used > r.tokens.available_for_messages)
    {
        r.reason = required_held ? fit_reason::required_overflow : fit_reason::single_group_overflow;
        r.shortfall = shortfall_of(msgs, first, starts[must_from], r.tokens.fixed, cost, used);
    }
    else
    {
        while (keep_from > 0 && used + cost[keep_from - 1] <= r.tokens.available_for_messages)
            used += cost[--keep_from];
        r.reason = keep_from == 0 ? fit_reason::fits : fit_reason::trimmed;
    }
    r.tokens.messages = used;
    r.tokens.total =
        r.tokens.system + r.tokens.fixed + used + r.tokens.reserved_output + r.tokens.safety_margin;
    std::unordered_set<std::string> listed;
    if (keep_from < starts.size())
        for (std::size_t i = starts[keep_from]; i < msgs.size(); ++i)
        {
            r.messages.push_back(msgs[i]);
            // An observation carries its call's entry id: list each entry once.
            if (listed.insert(msgs[i].entry_id).second)
                r.kept_entry_ids.push_back(msgs[i].entry_id);
        }
    return r;
}

}  // namespace agentctx::compaction
