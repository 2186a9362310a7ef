// pair_tool_calls: batch-scoped linkage of tool results to the calls they answer.
#include <agentctx/compaction/call_pairing.hpp>

#include <string_view>
#include <unordered_map>

namespace agentctx::compaction {

namespace {

using id_index = std::unordered_map<std::string_view, std::vector<std::size_t>>;

// Records an assistant's calls; the assistant opens a new batch.
void declare(tool_call_pairing& p, id_index& all, id_index& batch, const message& m, std::size_t position)
{
    batch.clear();
    for (const auto& b : m.content.blocks)
    {
        const auto* c = std::get_if<tool_call_block>(&b);
        if (!c)
            continue;
        const std::size_t d = p.declarations.size();
        p.declarations.push_back({position, c, 0});
        all[c->id].push_back(d);
        auto& same = batch[c->id];
        same.push_back(d);
        if (same.size() > 1)
            p.repeated_in_message.push_back(d);
    }
}

// The declarations a result of `id` may answer: its batch's, else the unanswered earlier ones,
// else (a repeated answer) the newest earlier one.
std::vector<std::size_t> candidates_for(
    const tool_call_pairing& p, const id_index& all, const id_index& batch, std::string_view id, bool& late
)
{
    late = false;
    if (const auto it = batch.find(id); it != batch.end())
        return it->second;
    const auto it = all.find(id);
    if (it == all.end())
        return {};
    late = true;
    std::vector<std::size_t> open;
    for (const auto d : it->second)
        if (p.declarations[d].answers == 0)
            open.push_back(d);
    if (open.empty())
        open.push_back(it->second.back());
    return open;
}

result_link link_result(
    tool_call_pairing& p,
    const id_index& all,
    const id_index& batch,
    std::string_view id,
    std::size_t position
)
{
    result_link r{position, result_link_kind::no_call};
    const auto candidates = candidates_for(p, all, batch, id, r.late);
    if (candidates.empty())
        return r;
    std::size_t chosen = candidates.front();
    for (const auto d : candidates)
        if (p.declarations[d].answers == 0)
        {
            chosen = d;
            break;
        }
    auto& decl = p.declarations[chosen];
    r.kind = candidates.size() > 1 ? result_link_kind::ambiguous
             : decl.answers == 0   ? result_link_kind::paired
                                   : result_link_kind::repeat;
    r.declaration = chosen;
    r.answer = ++decl.answers;
    r.reach_from = p.declarations[candidates.front()].position;
    return r;
}

}  // namespace

tool_call_pairing pair_tool_calls(std::span<const pairing_input> messages)
{
    tool_call_pairing p;
    id_index all;    // every declaration of an id, oldest first
    id_index batch;  // the current batch's declarations
    for (const auto& in : messages)
    {
        if (in.msg->role == role::assistant)
            declare(p, all, batch, *in.msg, in.position);
        else if (in.msg->role == role::tool_result)
            p.results.push_back(link_result(p, all, batch, in.msg->tool_call_id, in.position));
    }
    return p;
}

tool_call_pairing pair_tool_calls(std::span<const context_message> messages)
{
    std::vector<pairing_input> flat;
    flat.reserve(messages.size());
    for (std::size_t i = 0; i < messages.size(); ++i)
        flat.push_back({messages[i].msg.get(), i});
    return pair_tool_calls(flat);
}

}  // namespace agentctx::compaction
