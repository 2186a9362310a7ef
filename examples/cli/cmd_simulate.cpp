// `agentctx simulate SESSION...`: what each compaction policy bills on recorded sessions, and how long the agent waits.
#include "cli_common.hpp"
#include "commands.hpp"

#include <agentctx/compaction/json_text.hpp>
#include <agentctx/runtime/simulate.hpp>

#include <boost/json/parse.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

namespace agentctx::cli {

namespace {

const char* const simulate_usage =
    "usage: agentctx simulate SESSION.jsonl... [--policy none|pi|agentctx]... [--settings FILE]...\n"
    "                         [--prices anthropic|anthropic-1h|openai|FILE] [--context-window N]\n"
    "                         [--system-tokens N] [--json]\n"
    "\n"
    "Replays each session's active path under each policy (recorded compactions dropped; the real\n"
    "planner and runtime decide; summaries from the offline summarizer) and bills every request\n"
    "through the prompt-cache model: billed input, cost, compactions, summary calls and stall.\n"
    "\n"
    "  --policy NAME        none (never compacts), pi (Pi 1.6.0), agentctx (the defaults); repeatable;\n"
    "                       default: all three\n"
    "  --settings FILE      one more policy: agentctx with this settings file ({\"compaction\": {...}}),\n"
    "                       named by the file's base name; repeatable\n"
    "  --prices P           a built-in price table or a JSON file of one (default anthropic)\n"
    "  --context-window N   the model's window (default 200000)\n"
    "  --system-tokens N    the system prompt and tools, a fixed first part of every request (default 0)\n"
    "  --json               one JSON object with the same numbers\n";

struct sim_setup
{
    std::vector<runtime::simulate_policy> policies;
    runtime::simulate_options options;
};

std::optional<compaction::price_table> read_prices(const std::string& p, std::string& error)
{
    if (auto builtin = compaction::builtin_price_table(p))
        return builtin;
    std::ifstream f(p, std::ios::binary);
    if (!f)
        return error = "--prices: no built-in table and no readable file '" + p + "'", std::nullopt;
    std::stringstream ss;
    ss << f.rdbuf();
    boost::system::error_code ec;
    auto v = boost::json::parse(ss.str(), ec);
    compaction::diagnostics diag;
    auto table = ec ? compaction::result<compaction::price_table>(compaction::errc::invalid_settings)
                    : compaction::parse_price_table(v, diag);
    if (!table)
        return error = "--prices " + p + ": " + (ec ? "not JSON" : diag.message), std::nullopt;
    return *table;
}

std::optional<runtime::simulate_policy> settings_policy(const std::string& file, std::string& error)
{
    compaction::diagnostics diag;
    auto s = runtime::load_settings(std::filesystem::path(file), std::nullopt, false, {}, diag);
    if (!s)
        return error = "--settings " + file + ": " + diag.message, std::nullopt;
    return runtime::simulate_policy{std::filesystem::path(file).stem().string(), *s, compaction::compat_mode::agentctx, false};
}

std::optional<sim_setup> setup(const args& a, std::string& error)
{
    sim_setup s;
    for (const auto& [name, value] : a.options)
    {
        if (name == "policy")
        {
            auto p = runtime::builtin_policy(value);
            if (!p)
                return error = "--policy takes none, pi or agentctx, not '" + value + "'", std::nullopt;
            s.policies.push_back(std::move(*p));
        }
        else if (name == "settings")
        {
            auto p = settings_policy(value, error);
            if (!p)
                return std::nullopt;
            s.policies.push_back(std::move(*p));
        }
    }
    if (s.policies.empty())
        for (const char* n : {"none", "pi", "agentctx"})
            s.policies.push_back(*runtime::builtin_policy(n));
    if (auto p = a.get("prices"))
    {
        auto table = read_prices(*p, error);
        if (!table)
            return std::nullopt;
        s.options.prices = std::move(*table);
    }
    return s;
}

using costs = std::vector<std::pair<std::string, compaction::policy_cost>>;

const compaction::policy_cost* find(const costs& c, std::string_view name)
{
    for (const auto& [n, cost] : c)
        if (n == name)
            return &cost;
    return nullptr;
}

std::string ratio(double x, const compaction::policy_cost* base)
{
    if (!base || base->billed_input <= 0)
        return "-";
    char b[32];
    std::snprintf(b, sizeof b, "%.2fx", x / base->billed_input);
    return b;
}

void print_table(const std::string& title, const costs& c)
{
    std::printf("\n%s\n", title.c_str());
    std::printf("  %-12s %8s %14s %8s %8s %10s %11s %13s %10s %10s\n", "policy", "requests", "billed input", "vs none",
                "vs pi", "cost $", "compactions", "summary calls", "stall s", "stall p95");
    const auto* none = find(c, "none");
    const auto* pi = find(c, "pi");
    for (const auto& [name, cost] : c)
    {
        const auto st = compaction::summarize_stalls(cost.stalls);
        std::printf("  %-12s %8lld %14.0f %8s %8s %10.4f %11lld %13lld %10.1f %10.1f\n", name.c_str(),
                    static_cast<long long>(cost.requests), cost.billed_input, ratio(cost.billed_input, none).c_str(),
                    ratio(cost.billed_input, pi).c_str(), cost.cost, static_cast<long long>(cost.compactions),
                    static_cast<long long>(cost.summary_requests), st.total, st.p95);
    }
}

boost::json::object policies_json(const costs& c)
{
    boost::json::object o;
    for (const auto& [name, cost] : c)
        o[name] = cost.to_json();
    return o;
}

void progress(std::size_t done, std::size_t total, const std::string& file)
{
    if (!::isatty(STDERR_FILENO))
        return;
    const double f = total ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
    std::fprintf(stderr, "\r%s %zu/%zu %-40.40s", bar(f, 30).c_str(), done, total, file.c_str());
    if (done == total)
        std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
}

// Every policy's cost on one session file, added to `totals` (nullopt: the error is printed, `code` set).
std::optional<costs> simulate_file(const std::string& file, const sim_setup& s, bool json, costs& totals, int& code)
{
    auto opened = open_session(file, json, code);
    if (!opened)
        return std::nullopt;
    costs c;
    for (std::size_t k = 0; k < s.policies.size(); ++k)
    {
        compaction::diagnostics diag;
        auto cost = runtime::simulate_session(opened->log, s.policies[k], s.options, diag);
        if (!cost)
        {
            print_error(json, cost.error().message(), file + ": policy " + s.policies[k].name + ": " + diag.message);
            code = exit_failed;
            return std::nullopt;
        }
        totals[k].second.add(*cost);
        c.emplace_back(s.policies[k].name, std::move(*cost));
    }
    return c;
}

void print_simulation_json(const sim_setup& s, const costs& totals, boost::json::array sessions)
{
    const auto& p = s.options.prices;
    print_json(boost::json::object{
        {"model", {{"prices", p.name}, {"ttl", p.ttl_seconds}, {"minPrefix", p.min_prefix},
                   {"writeMultiplier", p.write_multiplier}, {"readMultiplier", p.read_multiplier},
                   {"inputPrice", p.input_price}, {"outputPrice", p.output_price},
                   {"contextWindow", s.options.context_window}, {"systemTokens", s.options.system_tokens}}},
        {"policies", policies_json(totals)},
        {"sessions", std::move(sessions)}});
}

}  // namespace

int cmd_simulate(int argc, char** argv)
{
    std::string error;
    auto a = parse_args(argc, argv, 2, {"policy", "settings", "prices", "context-window", "system-tokens"}, {"json", "help"}, error);
    if (!a || a->has("help") || a->positional.empty())
    {
        if (a && a->has("help"))
            return std::fputs(simulate_usage, stdout), exit_ok;
        std::fprintf(stderr, "agentctx simulate: %s\n%s", error.empty() ? "no session file" : error.c_str(), simulate_usage);
        return exit_usage;
    }
    const bool json = a->has("json");
    bool ok = true;
    auto s = setup(*a, error);
    const auto window = count_option(*a, "context-window", 200000, ok);
    const auto system = count_option(*a, "system-tokens", 0, ok);
    if (!s || !ok)
    {
        if (!error.empty())
            std::fprintf(stderr, "agentctx simulate: %s\n", error.c_str());
        return exit_usage;
    }
    s->options.context_window = *window;
    s->options.system_tokens = *system;

    costs totals;
    for (const auto& p : s->policies)
        totals.emplace_back(p.name, compaction::policy_cost{});
    boost::json::array sessions;
    std::vector<std::pair<std::string, costs>> per_session;
    for (std::size_t i = 0; i < a->positional.size(); ++i)
    {
        const auto& file = a->positional[i];
        progress(i, a->positional.size(), file);
        int code = exit_ok;
        auto c = simulate_file(file, *s, json, totals, code);
        if (!c)
            return code;
        sessions.push_back(boost::json::object{{"file", file}, {"policies", policies_json(*c)}});
        per_session.emplace_back(file, std::move(*c));
    }
    progress(a->positional.size(), a->positional.size(), "");
    if (json)
    {
        print_simulation_json(*s, totals, std::move(sessions));
        return exit_ok;
    }
    for (const auto& [file, c] : per_session)
        print_table(file, c);
    if (per_session.size() > 1)
        print_table("total (" + std::to_string(per_session.size()) + " sessions)", totals);
    return exit_ok;
}

}  // namespace agentctx::cli
