// Reasoning bound to its prefix: the cost of a prefix break and the providers' reports of withheld reasoning.
#include "reasoning_binding.hpp"

#include <agentctx/compaction/json_text.hpp>

namespace agentctx::runtime::detail {

using namespace compaction;

bool binds_reasoning(std::string_view provider) noexcept
{
    return provider == "anthropic" || provider == "openai";
}

namespace {

// The log position of the path's latest compaction or context edit (nullopt: none).
std::optional<std::size_t> latest_break(const session_log& log)
{
    const auto path = log.active_path();
    for (std::size_t k = path.size(); k-- > 0;)
        if (const auto t = log.type_of(path[k]); t == entry_type::compaction || t == entry_type::context_edit)
            return path[k];
    return std::nullopt;
}

std::int64_t thinking_chars(const message& m, std::int64_t& blocks)
{
    std::int64_t chars = 0;
    for (const auto& b : m.content.blocks)
        if (const auto* t = std::get_if<thinking_block>(&b))
        {
            ++blocks;
            chars += static_cast<std::int64_t>(utf16_length(t->thinking));
        }
    return chars;
}

}  // namespace

reasoning_loss reasoning_lost(
    const session_log& log, std::span<const context_message> context, std::size_t from
)
{
    reasoning_loss loss;
    const auto brk = latest_break(log);
    for (std::size_t i = from + 1; i < context.size(); ++i)
    {
        const auto& m = *context[i].msg;
        if (m.role != role::assistant)
            continue;
        const auto at = log.find(context[i].entry_id);
        if (!at || (brk && *at < *brk))
            continue;
        const auto chars = thinking_chars(m, loss.blocks);
        loss.tokens += (chars + 3) / 4;
    }
    return loss;
}

std::optional<reasoning_transformed_event> transformed_event(const entry& e)
{
    if (e.type != entry_type::message || !e.message || e.message->role != role::assistant)
        return std::nullopt;
    const auto* m = e.raw.if_contains("message");
    const auto* u = m && m->is_object() ? m->get_object().if_contains("usage") : nullptr;
    const auto* t = u && u->is_object() ? u->get_object().if_contains("inputTransformations") : nullptr;
    if (!t || !t->is_object())
        return std::nullopt;
    reasoning_transformed_event ev{e.id, 0, 0, {}};
    const auto& o = t->get_object();
    if (const auto* r = o.if_contains("removed"); r && r->is_int64())
        ev.removed = r->get_int64();
    if (const auto* a = o.if_contains("allowed"); a && a->is_int64())
        ev.allowed = a->get_int64();
    if (const auto* items = o.if_contains("items"); items && items->is_array())
        for (const auto& i : items->get_array())
            if (const auto* reason = i.is_object() ? i.get_object().if_contains("reason") : nullptr;
                reason && reason->is_string())
                ev.reasons.emplace_back(reason->get_string());
    return ev;
}

}  // namespace agentctx::runtime::detail
