// CLI helpers: argument scanning, session opening with error reporting, JSON printing.
#include "cli_common.hpp"
#include "cli_pg.hpp"

#include <agentctx/compaction/json_text.hpp>
#include <agentctx/compaction/token_estimate.hpp>
#include <agentctx/runtime/error.hpp>
#include <agentctx/runtime/jsonl_store.hpp>
#include <agentctx/runtime/pg_store.hpp>
#include <agentctx/runtime/settings_files.hpp>

#include <boost/json/parse.hpp>

#include <algorithm>
#include <filesystem>
#include <charconv>
#include <fstream>
#include <sstream>
#include <cstdio>
#include <cstdlib>
#include <iostream>

namespace agentctx::cli {

bool args::has(std::string_view name) const
{
    return std::any_of(options.begin(), options.end(), [&](const auto& o) { return o.first == name; });
}

std::optional<std::string> args::get(std::string_view name) const
{
    for (auto it = options.rbegin(); it != options.rend(); ++it)
        if (it->first == name)
            return it->second;
    return std::nullopt;
}

std::optional<args> parse_args(
    int argc,
    char** argv,
    int first,
    const std::vector<std::string_view>& valued,
    const std::vector<std::string_view>& flags,
    std::string& error
)
{
    args a;
    for (int i = first; i < argc; ++i)
    {
        const std::string_view s = argv[i];
        if (s.size() > 2 && s.substr(0, 2) == "--")
        {
            std::string_view name = s.substr(2);
            std::optional<std::string> inline_value;
            if (const auto eq = name.find('='); eq != std::string_view::npos)
            {
                inline_value = std::string(name.substr(eq + 1));
                name = name.substr(0, eq);
            }
            if (std::find(valued.begin(), valued.end(), name) != valued.end())
            {
                if (!inline_value && i + 1 >= argc)
                {
                    error = "option --" + std::string(name) + " needs a value";
                    return std::nullopt;
                }
                a.options.emplace_back(
                    std::string(name), inline_value ? *inline_value : std::string(argv[++i])
                );
            }
            else if (std::find(flags.begin(), flags.end(), name) != flags.end() && !inline_value)
                a.options.emplace_back(std::string(name), "");
            else
            {
                error = "unknown option " + std::string(s);
                return std::nullopt;
            }
        }
        else
            a.positional.emplace_back(s);
    }
    return a;
}

std::optional<args> command_args(
    int argc,
    char** argv,
    const char* name,
    const char* usage,
    const std::vector<std::string_view>& valued,
    std::vector<std::string_view> flags,
    int& code
)
{
    flags.push_back("help");
    std::string error;
    auto a = parse_args(argc, argv, 2, valued, flags, error);
    const bool help = a && a->has("help");
    if (a && !help && a->positional.size() == 1)
        return a;
    std::fputs(usage, help ? stdout : stderr);
    if (!error.empty())
        std::fprintf(stderr, "agentctx %s: %s\n", name, error.c_str());
    code = help ? exit_ok : exit_usage;
    return std::nullopt;
}

void print_json(const boost::json::value& v)
{
    std::string out = compaction::stringify(v);
    out += '\n';
    std::fwrite(out.data(), 1, out.size(), stdout);
}

void print_error(bool json, std::string_view code, std::string_view message)
{
    if (json)
    {
        boost::json::object e;
        e["code"] = code;
        e["message"] = message;
        print_json(boost::json::object{{"error", e}});
    }
    else
        std::cerr << "agentctx: " << code << ": " << message << '\n';
}

boost::json::array messages_json(const std::vector<compaction::context_message>& messages)
{
    boost::json::array out;
    for (const auto& m : messages)
        out.push_back(boost::json::object{
            // An unknown role is printed as written, as Pi keeps it.
            {"role",
             m.msg->role == compaction::role::other ? std::string_view(m.msg->role_name)
                                                    : compaction::to_string(m.msg->role)},
            {"entryId", m.entry_id},
            {"tokens", compaction::estimate_tokens(*m.msg)},
        });
    return out;
}

std::optional<std::int64_t> count_option(
    const args& a, std::string_view name, std::int64_t fallback, bool& ok
)
{
    const auto v = a.get(name);
    if (!v)
        return fallback;
    std::int64_t n = 0;
    const auto r = std::from_chars(v->data(), v->data() + v->size(), n);
    if (r.ec != std::errc{} || r.ptr != v->data() + v->size() || n < 0)
    {
        std::fprintf(
            stderr,
            "agentctx: --%s needs a non-negative integer, got '%s'\n",
            std::string(name).c_str(),
            v->c_str()
        );
        ok = false;
        return std::nullopt;
    }
    return n;
}

namespace {

// `--model PROVIDER/ID` as a model reference (the id may itself contain '/').
compaction::model_ref model_ref_of(const std::string& key)
{
    const auto slash = key.find('/');
    if (slash == std::string::npos)
        return {"", key};
    return {key.substr(0, slash), key.substr(slash + 1)};
}

// Layers (runtime::host_settings_sources): the global file (--settings, else
// $PI_CODING_AGENT_DIR or ~/.pi/agent/settings.json), and a project's .pi/settings.json when
// --trust-project.
runtime::settings_sources cli_sources(const args& a)
{
    const auto file = a.get("settings");
    const auto dir = a.get("project-dir");
    return runtime::host_settings_sources(
        file ? std::optional<std::filesystem::path>(*file) : std::nullopt,
        dir ? std::optional<std::filesystem::path>(*dir) : std::nullopt,
        a.has("trust-project")
    );
}

}  // namespace

std::optional<runtime::host_config> cli_host_config(const args& a, bool json, int& code, bool model_is_key)
{
    runtime::host_inputs in;
    in.sources = cli_sources(a);
    // The budget flags and the window, typed: load_host_config applies them over every layer.
    bool ok = true;
    for (const auto& [flag, field] :
         {std::pair{"keep-recent", &runtime::budget_flags::keep_recent_tokens},
          std::pair{"reserve", &runtime::budget_flags::reserve_tokens},
          std::pair{"max-source-chars", &runtime::budget_flags::summary_max_source_chars},
          std::pair{"max-calls", &runtime::budget_flags::summary_max_calls}})
        if (ok && a.has(flag))
            in.flags.*field = count_option(a, flag, 0, ok);
    if (ok && a.has("context-window"))
        in.context_window = count_option(a, "context-window", 0, ok);
    if (!ok)
    {
        code = exit_usage;
        return std::nullopt;
    }
    if (model_is_key && a.get("model"))
        in.model = model_ref_of(*a.get("model"));
    for (const auto& [flag, key] :
         {std::pair{"provider", "name"}, std::pair{"model", "model"}, std::pair{"base-url", "baseUrl"}})
        if (const auto v = a.get(flag))
            in.provider_flags[key] = *v;
    compaction::diagnostics diag;
    auto host = runtime::load_host_config(in, diag);
    if (!host)
    {
        print_error(json, host.error().message(), diag.message);
        // A named settings file that is missing is an unreadable file, the rest bad settings.
        code = host.error() == runtime::make_error_code(runtime::errc::not_found) ? exit_io : exit_usage;
        return std::nullopt;
    }
    return std::move(*host);
}

std::optional<runtime::loaded_settings> cli_settings(const args& a, bool json, int& code)
{
    auto host = cli_host_config(a, json, code);
    if (!host)
        return std::nullopt;
    return std::move(host->settings);
}

std::string bar(double fraction, int width)
{
    const int filled = static_cast<int>(std::clamp(fraction, 0.0, 1.0) * width + 0.5);
    std::string s = "[";
    for (int i = 0; i < width; ++i)
        s += i < filled ? "#" : ".";
    return s + "]";
}

void exit_read_command(int code)
{
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(code);
}

std::optional<opened_session> open_session(const std::string& path, bool json, int& code)
{
    compaction::diagnostics diag;
    if (std::string conninfo, id; runtime::split_pg_reference(path, conninfo, id))
    {
        // A PostgreSQL session: its exact text, loaded as the file would be.
        auto r = pg_export_text(conninfo, id);
        if (!r.ok)
        {
            code = exit_io;
            print_error(json, r.code, r.message);
            return std::nullopt;
        }
        opened_session s;
        auto log = compaction::session_log::load(std::move(r.value), {}, s.report, diag);
        if (!log)
        {
            code = exit_bad_session;
            print_error(json, log.error().message(), id + ": " + diag.message);
            return std::nullopt;
        }
        s.log = std::move(*log);
        return s;
    }
    auto store = runtime::jsonl_store::open(path, {.read_only = true}, diag);
    if (!store)
    {
        code = exit_io;
        print_error(json, store.error().message(), diag.message);
        return std::nullopt;
    }
    opened_session s;
    auto log = (*store)->load({}, s.report, diag);
    if (!log)
    {
        code = log.error().category() == runtime::error_category() ? exit_io : exit_bad_session;
        print_error(json, log.error().message(), path + ": " + diag.message);
        return std::nullopt;
    }
    s.log = std::move(*log);
    return s;
}

std::optional<opened_context> open_session_context(const std::string& path, bool json, int& code)
{
    auto s = open_session(path, json, code);
    if (!s)
        return std::nullopt;
    compaction::diagnostics diag;
    auto ctx = compaction::build_session_context(s->log, diag);
    if (!ctx)
    {
        print_error(json, ctx.error().message(), diag.message);
        code = exit_bad_session;
        return std::nullopt;
    }
    return opened_context{std::move(*s), std::move(*ctx)};
}

}  // namespace agentctx::cli
