// agent_server: an HTTP server that keeps agent sessions compacted (see server.hpp for endpoints).
#include "descriptor_budget.hpp"
#include "server.hpp"
#include "summarizers.hpp"

#include <agentctx/providers/error.hpp>
#include <agentctx/providers/provider_url.hpp>
#include <agentctx/runtime/host_config.hpp>
#include <agentctx/runtime/settings_files.hpp>

#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <spdlog/spdlog.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

namespace {

using namespace agentctx;

constexpr const char* usage =
    "usage: agent_server [--address A] [--port N] [--data-dir DIR | --store postgresql://...]\n"
    "                    [--threads N]\n"
    "                    [--header-timeout SECONDS (30)] [--idle-timeout SECONDS (60)]\n"
    "                    [--max-open-sessions N] [--max-connections N] (0 = no limit; default: from ulimit "
    "-n)\n"
    "                    [--max-body-bytes N (16 MiB: 413)] [--max-header-bytes N (8 KiB: 431)]\n"
    "                    (--token-file FILE | --no-auth) [--log-level LEVEL (info)]\n"
    "                    [--settings FILE] [--project-dir DIR (.)] [--trust-project]\n"
    "Every request needs `Authorization: Bearer <token>`: the token is read from\n"
    "--token-file or AGENTCTX_SERVER_TOKEN; --no-auth serves without one (a warning).\n"
    "The server binds to 127.0.0.1 unless --address says otherwise.\n"
    "Idle sessions beyond --max-open-sessions are closed, least recently used first, and\n"
    "reopened from disk on their next request; when every open session is busy, a request\n"
    "that needs another one gets 503 too_many_open_sessions. Beyond --max-connections the\n"
    "longest-idle connection is closed, or the new one gets 503 too_many_connections. Each\n"
    "open session and each connection holds one descriptor: by default half of what\n"
    "`ulimit -n` leaves (after the process's own) goes to each.\n"
    "Settings: --settings FILE (default: $PI_CODING_AGENT_DIR/settings.json or\n"
    "~/.pi/agent/settings.json), then DIR/.pi/settings.json with --trust-project.\n"
    "--store (or AGENTCTX_STORE) keeps sessions in PostgreSQL instead of files, shared by\n"
    "every node on that database (the schema is created or migrated at start).\n"
    "The model provider comes from the settings' \"provider\" section or the environment\n"
    "(see the README); offline otherwise.\n";

// What the command line says, before anything is read or opened.
struct command_line
{
    server::server_options opts;
    int threads = 1;
    const char* token_file = nullptr;
    bool no_auth = false;
    const char* log_level = std::getenv("AGENTCTX_LOG_LEVEL");
    // Settings as the CLI reads them (runtime::host_settings_sources): --settings FILE (else the
    // global file), then the project's .pi/settings.json only with --trust-project (the project
    // is --project-dir, else the server's working directory; never a session's client-supplied cwd).
    std::optional<std::filesystem::path> settings_file;
    std::filesystem::path project_dir = std::filesystem::current_path();
    bool project_trusted = false;
    const char* store_url = std::getenv("AGENTCTX_STORE");
    std::optional<std::size_t> max_open_sessions, max_connections;  ///< nullopt: from RLIMIT_NOFILE
};

std::size_t size_arg(const char* v)
{
    return static_cast<std::size_t>(std::max(0LL, std::atoll(v)));
}

// The flags that take a value, each with what it sets.
std::vector<std::pair<std::string_view, std::function<void(command_line&, const char*)>>> valued_flags()
{
    using std::chrono::seconds;
    return {
        {"--port",
         [](command_line& c, const char* v) { c.opts.port = static_cast<std::uint16_t>(std::atoi(v)); }},
        {"--store", [](command_line& c, const char* v) { c.store_url = v; }},
        {"--data-dir", [](command_line& c, const char* v) { c.opts.data_dir = v; }},
        {"--address", [](command_line& c, const char* v) { c.opts.address = v; }},
        {"--threads", [](command_line& c, const char* v) { c.threads = std::max(1, std::atoi(v)); }},
        {"--header-timeout",
         [](command_line& c, const char* v) { c.opts.header_timeout = seconds(std::max(1, std::atoi(v))); }},
        {"--idle-timeout",
         [](command_line& c, const char* v) { c.opts.idle_timeout = seconds(std::max(1, std::atoi(v))); }},
        {"--max-body-bytes",
         [](command_line& c, const char* v) { c.opts.body_limit = std::max<std::size_t>(1, size_arg(v)); }},
        {"--max-header-bytes",
         [](command_line& c, const char* v) { c.opts.header_limit = std::max<std::size_t>(1, size_arg(v)); }},
        {"--token-file", [](command_line& c, const char* v) { c.token_file = v; }},
        {"--log-level", [](command_line& c, const char* v) { c.log_level = v; }},
        {"--settings", [](command_line& c, const char* v) { c.settings_file = v; }},
        {"--project-dir", [](command_line& c, const char* v) { c.project_dir = v; }},
        {"--max-open-sessions", [](command_line& c, const char* v) { c.max_open_sessions = size_arg(v); }},
        {"--max-connections", [](command_line& c, const char* v) { c.max_connections = size_arg(v); }},
    };
}

// The command line, or nullopt after printing the usage.
std::optional<command_line> parse_arguments(int argc, char** argv)
{
    command_line c;
    c.opts.data_dir = "agent-data";
    c.opts.port = 8080;
    const auto flags = valued_flags();
    for (int i = 1; i < argc; ++i)
    {
        const std::string_view arg = argv[i];
        const auto flag =
            std::find_if(flags.begin(), flags.end(), [&](const auto& f) { return f.first == arg; });
        if (flag != flags.end() && i + 1 < argc)
            flag->second(c, argv[++i]);
        else if (arg == "--no-auth")
            c.no_auth = true;
        else if (arg == "--trust-project")
            c.project_trusted = true;
        else
        {
            std::fputs(usage, stderr);
            return std::nullopt;
        }
    }
    return c;
}

// trace, debug (one line per request), info (one per compaction), warn, err, critical, off.
bool apply_log_level(const char* name)
{
    if (!name)
        return true;
    const auto level = spdlog::level::from_str(name);
    if (level == spdlog::level::off && std::strcmp(name, "off") != 0)
    {
        std::fprintf(stderr, "agent_server: unknown log level %s\n", name);
        return false;
    }
    spdlog::set_level(level);
    return true;
}

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
        spdlog::warn(
            "authentication is off (--no-auth): anyone who reaches the port can read and write every session"
        );
        return std::optional<std::string>();
    }
    std::fprintf(
        stderr, "agent_server: no token: use --token-file FILE or AGENTCTX_SERVER_TOKEN, or --no-auth\n"
    );
    return std::nullopt;
}

