// estimate_tokens: the chars/4 rule with Pi's per-role asymmetries (images, tool calls).
#include <agentctx/compaction/token_estimate.hpp>

#include <agentctx/compaction/json_text.hpp>

namespace agentctx::compaction {

namespace {

constexpr std::size_t image_chars = 4800;

std::size_t content_chars(const content& c, bool count_images)
{
    if (c.is_string)
        return utf16_length(c.text);
    std::size_t n = 0;
    for (const auto& b : c.blocks)
    {
        if (const auto* t = std::get_if<text_block>(&b))
            n += utf16_length(t->text);  // empty text is falsy in JS and adds 0 either way
        else if (count_images && std::holds_alternative<image_block>(b))
            n += image_chars;
    }
    return n;
}

}  // namespace

std::size_t estimate_chars(const message& m)
{
    switch (m.role)
    {
    case role::user:  // Pi 1.6 counts user images too (#4983)
    case role::custom:
    case role::tool_result:
        return content_chars(m.content, true);
    case role::assistant:
    {
        std::size_t n = 0;
        for (const auto& b : m.content.blocks)
        {
            if (const auto* t = std::get_if<text_block>(&b))
                n += utf16_length(t->text);
            else if (const auto* th = std::get_if<thinking_block>(&b))
                n += utf16_length(th->thinking);
            else if (const auto* call = std::get_if<tool_call_block>(&b))
                n += utf16_length(call->name) + utf16_length(stringify(call->arguments));
        }
        return n;
    }
    case role::bash_execution:
        return utf16_length(m.command) + utf16_length(m.output);
    case role::branch_summary:
    case role::compaction_summary:
        return utf16_length(m.summary);
    case role::system:
    {
        std::size_t n = content_chars(m.content, true);
        for (const auto& s : m.sections)
            if (s.value)
                n += utf16_length(*s.value);
        if (m.tools_added)
        {
            boost::json::array tools;
            for (const auto& t : *m.tools_added)
                tools.push_back(t);
            n += utf16_length(stringify(tools));
        }
        return n;
    }
    case role::other:
        return 0;
    }
    return 0;
}

std::size_t estimate_tokens(const message& m)
{
    return (estimate_chars(m) + 3) / 4;
}

}  // namespace agentctx::compaction
