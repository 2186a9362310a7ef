// agent_server: an HTTP server that keeps agent sessions compacted (see server.hpp for endpoints).
#include "server.hpp"
#include "summarizers.hpp"

#include <agentctx/providers/http_summarizer.hpp>
#include <agentctx/providers/offline_summarizer.hpp>
#include <agentctx/runtime/host_config.hpp>
#include <agentctx/runtime/settings_files.hpp>

#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <spdlog/spdlog.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

// The bearer token: --token-file (first line, trailing whitespace trimmed), else
// AGENTCTX_SERVER_TOKEN; --no-auth for none. The outer nullopt means "refuse to start".
std::optional<std::optional<std::string>> read_token(const char* file, bool no_auth)
{
    std::string token;
    if (file)
    {
        std::ifstream in(file);
        if (!in || !std::getline(in, token))
        {
            std::fprintf(stderr, "agent_server: cannot read the token file %s\n", file);
            return std::nullopt;
        }
    }
    else if (const char* env = std::getenv("AGENTCTX_SERVER_TOKEN"))
        token = env;
    while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back())))
        token.pop_back();
    if (!token.empty())
        return std::optional<std::string>(std::move(token));
    if (no_auth)
    {
        spdlog::warn("authentication is off (--no-auth): anyone who reaches the port can read and write every session");
        return std::optional<std::string>();
    }
    std::fprintf(stderr, "agent_server: no token: use --token-file FILE or AGENTCTX_SERVER_TOKEN, or --no-auth\n");
    return std::nullopt;
}

}  // namespace

