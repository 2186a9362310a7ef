// `agentctx context SESSION.jsonl [--json]`: the messages the next model request would carry.
#include "cli_common.hpp"
#include "commands.hpp"

#include <agentctx/compaction/json_text.hpp>
#include <agentctx/compaction/projection.hpp>
#include <agentctx/compaction/token_accounting.hpp>
#include <agentctx/compaction/token_estimate.hpp>

#include <cstdio>

namespace agentctx::cli {

namespace {

// A one-line preview of a message for people.
std::string preview(const compaction::message& m)
{
    using compaction::role;
    std::string text;
    switch (m.role)
    {
    case role::bash_execution:
        text = "$ " + m.command;
        break;
    case role::branch_summary:
    case role::compaction_summary:
        text = m.summary;
        break;
    case role::assistant:
        for (const auto& b : m.content.blocks)
        {
            if (const auto* t = std::get_if<compaction::text_block>(&b))
                text += t->text + " ";
            else if (const auto* c = std::get_if<compaction::tool_call_block>(&b))
                text += c->name + "(" + compaction::stringify(c->arguments) + ") ";
        }
        break;
    default:
        text = compaction::content_text(m.content);
        break;
    }
    for (auto& c : text)
        if (c == '\n' || c == '\t' || c == '\r')
            c = ' ';
    if (compaction::utf16_length(text) > 72)
        text = compaction::utf16_prefix(text, 71) + "…";
    return text;
}

}  // namespace

namespace {

const char* const context_usage =
    "usage: agentctx context SESSION.jsonl [--json]\n\n"
    "Prints the context the next model request would carry: the projected messages\n"
    "(latest compaction summary, kept entries, later entries), each with the entry it\n"
    "came from and its estimated tokens (chars/4).\n"
    "System messages (Pi 1.6) show with role system; the replayed prompt sections and\n"
    "tool set the next request carries are printed after the messages.\n"
    "--json prints {\"leafId\", \"thinkingLevel\", \"model\", \"messages\": [{\"role\", \"entryId\",\n"
    "\"tokens\", \"edited\"?}], \"system\": <replayed system message or null>,\n"
    "\"estimatedTokens\" (Pi 1.6's projected estimate)}.\n";

// The `--json` answer.
boost::json::object context_json(const compaction::session_context& ctx)
{
    boost::json::object out;
    out["leafId"] = ctx.leaf_id ? boost::json::value(*ctx.leaf_id) : boost::json::value(nullptr);
    out["thinkingLevel"] = ctx.thinking_level;
    if (ctx.model)
        out["model"] =
            boost::json::object{{"provider", ctx.model->provider}, {"modelId", ctx.model->model_id}};
    else
        out["model"] = nullptr;
    auto messages = messages_json(ctx.messages);
    std::size_t k = 0;
    for (const auto& p : ctx.entries)
        for (std::size_t j = 0; j < p.messages.size(); ++j, ++k)
            if (p.edit)
                messages[k].as_object()["edited"] = true;
    out["messages"] = std::move(messages);
    out["system"] = ctx.system ? boost::json::value(compaction::system_message_json(*ctx.system))
                               : boost::json::value(nullptr);
    out["estimatedTokens"] = compaction::estimate_projected_context_tokens(ctx).tokens;
    return out;
}

// The replayed system prompt's line: its sections and tools.
void print_system(const compaction::message& system)
{
    std::string sections, tools;
    for (const auto& sec : system.sections)
        sections += (sections.empty() ? "" : ", ") + sec.name;
    if (system.tools_added)
        for (const auto& t : *system.tools_added)
            tools += (tools.empty() ? "" : ", ") + std::string(t.at("name").get_string());
    std::printf(
        "system prompt: %zu sections (%s), %zu tools (%s), ~%zu tokens\n",
        system.sections.size(),
        sections.c_str(),
        system.tools_added ? system.tools_added->size() : 0,
        tools.c_str(),
        compaction::estimate_tokens(system)
    );
}

// The text answer: a table of the messages, then the system prompt and the load's notes.
void print_context(const opened_context& s)
{
    const auto& ctx = s.context;
    std::size_t total = 0;
    std::printf(
        "session %s (v%d)  entries %zu  leaf %s\n",
        s.log.header().id.c_str(),
        s.log.source_version(),
        s.log.size(),
        ctx.leaf_id ? ctx.leaf_id->c_str() : "-"
    );
    std::printf(
        "model %s  thinking %s\n\n",
        ctx.model ? (ctx.model->provider + "/" + ctx.model->model_id).c_str() : "-",
        ctx.thinking_level.c_str()
    );
    std::printf("  #  %-17s %-8s %7s  %s\n", "role", "entry", "tokens", "preview");
    for (std::size_t i = 0; i < ctx.messages.size(); ++i)
    {
        const auto& m = ctx.messages[i];
        const std::size_t t = compaction::estimate_tokens(*m.msg);
        total += t;
        std::printf(
            "%3zu  %-17s %-8s %7zu  %s\n",
            i,
            std::string(compaction::to_string(m.msg->role)).c_str(),
            m.entry_id.c_str(),
            t,
            preview(*m.msg).c_str()
        );
    }
    std::printf("\n%zu messages, ~%zu tokens estimated (chars/4)\n", ctx.messages.size(), total);
    if (ctx.system)
        print_system(*ctx.system);
    for (const auto& n : s.report.notes)
        std::printf("note: %s\n", n.message.c_str());
    if (s.report.torn)
        std::printf(
            "note: line %zu is a torn (incomplete) final line; the next append repairs it\n",
            s.report.torn->line
        );
}

}  // namespace

int cmd_context(int argc, char** argv)
{
    int code = exit_ok;
    auto a = command_args(argc, argv, "context", context_usage, {}, {"json"}, code);
    if (!a)
        return code;
    const bool json = a->has("json");
    auto s = open_session_context(a->positional[0], json, code);
    if (!s)
        return code;
    if (json)
        print_json(context_json(s->context));
    else
        print_context(*s);
    exit_read_command(exit_ok);
}

}  // namespace agentctx::cli
