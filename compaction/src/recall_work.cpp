// The recall gate's artifact and open-work probes: files modified, failed commands, named
// identifiers, the unfinished step and the calls nobody answered.
#include <agentctx/compaction/recall.hpp>

#include <agentctx/compaction/file_ops.hpp>
#include <agentctx/compaction/unresolved_calls.hpp>

#include "recall_text.hpp"

#include <algorithm>
#include <map>

namespace agentctx::compaction::detail {

namespace {

recall_probe artifact(std::string text, bool named)
{
    recall_probe p;
    p.kind = probe_kind::artifact;
    if (named)
        p.names = {text};
    p.text = std::move(text);
    return p;
}

// Modified paths, the most recently touched first.
std::vector<std::string> modified_paths(std::span<const context_message> span)
{
    file_operations ops;
    for (const auto& cm : span)
        if (cm.msg && cm.msg->role == role::assistant)
            extract_file_ops(*cm.msg, ops);
    std::vector<std::string> out(ops.written.begin(), ops.written.end());
    out.insert(out.end(), ops.edited.begin(), ops.edited.end());
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    std::stable_sort(out.begin(), out.end(), [&](const std::string& a, const std::string& b) {
        return ops.last_touched[a] > ops.last_touched[b];
    });
    return out;
}

// Commands whose last run failed (a `bash` call answered with an error, a failed bashExecution),
// the most recent first.
std::vector<std::string> failed_commands(std::span<const context_message> span)
{
    std::map<std::string, std::string> call_command;  // call id -> command
    std::vector<std::pair<std::string, bool>> runs;   // command, failed; by last run
    const auto ran = [&](const std::string& cmd, bool failed) {
        std::erase_if(runs, [&](const auto& r) { return r.first == cmd; });
        runs.emplace_back(cmd, failed);
    };
    for (const auto& cm : span)
    {
        if (!cm.msg)
            continue;
        const auto& m = *cm.msg;
        if (m.role == role::assistant)
            for (const auto& b : m.content.blocks)
                if (const auto* c = std::get_if<tool_call_block>(&b); c && c->name == "bash")
                    if (const auto* v = c->arguments.if_contains("command"); v && v->is_string())
                        call_command[c->id] = std::string(v->get_string());
        if (m.role == role::tool_result)
            if (const auto it = call_command.find(m.tool_call_id); it != call_command.end())
                ran(it->second, m.is_error);
        if (m.role == role::bash_execution && !m.command.empty())
            ran(m.command, m.cancelled || (m.exit_code && *m.exit_code != 0));
    }
    std::vector<std::string> out;
    for (auto it = runs.rbegin(); it != runs.rend(); ++it)
        if (it->second)
            out.push_back(it->first);
    return out;
}

std::string call_argument(const tool_call_block& c)
{
    for (const char* key : {"command", "path", "file_path", "url", "query"})
        if (const auto* v = c.arguments.if_contains(key); v && v->is_string())
            return std::string(v->get_string());
    return {};
}

const tool_call_block* find_call(std::span<const context_message> span, const unresolved_call& u)
{
    for (const auto& cm : span)
        if (cm.msg && cm.entry_id == u.entry_id)
            for (const auto& b : cm.msg->content.blocks)
                if (const auto* c = std::get_if<tool_call_block>(&b); c && c->id == u.call_id)
                    return c;
    return nullptr;
}

bool ends_the_turn(const message& m)
{
    if (m.role != role::assistant || m.stop_reason != stop_reason::stop)
        return false;
    const bool calls =
        std::any_of(m.content.blocks.begin(), m.content.blocks.end(), [](const content_block& b) {
            return std::holds_alternative<tool_call_block>(b);
        });
    return !calls && !content_text(m.content).empty();
}

}  // namespace

std::vector<recall_probe> artifact_probes(std::span<const context_message> span, std::size_t max)
{
    std::vector<recall_probe> out;
    const std::size_t share = std::max<std::size_t>(1, max / 3);
    const auto paths = modified_paths(span);
    for (std::size_t i = 0; i < paths.size() && out.size() < std::min(share, max); ++i)
        out.push_back(artifact(paths[i], true));
    const auto commands = failed_commands(span);
    for (std::size_t i = 0; i < commands.size() && i < share && out.size() < max; ++i)
        out.push_back(artifact(commands[i], false));
    for (const auto& cm : span)
    {
        if (!cm.msg || cm.msg->role != role::user || !cm.msg->peer.empty())
            continue;
        for (auto& n : names_in(content_text(cm.msg->content)))
        {
            const bool known =
                std::any_of(out.begin(), out.end(), [&](const recall_probe& p) { return p.text == n; });
            if (!known && out.size() < max)
                out.push_back(artifact(std::move(n), true));
        }
    }
    return out;
}

std::vector<recall_probe> open_work_probes(std::span<const context_message> span, std::size_t max)
{
    std::vector<recall_probe> out;
    // The last user instruction, when nothing after it in the span ended the turn.
    std::optional<std::size_t> last_user;
    for (std::size_t i = 0; i < span.size(); ++i)
        if (span[i].msg && span[i].msg->role == role::user && span[i].msg->peer.empty())
            last_user = i;
    if (last_user && max > 0)
    {
        const bool ended = std::any_of(
            span.begin() + static_cast<std::ptrdiff_t>(*last_user) + 1,
            span.end(),
            [](const context_message& cm) { return cm.msg && ends_the_turn(*cm.msg); }
        );
        const auto sentences = sentences_of(content_text(span[*last_user].msg->content));
        if (!ended && !sentences.empty())
        {
            recall_probe p;
            p.kind = probe_kind::open_work;
            p.text = sentences.front().text;
            p.entry_id = span[*last_user].entry_id;
            out.push_back(std::move(p));
        }
    }
    for (const auto& u : find_unresolved_calls(span))
    {
        if (out.size() >= max)
            break;
        const auto* c = find_call(span, u);
        const auto arg = c ? call_argument(*c) : std::string{};
        recall_probe p;
        p.kind = probe_kind::open_work;
        p.text = u.tool_name + (arg.empty() ? "" : " " + arg);
        p.entry_id = u.entry_id;
        out.push_back(std::move(p));
    }
    return out;
}

}  // namespace agentctx::compaction::detail
