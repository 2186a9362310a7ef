// serialize_conversation: Pi's exact labels, part order, tool-call formatting and result truncation.
#include <agentctx/compaction/serialize.hpp>

#include <agentctx/compaction/json_text.hpp>

#include <vector>

namespace agentctx::compaction {

std::string truncate_for_summary(std::string_view t, std::size_t limit)
{
    const std::size_t len = utf16_length(t);
    if (len <= limit)
        return std::string(t);
    // The head never splits a surrogate pair (it may be limit - 1 units); the count is not adjusted.
    return utf16_slice_head(t, limit) + "\n\n[... " + std::to_string(len - limit) +
           " more characters truncated]";
}

std::string peer_label(std::string_view name)
{
    return std::string(peer_label_prefix) + std::string(name) + std::string(peer_label_suffix);
}

namespace {

std::string join(const std::vector<std::string>& parts, std::string_view sep)
{
    std::string out;
    for (std::size_t i = 0; i < parts.size(); ++i)
    {
        if (i)
            out += sep;
        out += parts[i];
    }
    return out;
}

}  // namespace

std::string serialize_conversation(std::span<const std::shared_ptr<const message>> llm_messages)
{
    std::vector<std::string> parts;
    for (const auto& mp : llm_messages)
    {
        const message& m = *mp;
        if (m.role == role::user)
        {
            const std::string text = content_text(m.content);
            if (!text.empty())
                parts.push_back((m.peer.empty() ? std::string("[User]") : peer_label(m.peer)) + ": " + text);
        }
        else if (m.role == role::assistant)
        {
            // Thinking is omitted (Pi 1.2+); the text part exists iff there is a text block.
            std::vector<std::string> texts, calls;
            for (const auto& b : m.content.blocks)
            {
                if (const auto* t = std::get_if<text_block>(&b))
                    texts.push_back(t->text);
                else if (const auto* c = std::get_if<tool_call_block>(&b))
                {
                    std::vector<std::string> args;
                    // Object.entries order: integer-like keys first, at every depth.
                    for (const auto key : js_key_order(c->arguments))
                        args.push_back(std::string(key) + "=" + js_stringify(c->arguments.at(key)));
                    calls.push_back(c->name + "(" + join(args, ", ") + ")");
                }
            }
            if (!texts.empty())
                parts.push_back("[Assistant]: " + join(texts, "\n"));
            if (!calls.empty())
                parts.push_back("[Assistant tool calls]: " + join(calls, "; "));
        }
        else if (m.role == role::tool_result)
        {
            const std::string text = content_text(m.content);
            if (!text.empty())
                parts.push_back("[Tool result]: " + truncate_for_summary(text));
        }
        // Any other role (system in particular) contributes nothing.
    }
    return join(parts, "\n\n");
}

}  // namespace agentctx::compaction