// The sessions' summarizers: with a provider, one HTTP client (curl multi handle, connection
// cache) per io thread, shared by every session; else the host's default (the offline summarizer).
void share_summarizers(runtime::host_config& host, boost::asio::io_context& ioc, int threads)
{
    if (!host.provider)
    {
        spdlog::info("summaries from the offline summarizer (no provider configured)");
        return;
    }
    spdlog::info(
        "summaries from {}:{} at {}",
        host.provider->name,
        host.provider->model,
        providers::mask_url(host.provider->base_url)
    );
    host.make_summarizer = server::shared_http_summarizers(
        ioc.get_executor(), *host.provider, static_cast<std::size_t>(threads)
    );
}

// Settings files + environment → provider → the host configuration every session is built from
// (the model, its summarizer, the compaction settings, redaction and pins). False after saying why.
bool configure_sessions(command_line& c, boost::asio::io_context& ioc)
{
    // Settings files + environment -> provider -> model -> settings for that model (as the CLI).
    runtime::host_inputs in;
    in.sources = runtime::host_settings_sources(c.settings_file, c.project_dir, c.project_trusted);
    compaction::diagnostics sdiag;
    auto host = runtime::load_host_config(in, sdiag);
    if (!host)
    {
        if (host.error() == providers::make_error_code(providers::errc::not_configured))
            std::fprintf(stderr, "agent_server: %s\n", sdiag.message.c_str());
        else
            std::fprintf(
                stderr, "agent_server: %s: %s\n", host.error().message().c_str(), sdiag.message.c_str()
            );
        return false;
    }
    share_summarizers(*host, ioc, c.threads);
    const auto& settings = host->settings.compaction;
    spdlog::info(
        "settings: keepRecentTokens={} reserveTokens={} (project {}{})",
        settings.keep_recent_tokens,
        settings.reserve_tokens,
        c.project_dir.string(),
        c.project_trusted ? ", trusted" : ", not read"
    );
    c.opts.host = std::move(*host);
    return true;
}

