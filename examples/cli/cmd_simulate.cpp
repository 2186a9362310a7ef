// `agentctx simulate SESSION...`: what each compaction policy bills on recorded sessions, and how long the
// agent waits.
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
    "                         [--system-tokens N] [--sweep workingBudget=LO..HI[/STEP]] [--json]\n"
    "\n"
    "Replays each session's active path under each policy (recorded compactions dropped; the real\n"
    "planner and runtime decide and build the summary requests, cache-friendly ones included;\n"
    "summaries from the offline summarizer) and bills every request through the prompt-cache\n"
    "model: billed input, cost, compactions, summary calls and stall.\n"
    "\n"
    "  --policy NAME        none (never compacts), pi (Pi 1.6.0), agentctx (the runtime's defaults,\n"
    "                       background compaction included); repeatable;\n"
    "                       default: all three\n"
    "  --settings FILE      one more policy: agentctx with this settings file ({\"compaction\": {...}}),\n"
    "                       named by the file's base name; repeatable\n"
    "  --prices P           a built-in price table or a JSON file of one (default anthropic)\n"
    "  --context-window N   the model's window (default 200000)\n"
    "  --system-tokens N    the system prompt and tools, a fixed first part of every request (default 0)\n"
    "  --sweep workingBudget=LO..HI[/STEP]\n"
    "                       one more policy per working budget from LO to HI tokens (STEP default\n"
    "                       20000), each agentctx's defaults with compaction.workingBudget set; a\n"
    "                       table shows each value's cost beside the summary calls it takes\n"
    "  --json               one JSON object with the same numbers\n";

struct sim_setup
{
    std::vector<runtime::simulate_policy> policies;
    runtime::simulate_options options;
    std::vector<std::string> swept;  ///< the sweep's policy names, in order
};

std::optional<std::int64_t> whole_number(std::string_view text)
{
    std::int64_t v = 0;
    if (text.empty() || text.size() > 12)
        return std::nullopt;
    for (const char c : text)
    {
        if (c < '0' || c > '9')
            return std::nullopt;
        v = v * 10 + (c - '0');
    }
    return v;
}

// `workingBudget=LO..HI[/STEP]`: one agentctx policy per value.
bool add_sweep(const std::string& spec, sim_setup& s, std::string& error)
{
    const std::string key = "workingBudget=";
    const auto dots = spec.find("..");
    const auto slash = spec.find('/', dots == std::string::npos ? 0 : dots);
    std::optional<std::int64_t> lo, hi, step = 20000;
    if (spec.rfind(key, 0) == 0 && dots != std::string::npos)
    {
        lo = whole_number(std::string_view(spec).substr(key.size(), dots - key.size()));
        hi = whole_number(std::string_view(spec).substr(
            dots + 2, slash == std::string::npos ? std::string::npos : slash - dots - 2
        ));
        if (slash != std::string::npos)
            step = whole_number(std::string_view(spec).substr(slash + 1));
    }
    if (!lo || !hi || !step || *step == 0 || *lo == 0 || *lo > *hi || (*hi - *lo) / *step > 100)
    {
        error = "--sweep takes workingBudget=LO..HI[/STEP] (tokens, LO <= HI, at most 100 steps), not '" +
                spec + "'";
        return false;
    }
    for (auto v = *lo; v <= *hi; v += *step)
    {
        auto p = *runtime::builtin_policy("agentctx");
        p.name = "workingBudget=" + std::to_string(v);
        p.settings.working_budget = compaction::token_amount{v, 0};
        s.swept.push_back(p.name);
        s.policies.push_back(std::move(p));
    }
    return true;
}

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
    // Read as a host reads its --settings file; what it leaves unset is the runtime's default.
    compaction::diagnostics diag;
    auto s = runtime::load_settings_files(
        runtime::host_settings_sources(std::filesystem::path(file), std::nullopt, false), diag
    );
    if (!s)
        return error = "--settings " + file + ": " + diag.message, std::nullopt;
    return runtime::simulate_policy{
        std::filesystem::path(file).stem().string(), s->compaction, compaction::compat_mode::agentctx, false};
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
        else if (name == "sweep" && !add_sweep(value, s, error))
            return std::nullopt;
    }
    if (s.policies.size() == s.swept.size())  // no policy named: the three built-in ones first
    {
        std::vector<runtime::simulate_policy> base;
        for (const char* n : {"none", "pi", "agentctx"})
            base.push_back(*runtime::builtin_policy(n));
        s.policies.insert(s.policies.begin(), base.begin(), base.end());
    }
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
    std::printf(
        "  %-12s %8s %14s %8s %8s %10s %11s %13s %10s %10s\n",
        "policy",
        "requests",
        "billed input",
        "vs none",
        "vs pi",
        "cost $",
        "compactions",
        "summary calls",
        "stall s",
        "stall p95"
    );
    const auto* none = find(c, "none");
    const auto* pi = find(c, "pi");
    for (const auto& [name, cost] : c)
    {
        const auto st = compaction::summarize_stalls(cost.stalls);
        std::printf(
            "  %-12s %8lld %14.0f %8s %8s %10.4f %11lld %13lld %10.1f %10.1f\n",
            name.c_str(),
            static_cast<long long>(cost.requests),
            cost.billed_input,
            ratio(cost.billed_input, none).c_str(),
            ratio(cost.billed_input, pi).c_str(),
            cost.cost,
            static_cast<long long>(cost.compactions),
            static_cast<long long>(cost.summary_requests),
            st.total,
            st.p95
        );
    }
}

