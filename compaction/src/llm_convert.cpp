// convert_to_llm and its exact prefix/suffix texts.
#include <agentctx/compaction/llm_convert.hpp>

#include <agentctx/compaction/json_text.hpp>

#include <cctype>

namespace agentctx::compaction {

std::string bash_execution_to_text(const message& m)
{
    std::string t = "Ran `" + m.command + "`\n";
    if (!m.output.empty())
        t += "```\n" + m.output + "\n```";
    else
        t += "(no output)";
    if (m.cancelled)
        t += "\n\n(command cancelled)";
    else if (m.exit_code && *m.exit_code != 0)
    {
        t += "\n\nCommand exited with code ";
        format_number_to(t, *m.exit_code);
    }
    if (m.truncated && m.full_output_path)
        t += "\n\n[Output truncated. Full output: " + *m.full_output_path + "]";
    return t;
}

namespace {

std::shared_ptr<const message> user_text(const message& from, std::string text)
{
    auto u = std::make_shared<message>();
    u->role = role::user;
    u->role_name = "user";
    u->timestamp = from.timestamp;
    u->content.blocks.push_back(text_block{std::move(text)});
    return u;
}

bool ascii_iequal(std::string_view a, std::string_view b)
{
    if (a.size() != b.size())
        return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
            return false;
    return true;
}

// Whether a framing tag (`<summary>`, `</summary>`, `< / SUMMARY ...>`) opens at `s[at]` ('<').
bool framing_tag_at(std::string_view s, std::size_t at)
{
    std::size_t p = at + 1;
    const auto skip_space = [&] {
        while (p < s.size() && std::isspace(static_cast<unsigned char>(s[p])))
            ++p;
    };
    skip_space();
    if (p < s.size() && s[p] == '/')
        ++p;
    skip_space();
    constexpr std::string_view name = "summary";
    if (p + name.size() > s.size() || !ascii_iequal(s.substr(p, name.size()), name))
        return false;
    p += name.size();
    return p == s.size() || !(std::isalnum(static_cast<unsigned char>(s[p])) || s[p] == '-' || s[p] == '_');
}

}  // namespace

std::string neutralize_framing_tags(std::string_view summary)
{
    std::string out;
    out.reserve(summary.size());
    for (std::size_t i = 0; i < summary.size(); ++i)
    {
        if (summary[i] == '<' && framing_tag_at(summary, i))
            out += "&lt;";
        else
            out += summary[i];
    }
    return out;
}

std::string framed_summary(std::string_view summary, bool branch, summary_framing framing)
{
    if (framing == summary_framing::pi)
        return branch ? std::string(branch_summary_prefix) + std::string(summary) +
                            std::string(branch_summary_suffix)
                      : std::string(compaction_summary_prefix) + std::string(summary) +
                            std::string(compaction_summary_suffix);
    // The summary cannot close its own frame: a `</summary>` inside it is shown, not obeyed.
    return std::string(branch ? reference_branch_prefix : reference_compaction_prefix) +
           std::string(reference_history_notice) + neutralize_framing_tags(summary) +
           std::string(reference_history_suffix);
}

std::vector<std::shared_ptr<const message>> convert_to_llm(
    std::span<const std::shared_ptr<const message>> messages, summary_framing framing
)
{
    std::vector<std::shared_ptr<const message>> out;
    out.reserve(messages.size());
    for (const auto& m : messages)
    {
        switch (m->role)
        {
        case role::user:
        case role::assistant:
        case role::tool_result:
        case role::system:
            out.push_back(m);
            break;  // Pi 1.6 passes system messages through
        case role::bash_execution:
            if (!m->exclude_from_context)
                out.push_back(user_text(*m, bash_execution_to_text(*m)));
            break;
        case role::custom:
        {
            auto u = std::make_shared<message>();
            u->role = role::user;
            u->role_name = "user";
            u->timestamp = m->timestamp;
            u->peer = m->peer;
            u->content = m->content;
            if (u->content.is_string)
            {
                u->content.blocks.push_back(text_block{std::move(u->content.text)});
                u->content.text.clear();
                u->content.is_string = false;
            }
            out.push_back(std::move(u));
            break;
        }
        case role::branch_summary:
            out.push_back(user_text(*m, framed_summary(m->summary, true, framing)));
            break;
        case role::compaction_summary:
            out.push_back(user_text(*m, framed_summary(m->summary, false, framing)));
            break;
        case role::other:
            break;
        }
    }
    return out;
}

}  // namespace agentctx::compaction
