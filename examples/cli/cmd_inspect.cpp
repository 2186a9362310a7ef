// `agentctx inspect SESSION.jsonl`: header, entry counts, branches, compactions, usage against the window.
#include "cli_common.hpp"
#include "commands.hpp"

#include <agentctx/compaction/token_accounting.hpp>

#include <cstdio>
#include <map>

namespace agentctx::cli {

namespace {

const char* const inspect_usage =
    "usage: agentctx inspect SESSION.jsonl [--context-window N] [--reserve N] [--json]\n\n"
                   "Header, entry counts by type, branches, compactions, the active leaf, and the context's\n"
                   "usage against the model window (provider-reported usage; \"unknown\" right after a\n"
                   "compaction until the model reports fresh usage), and whether a compaction would trigger.\n";

}  // namespace

int cmd_inspect(int argc, char** argv)
{
    int code = exit_ok;
    auto a = command_args(argc, argv, "inspect", inspect_usage, {"context-window", "reserve"}, {"json"}, code);
    if (!a)
        return code;
    const bool json = a->has("json");
    bool ok = true;
    const auto window = count_option(*a, "context-window", 200000, ok);
    const auto reserve = count_option(*a, "reserve", 16384, ok);
    if (!ok)
        return exit_usage;
    auto s = open_session(a->positional[0], json, code);
    if (!s)
        return code;
    const auto& log = s->log;
    std::map<std::string, std::size_t> by_type;
    std::vector<bool> has_child(log.size(), false);
    std::size_t compactions = 0;
    for (std::size_t i = 0; i < log.size(); ++i)
    {
        const auto& m = log.meta(i);
        ++by_type[std::string(compaction::to_string(m.type))];
        compactions += m.type == compaction::entry_type::compaction;
        if (m.parent >= 0)
            has_child[static_cast<std::size_t>(m.parent)] = true;
    }
    const auto leaves = static_cast<std::size_t>(std::count(has_child.begin(), has_child.end(), false));
    compaction::diagnostics diag;
    auto ctx = compaction::build_session_context(log, diag);
    if (!ctx)
    {
        print_error(json, ctx.error().message(), diag.message);
        return exit_bad_session;
    }
    const auto usage = compaction::context_usage(*ctx, *window);
    compaction::compaction_settings settings;
    settings.reserve_tokens = *reserve;
    const auto est = compaction::estimate_context_tokens(ctx->messages, compaction::default_token_counter(),
                                                         compaction::latest_compaction_time(*ctx));
    const bool would = compaction::should_compact(est.tokens, *window, settings);
    if (json)
    {
        boost::json::object counts;
        for (const auto& [t, n] : by_type)
            counts[t] = n;
        boost::json::object out{
            {"sessionId", log.header().id},
            {"version", log.source_version()},
            {"cwd", log.header().cwd ? boost::json::value(*log.header().cwd) : boost::json::value(nullptr)},
            {"entries", log.size()},
            {"entriesByType", counts},
            {"branches", leaves},
            {"compactions", compactions},
            {"leafId", ctx->leaf_id ? boost::json::value(*ctx->leaf_id) : boost::json::value(nullptr)},
            {"contextMessages", ctx->messages.size()},
            {"contextWindow", *window},
            {"usageTokens", usage && usage->tokens ? boost::json::value(*usage->tokens) : boost::json::value(nullptr)},
            {"usagePercent", usage && usage->percent ? boost::json::value(*usage->percent) : boost::json::value(nullptr)},
            {"estimatedTokens", est.tokens},
            {"wouldCompact", would},
        };
        print_json(out);
        return exit_ok;
    }
    std::printf("session   %s (format v%d)%s\n", log.header().id.c_str(), log.source_version(),
                log.source_version() < 3 ? "  - run `agentctx migrate` before writing to it" : "");
    if (log.header().cwd)
        std::printf("cwd       %s\n", log.header().cwd->c_str());
    std::printf("entries   %zu:", log.size());
    for (const auto& [t, n] : by_type)
        std::printf(" %s %zu", t.c_str(), n);
    std::printf("\nbranches  %zu leaves; compactions %zu; active leaf %s\n", leaves, compactions,
                ctx->leaf_id ? ctx->leaf_id->c_str() : "-");
    if (usage && usage->tokens)
        std::printf("usage     %s %lld / %lld tokens (%.1f%%)\n", bar(*usage->percent / 100).c_str(),
                    static_cast<long long>(*usage->tokens), static_cast<long long>(*window), *usage->percent);
    else
        std::printf("usage     unknown (no model response since the latest compaction); estimate %lld tokens\n",
                    static_cast<long long>(est.tokens));
    std::printf("compact   %s (threshold %lld)\n", would ? "yes - over the threshold" : "no - under the threshold",
                static_cast<long long>(*window - *reserve));
    for (const auto& n : s->report.notes)
        std::printf("note      %s\n", n.message.c_str());
    if (s->report.torn)
        std::printf("note      line %zu is a torn final line; the next append repairs it\n", s->report.torn->line);
    return exit_ok;
}

}  // namespace agentctx::cli
