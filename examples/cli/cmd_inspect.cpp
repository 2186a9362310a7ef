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

// What inspect reports beyond the context: the entries by type, the branches, the window.
struct inspection
{
    std::map<std::string, std::size_t> by_type;
    std::size_t leaves = 0;
    std::size_t compactions = 0;
    std::int64_t window = 0;
    std::int64_t reserve = 0;
    std::optional<compaction::context_usage_report> usage;
    std::int64_t estimate = 0;
    bool would = false;
};

// Entry counts by type, compactions, and the leaves (entries no other entry has as parent).
void count_entries(const compaction::session_log& log, inspection& in)
{
    std::vector<bool> has_child(log.size(), false);
    for (std::size_t i = 0; i < log.size(); ++i)
    {
        const auto& m = log.meta(i);
        ++in.by_type[std::string(compaction::to_string(m.type))];
        in.compactions += m.type == compaction::entry_type::compaction;
        if (m.parent >= 0)
            has_child[static_cast<std::size_t>(m.parent)] = true;
    }
    in.leaves = static_cast<std::size_t>(std::count(has_child.begin(), has_child.end(), false));
}

void print_inspection_json(const opened_context& s, const inspection& in)
{
    const auto& log = s.log;
    const auto& ctx = s.context;
    boost::json::object counts;
    for (const auto& [t, n] : in.by_type)
        counts[t] = n;
    const auto& usage = in.usage;
    print_json(boost::json::object{
        {"sessionId", log.header().id},
        {"version", log.source_version()},
        {"cwd", log.header().cwd ? boost::json::value(*log.header().cwd) : boost::json::value(nullptr)},
        {"entries", log.size()},
        {"entriesByType", counts},
        {"branches", in.leaves},
        {"compactions", in.compactions},
        {"leafId", ctx.leaf_id ? boost::json::value(*ctx.leaf_id) : boost::json::value(nullptr)},
        {"contextMessages", ctx.messages.size()},
        {"contextWindow", in.window},
        {"usageTokens",
         usage && usage->tokens ? boost::json::value(*usage->tokens) : boost::json::value(nullptr)},
        {"usagePercent",
         usage && usage->percent ? boost::json::value(*usage->percent) : boost::json::value(nullptr)},
        {"estimatedTokens", in.estimate},
        {"wouldCompact", in.would},
    });
}

void print_inspection(const opened_context& s, const inspection& in)
{
    const auto& log = s.log;
    std::printf(
        "session   %s (format v%d)%s\n",
        log.header().id.c_str(),
        log.source_version(),
        log.source_version() < 3 ? "  - run `agentctx migrate` before writing to it" : ""
    );
    if (log.header().cwd)
        std::printf("cwd       %s\n", log.header().cwd->c_str());
    std::printf("entries   %zu:", log.size());
    for (const auto& [t, n] : in.by_type)
        std::printf(" %s %zu", t.c_str(), n);
    std::printf(
        "\nbranches  %zu leaves; compactions %zu; active leaf %s\n",
        in.leaves,
        in.compactions,
        s.context.leaf_id ? s.context.leaf_id->c_str() : "-"
    );
    if (in.usage && in.usage->tokens)
        std::printf(
            "usage     %s %lld / %lld tokens (%.1f%%)\n",
            bar(*in.usage->percent / 100).c_str(),
            static_cast<long long>(*in.usage->tokens),
            static_cast<long long>(in.window),
            *in.usage->percent
        );
    else
        std::printf(
            "usage     unknown (no model response since the latest compaction); estimate %lld tokens\n",
            static_cast<long long>(in.estimate)
        );
    std::printf(
        "compact   %s (threshold %lld)\n",
        in.would ? "yes - over the threshold" : "no - under the threshold",
        static_cast<long long>(in.window - in.reserve)
    );
    for (const auto& n : s.report.notes)
        std::printf("note      %s\n", n.message.c_str());
    if (s.report.torn)
        std::printf(
            "note      line %zu is a torn final line; the next append repairs it\n", s.report.torn->line
        );
}

}  // namespace

int cmd_inspect(int argc, char** argv)
{
    int code = exit_ok;
    auto a =
        command_args(argc, argv, "inspect", inspect_usage, {"context-window", "reserve"}, {"json"}, code);
    if (!a)
        return code;
    const bool json = a->has("json");
    bool ok = true;
    const auto window = count_option(*a, "context-window", 200000, ok);
    const auto reserve = count_option(*a, "reserve", 16384, ok);
    if (!ok)
        return exit_usage;
    auto s = open_session_context(a->positional[0], json, code);
    if (!s)
        return code;
    inspection in;
    count_entries(s->log, in);
    in.window = *window;
    in.reserve = *reserve;
    in.usage = compaction::context_usage(s->context, *window);
    compaction::compaction_settings settings;
    settings.reserve_tokens = *reserve;
    in.estimate = compaction::estimate_context_tokens(
                      s->context.messages,
                      compaction::default_token_counter(),
                      compaction::latest_compaction_time(s->context)
    )
                      .tokens;
    in.would = compaction::should_compact(in.estimate, *window, settings);
    if (json)
        print_inspection_json(*s, in);
    else
        print_inspection(*s, in);
    return exit_ok;
}

}  // namespace agentctx::cli
