// find_unpairable: the door's check of tool calls and results against the context they join.
#include "call_check.hpp"

#include <agentctx/compaction/call_pairing.hpp>

#include <vector>

namespace agentctx::server {

namespace {

// The index of `call` among the tool calls of `m`.
std::size_t call_index(const compaction::message& m, const compaction::tool_call_block* call)
{
    std::size_t k = 0;
    for (const auto& b : m.content.blocks)
        if (const auto* c = std::get_if<compaction::tool_call_block>(&b))
        {
            if (c == call)
                return k;
            ++k;
        }
    return unpairable::npos;
}

}  // namespace

std::optional<unpairable> find_unpairable(
    std::span<const compaction::context_message> context, std::span<const compaction::message> incoming
)
{
    std::vector<compaction::pairing_input> in;
    in.reserve(context.size() + incoming.size());
    for (std::size_t i = 0; i < context.size(); ++i)
        in.push_back({context[i].msg.get(), i});
    const std::size_t base = context.size();
    for (std::size_t i = 0; i < incoming.size(); ++i)
        in.push_back({&incoming[i], base + i});
    const auto p = compaction::pair_tool_calls(in);
    std::optional<unpairable> first;
    const auto note = [&first](unpairable u) {
        if (!first || u.message < first->message || (u.message == first->message && u.call < first->call))
            first = std::move(u);
    };
    for (const auto d : p.repeated_in_message)
    {
        const auto& decl = p.declarations[d];
        if (decl.position < base)
            continue;
        const auto& m = incoming[decl.position - base];
        note(
            {decl.position - base,
             call_index(m, decl.call),
             "the tool-call id '" + decl.call->id + "' is used twice in this message"}
        );
    }
    for (const auto& r : p.results)
    {
        if (r.position < base)
            continue;
        const auto& id = incoming[r.position - base].tool_call_id;
        if (r.kind == compaction::result_link_kind::no_call)
            note({r.position - base, unpairable::npos, "no tool call '" + id + "' for this result to answer"}
            );
        else if (r.kind == compaction::result_link_kind::repeat)
            note({r.position - base, unpairable::npos, "the tool call '" + id + "' has a result already"});
    }
    return first;
}

std::optional<refused_field> unpairable_entry(
    const runtime::snapshot& context, const boost::json::object& fields
)
{
    const auto* type = fields.if_contains("type");
    const auto* raw = fields.if_contains("message");
    if (!type || *type != "message" || !raw || !raw->is_object())
        return std::nullopt;
    compaction::diagnostics d;
    auto m = compaction::decode_message(raw->get_object(), "message", d);
    if (!m || (m->role != compaction::role::tool_result && m->role != compaction::role::assistant))
        return std::nullopt;
    const auto messages = context.messages.to_vector();
    const auto u = find_unpairable(messages, std::span<const compaction::message>(&*m, 1));
    if (!u)
        return std::nullopt;
    std::string field = "message.toolCallId";
    if (u->call != unpairable::npos)
    {
        // The block index of the call-th tool call.
        std::size_t calls = 0;
        for (std::size_t k = 0; k < m->content.blocks.size(); ++k)
            if (std::holds_alternative<compaction::tool_call_block>(m->content.blocks[k]) &&
                calls++ == u->call)
            {
                field = "message.content[" + std::to_string(k) + "].id";
                break;
            }
    }
    return refused_field{field, field + ": " + u->why};
}

}  // namespace agentctx::server