// The working-budget sweep over all sessions: each value's cost beside how much it summarizes.
void print_sweep(const std::vector<std::string>& swept, const costs& totals)
{
    std::printf("\nworking budget sweep (all sessions)\n");
    std::printf(
        "  %-14s %14s %8s %10s %11s %13s %16s %10s\n",
        "workingBudget",
        "billed input",
        "vs pi",
        "cost $",
        "compactions",
        "summary calls",
        "to summarizers",
        "stall s"
    );
    const auto* pi = find(totals, "pi");
    for (const auto& name : swept)
    {
        const auto* cost = find(totals, name);
        const auto st = compaction::summarize_stalls(cost->stalls);
        std::printf(
            "  %-14s %14.0f %8s %10.4f %11lld %13lld %16lld %10.1f\n",
            name.substr(name.find('=') + 1).c_str(),
            cost->billed_input,
            ratio(cost->billed_input, pi).c_str(),
            cost->cost,
            static_cast<long long>(cost->compactions),
            static_cast<long long>(cost->summary_requests),
            static_cast<long long>(cost->summarizer_input_tokens),
            st.total
        );
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
std::optional<costs> simulate_file(
    const std::string& file, const sim_setup& s, bool json, costs& totals, int& code
)
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
            print_error(
                json, cost.error().message(), file + ": policy " + s.policies[k].name + ": " + diag.message
            );
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
        {"model",
         {{"prices", p.name},
          {"ttl", p.ttl_seconds},
          {"minPrefix", p.min_prefix},
          {"writeMultiplier", p.write_multiplier},
          {"readMultiplier", p.read_multiplier},
          {"inputPrice", p.input_price},
          {"outputPrice", p.output_price},
          {"contextWindow", s.options.context_window},
          {"systemTokens", s.options.system_tokens}}},
        {"policies", policies_json(totals)},
        {"sessions", std::move(sessions)}});
}

}  // namespace

int cmd_simulate(int argc, char** argv)
{
    std::string error;
    auto a = parse_args(
        argc,
        argv,
        2,
        {"policy", "settings", "prices", "context-window", "system-tokens", "sweep"},
        {"json", "help"},
        error
    );
    if (!a || a->has("help") || a->positional.empty())
    {
        if (a && a->has("help"))
            return std::fputs(simulate_usage, stdout), exit_ok;
        std::fprintf(
            stderr,
            "agentctx simulate: %s\n%s",
            error.empty() ? "no session file" : error.c_str(),
            simulate_usage
        );
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
    if (!s->swept.empty())
        print_sweep(s->swept, totals);
    return exit_ok;
}

}  // namespace agentctx::cli