// Opens and migrates the PostgreSQL store when one is named; where the sessions are kept, or
// nullopt after saying why not.
// The data directory exists (created if need be) and a file can be created in it: a server that
// could not write a session would start and answer 500 to everything.
bool data_dir_writable(const std::filesystem::path& dir)
{
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    std::string why = ec ? ec.message() : std::string();
    if (!ec)
    {
        const auto probe = dir / (".agentctx-write-check-" + std::to_string(::getpid()));
        const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0)
            why = std::strerror(errno);
        else
        {
            ::close(fd);
            ::unlink(probe.c_str());
        }
    }
    if (why.empty())
        return true;
    std::fprintf(
        stderr, "agent_server: the data directory %s is not writable: %s\n", dir.c_str(), why.c_str()
    );
    return false;
}

std::optional<std::string> connect_store(command_line& c, boost::asio::io_context& ioc)
{
    if (!c.store_url || !*c.store_url)
    {
        if (!data_dir_writable(c.opts.data_dir))
            return std::nullopt;
        return c.opts.data_dir.string();
    }
    c.opts.pg = std::make_shared<runtime::pg_pool>(ioc.get_executor(), c.store_url);
    std::optional<std::pair<boost::system::error_code, std::string>> migrated;
    c.opts.pg->async_migrate([&](boost::system::error_code ec, std::string m) {
        migrated.emplace(ec, std::move(m));
    });
    while (!migrated)
        ioc.run_one();
    ioc.restart();  // in case it ran out of work with the migration (it stops then)
    if (migrated->first)
    {
        std::fprintf(stderr, "agent_server: %s\n", migrated->second.c_str());
        return std::nullopt;
    }
    return "PostgreSQL " + runtime::redact_conninfo(c.store_url) + " (" + migrated->second + ")";
}

// The session and connection caps: as given, else shared out of the descriptor limit.
void apply_descriptor_budget(command_line& c)
{
    rlimit lim{};
    const std::uint64_t nofile =
        ::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY ? lim.rlim_cur : 1u << 20;
    const runtime::pg_pool_options pg_defaults;
    const std::size_t database = c.opts.pg ? pg_defaults.max_connections + 2 : 0;  // + LISTEN and a lease
    const auto b = server::budget_for(
        nofile, static_cast<std::size_t>(c.threads), c.opts.open_threads + c.opts.create_threads, database
    );
    c.opts.max_open_sessions = c.max_open_sessions.value_or(b.max_open_sessions);
    c.opts.max_connections = c.max_connections.value_or(b.max_connections);
    spdlog::info(
        "limits: {} open sessions, {} connections (descriptor limit {})",
        c.opts.max_open_sessions,
        c.opts.max_connections,
        nofile
    );
}

// Runs the server until SIGINT or SIGTERM. Graceful shutdown: stop accepting and close every
// session (an in-flight compaction is cancelled and writes nothing; appends are whole lines
// already synced), give the sessions' strands a moment to unwind, then stop.
void run_until_signalled(boost::asio::io_context& ioc, server::agent_server& srv, const command_line& c)
{
    boost::asio::signal_set signals(ioc, SIGINT, SIGTERM);
    boost::asio::steady_timer drain(ioc);
    signals.async_wait([&](boost::system::error_code ec, int sig) {
        if (ec)
            return;
        spdlog::info("signal {}: shutting down", sig);
        srv.stop();
        if (c.opts.pg)
            c.opts.pg->close();
        drain.expires_after(std::chrono::milliseconds(200));
        drain.async_wait([&](boost::system::error_code) { ioc.stop(); });
    });
    std::vector<std::thread> pool;
    for (int i = 1; i < c.threads; ++i)
        pool.emplace_back([&] { ioc.run(); });
    ioc.run();
    for (auto& t : pool)
        t.join();
}

}  // namespace

int main(int argc, char** argv)
{
    auto c = parse_arguments(argc, argv);
    if (!c)
        return 2;
    if (!apply_log_level(c->log_level))
        return 2;
    auto token = read_token(c->token_file, c->no_auth);
    if (!token)
        return 2;
    c->opts.token = std::move(*token);
    boost::asio::io_context ioc(c->threads);
    if (!configure_sessions(*c, ioc))
        return 2;
    const auto where = connect_store(*c, ioc);
    if (!where)
        return 1;
    apply_descriptor_budget(*c);
    agentctx::server::agent_server srv(ioc, c->opts);
    const auto port = srv.start();
    spdlog::info("listening on http://{}:{} with data in {}", c->opts.address, port, *where);
    run_until_signalled(ioc, srv, *c);
}