int main(int argc, char** argv)
{
    using namespace agentctx;
    server::server_options opts;
    opts.data_dir = "agent-data";
    opts.port = 8080;
    int threads = 1;
    const char* token_file = nullptr;
    bool no_auth = false;
    const char* log_level = std::getenv("AGENTCTX_LOG_LEVEL");
    // Settings as the CLI reads them: --settings FILE (else the global file), then the project's
    // .pi/settings.json only with --trust-project (the project is --project-dir, else the
    // server's working directory; never a session's client-supplied cwd).
    runtime::settings_sources sources;
    sources.global = runtime::default_global_settings_path();
    sources.project_dir = std::filesystem::current_path();
    const char* settings_file = nullptr;
    const char* store_url = std::getenv("AGENTCTX_STORE");
    for (int i = 1; i < argc; ++i)
    {
        const bool has_value = i + 1 < argc;
        if (!std::strcmp(argv[i], "--port") && has_value)
            opts.port = static_cast<std::uint16_t>(std::atoi(argv[++i]));
        else if (!std::strcmp(argv[i], "--store") && has_value)
            store_url = argv[++i];
        else if (!std::strcmp(argv[i], "--data-dir") && has_value)
            opts.data_dir = argv[++i];
        else if (!std::strcmp(argv[i], "--address") && has_value)
            opts.address = argv[++i];
        else if (!std::strcmp(argv[i], "--threads") && has_value)
            threads = std::max(1, std::atoi(argv[++i]));
        else if (!std::strcmp(argv[i], "--header-timeout") && has_value)
            opts.header_timeout = std::chrono::seconds(std::max(1, std::atoi(argv[++i])));
        else if (!std::strcmp(argv[i], "--idle-timeout") && has_value)
            opts.idle_timeout = std::chrono::seconds(std::max(1, std::atoi(argv[++i])));
        else if (!std::strcmp(argv[i], "--max-body-bytes") && has_value)
            opts.body_limit = static_cast<std::size_t>(std::max(1LL, std::atoll(argv[++i])));
        else if (!std::strcmp(argv[i], "--max-header-bytes") && has_value)
            opts.header_limit = static_cast<std::size_t>(std::max(1LL, std::atoll(argv[++i])));
        else if (!std::strcmp(argv[i], "--token-file") && has_value)
            token_file = argv[++i];
        else if (!std::strcmp(argv[i], "--log-level") && has_value)
            log_level = argv[++i];
        else if (!std::strcmp(argv[i], "--no-auth"))
            no_auth = true;
        else if (!std::strcmp(argv[i], "--settings") && has_value)
            settings_file = argv[++i];
        else if (!std::strcmp(argv[i], "--project-dir") && has_value)
            sources.project_dir = argv[++i];
        else if (!std::strcmp(argv[i], "--trust-project"))
            sources.project_trusted = true;
        else if (!std::strcmp(argv[i], "--max-open-sessions") && has_value)
            opts.max_open_sessions = static_cast<std::size_t>(std::max(0, std::atoi(argv[++i])));
        else
        {
            std::fprintf(stderr, "usage: agent_server [--address A] [--port N] [--data-dir DIR | --store postgresql://...]\n"
                                 "                    [--threads N]\n"
                                 "                    [--header-timeout SECONDS (30)] [--idle-timeout SECONDS (60)]\n"
                                 "                    [--max-open-sessions N (256; 0 = no limit)]\n"
                                 "                    [--max-body-bytes N (16 MiB: 413)] [--max-header-bytes N (8 KiB: 431)]\n"
                                 "                    (--token-file FILE | --no-auth) [--log-level LEVEL (info)]\n"
                                 "                    [--settings FILE] [--project-dir DIR (.)] [--trust-project]\n"
                                 "Every request needs `Authorization: Bearer <token>`: the token is read from\n"
                                 "--token-file or AGENTCTX_SERVER_TOKEN; --no-auth serves without one (a warning).\n"
                                 "The server binds to 127.0.0.1 unless --address says otherwise.\n"
                                 "Idle sessions beyond --max-open-sessions are closed, least recently used first, and\n"
                                 "reopened from disk on their next request; when every open session is busy, a request\n"
                                 "that needs another one gets 503 too_many_open_sessions. Each open session holds two\n"
                                 "descriptors: keep 2 * N well under `ulimit -n`.\n"
                                 "Settings: --settings FILE (default: $PI_CODING_AGENT_DIR/settings.json or\n"
                                 "~/.pi/agent/settings.json), then DIR/.pi/settings.json with --trust-project.\n"
                                 "--store (or AGENTCTX_STORE) keeps sessions in PostgreSQL instead of files, shared by\n"
                                 "every node on that database (the schema is created or migrated at start).\n"
                                 "The model provider comes from the settings' \"provider\" section or the environment\n"
                                 "(see the README); offline otherwise.\n");
            return 2;
        }
    }
    if (log_level)
    {
        // trace, debug (one line per request), info (one per compaction), warn, err, critical, off.
        const auto level = spdlog::level::from_str(log_level);
        if (level == spdlog::level::off && std::strcmp(log_level, "off") != 0)
        {
            std::fprintf(stderr, "agent_server: unknown log level %s\n", log_level);
            return 2;
        }
        spdlog::set_level(level);
    }
    if (auto token = read_token(token_file, no_auth); !token)
        return 2;
    else
        opts.token = std::move(*token);
    if (settings_file && !std::filesystem::exists(settings_file))  // a named file must exist; the default need not
    {
        std::fprintf(stderr, "agent_server: cannot read the settings file %s\n", settings_file);
        return 2;
    }
    if (settings_file)
        sources.global = settings_file;
    boost::asio::io_context ioc(threads);
    // Settings files + environment -> provider -> model -> settings for that model (as the CLI).
    compaction::diagnostics sdiag;
    auto host = runtime::load_host_config({.sources = sources}, sdiag);
    if (!host)
    {
        if (host.error() == providers::make_error_code(providers::errc::not_configured))
            std::fprintf(stderr, "agent_server: %s\n", sdiag.message.c_str());
        else
            std::fprintf(stderr, "agent_server: %s: %s\n", host.error().message().c_str(), sdiag.message.c_str());
        return 2;
    }
    opts.model = host->model;
    if (const auto& cfg = host->provider)
    {
        // One HTTP client (curl multi handle, connection cache) per io thread, shared by every session.
        opts.make_summarizer = server::shared_http_summarizers(ioc.get_executor(), *cfg, static_cast<std::size_t>(threads));
        spdlog::info("summaries from {}:{} at {}", cfg->name, cfg->model, cfg->base_url);
    }
    else
    {
        // AGENTCTX_OFFLINE_DELAY_MS simulates a slow model (as in the CLI).
        const char* delay_env = std::getenv("AGENTCTX_OFFLINE_DELAY_MS");
        const auto delay = std::chrono::milliseconds(delay_env ? std::strtoll(delay_env, nullptr, 10) : 0);
        opts.make_summarizer = [delay](boost::asio::any_io_executor ex) {
            return std::make_shared<providers::offline_summarizer>(ex, delay);
        };
        spdlog::info("summaries from the offline summarizer (no provider configured)");
    }
    opts.settings = host->settings.compaction;
    opts.redaction = host->settings.redaction;
    opts.pins = host->settings.pins;
    spdlog::info("settings: keepRecentTokens={} reserveTokens={} (project {}{})", opts.settings.keep_recent_tokens,
                 opts.settings.reserve_tokens, sources.project_dir->string(), sources.project_trusted ? ", trusted" : ", not read");
    std::string where = opts.data_dir.string();
    if (store_url && *store_url)
    {
        opts.pg = std::make_shared<runtime::pg_pool>(ioc.get_executor(), store_url);
        std::optional<std::pair<boost::system::error_code, std::string>> migrated;
        opts.pg->async_migrate([&](boost::system::error_code ec, std::string m) { migrated.emplace(ec, std::move(m)); });
        while (!migrated)
            ioc.run_one();
        ioc.restart();  // in case it ran out of work with the migration (it stops then)
        if (migrated->first)
        {
            std::fprintf(stderr, "agent_server: %s\n", migrated->second.c_str());
            return 1;
        }
        where = "PostgreSQL " + runtime::redact_conninfo(store_url) + " (" + migrated->second + ")";
    }
    server::agent_server srv(ioc, opts);
    const auto port = srv.start();
    spdlog::info("listening on http://{}:{} with data in {}", opts.address, port, where);
    boost::asio::signal_set signals(ioc, SIGINT, SIGTERM);
    // Graceful shutdown: stop accepting and close every session (an in-flight compaction is
    // cancelled and writes nothing; appends are whole lines already synced), give the sessions'
    // strands a moment to unwind, then stop. Exit status 0.
    boost::asio::steady_timer drain(ioc);
    signals.async_wait([&](boost::system::error_code ec, int sig) {
        if (ec)
            return;
        spdlog::info("signal {}: shutting down", sig);
        srv.stop();
        if (opts.pg)
            opts.pg->close();
        drain.expires_after(std::chrono::milliseconds(200));
        drain.async_wait([&](boost::system::error_code) { ioc.stop(); });
    });
    std::vector<std::thread> pool;
    for (int i = 1; i < threads; ++i)
        pool.emplace_back([&] { ioc.run(); });
    ioc.run();
    for (auto& t : pool)
        t.join();
}
