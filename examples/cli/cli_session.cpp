// The session configuration shared by `compact` and `checkpoint`.
#include "cli_session.hpp"

#include <agentctx/providers/offline_summarizer.hpp>
#include <agentctx/runtime/error.hpp>
#include <agentctx/runtime/jsonl_store.hpp>
#include <agentctx/runtime/memory_store.hpp>

#include <spdlog/logger.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace agentctx::cli {

const std::vector<std::string_view> session_valued_options = {"provider", "model", "base-url", "keep-recent", "reserve",
                                                              "max-source-chars", "max-calls",
                                                              "context-window", "settings", "project-dir"};

std::optional<cli_session_setup> cli_session_config(const args& a, bool json, boost::asio::io_context& ioc, int& code)
{
    bool ok = true;
    const auto window = count_option(a, "context-window", 200000, ok);
    if (!ok)
    {
        code = exit_usage;
        return std::nullopt;
    }
    auto settings = cli_settings(a, json, code);
    if (!settings)
        return std::nullopt;
    cli_session_setup out;
    auto& config = out.config;
    config.settings = settings->compaction;
    config.model.context_window = *window;
    config.logger = std::make_shared<spdlog::logger>("agentctx");  // no sinks: the CLI prints its own lines

    config.redaction = settings->redaction;  // {"redaction": {"enabled", "allowlist"}}
    config.pins = settings->pins;            // {"pinned": {"customTypes", "ids"}}
    // The summarizer: --provider, else the settings' "provider" section or the environment.
    boost::json::object section = settings->provider;
    if (const auto name = a.get("provider"))
        section["name"] = *name;
    if (const auto m = a.get("model"))
        section["model"] = *m;
    if (const auto u = a.get("base-url"))
        section["baseUrl"] = *u;
    providers::diagnostics pdiag;
    auto provider = providers::provider_from_environment(section.empty() ? nullptr : &section,
                                                         [](const char* n) { return std::getenv(n); }, pdiag);
    if (!provider)
    {
        print_error(json, provider.error().message(), pdiag.message);
        code = exit_usage;
        return std::nullopt;
    }
    if (*provider)
    {
        const auto& p = **provider;
        out.http = std::make_shared<providers::http_summarizer>(ioc.get_executor(), p, config.logger);
        config.summarizer = out.http;
        config.model.provider = p.name;
        config.model.model_id = p.model;
        config.model.max_output_tokens = p.max_output_tokens;
        if (p.context_window > 0 && !a.has("context-window"))
            config.model.context_window = p.context_window;
    }
    else
    {
        // AGENTCTX_OFFLINE_DELAY_MS simulates a slow model (to see progress and try Ctrl-C).
        const char* delay_env = std::getenv("AGENTCTX_OFFLINE_DELAY_MS");
        const auto delay = std::chrono::milliseconds(delay_env ? std::strtoll(delay_env, nullptr, 10) : 0);
        config.summarizer = std::make_shared<providers::offline_summarizer>(ioc.get_executor(), delay);
    }
    return out;
}

std::shared_ptr<runtime::session> open_writable_session(boost::asio::io_context& ioc, const std::string& path,
                                                        const runtime::session_config& config, bool json,
                                                        bool dry_run, int& code)
{
    compaction::diagnostics diag;
    std::unique_ptr<runtime::store> store;
    if (dry_run)
    {
        std::ifstream in(path, std::ios::binary);
        if (!in)
        {
            print_error(json, "not_found", "no session file at '" + path + "'");
            code = exit_io;
            return nullptr;
        }
        std::stringstream ss;
        ss << in.rdbuf();
        store = std::make_unique<runtime::memory_store>(ss.str());
    }
    else
    {
        auto s = runtime::jsonl_store::open(path, {}, diag);
        if (!s)
        {
            print_error(json, s.error().message(), diag.message);
            code = s.error() == runtime::make_error_code(runtime::errc::session_locked) ? exit_locked : exit_io;
            return nullptr;
        }
        store = std::move(*s);
    }
    auto session = runtime::session::open(ioc.get_executor(), std::move(store), config, diag);
    if (!session)
    {
        print_error(json, session.error().message(), path + ": " + diag.message);
        code = exit_bad_session;
        return nullptr;
    }
    return *session;
}

}  // namespace agentctx::cli
