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

const std::vector<std::string_view> session_valued_options = {
    "provider",
    "model",
    "base-url",
    "keep-recent",
    "reserve",
    "max-source-chars",
    "max-calls",
    "context-window",
    "settings",
    "project-dir"};

std::optional<cli_session_setup> cli_session_config(
    const args& a, bool json, boost::asio::io_context& ioc, int& code
)
{
    auto host = cli_host_config(a, json, code);
    if (!host)
        return std::nullopt;
    cli_session_setup out;
    out.config = runtime::session_config_of(*host);
    auto& config = out.config;
    config.logger = std::make_shared<spdlog::logger>("agentctx");  // no sinks: the CLI prints its own lines
    if (host->provider)
    {
        out.http =
            std::make_shared<providers::http_summarizer>(ioc.get_executor(), *host->provider, config.logger);
        config.summarizer = out.http;
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

std::shared_ptr<runtime::session> open_writable_session(
    boost::asio::io_context& ioc,
    const std::string& path,
    const runtime::session_config& config,
    bool json,
    bool dry_run,
    int& code
)
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
            code =
                s.error() == runtime::make_error_code(runtime::errc::session_locked) ? exit_locked : exit_io;
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
