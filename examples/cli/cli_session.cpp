// The session configuration shared by `compact` and `checkpoint`.
#include "cli_session.hpp"

#include <agentctx/runtime/error.hpp>
#include <agentctx/runtime/jsonl_store.hpp>
#include <agentctx/runtime/memory_store.hpp>

#include <spdlog/logger.h>

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
    // No sinks: the CLI prints its own lines.
    out.config =
        runtime::make_session_config(*host, ioc.get_executor(), std::make_shared<spdlog::logger>("agentctx"));
    out.http = std::dynamic_pointer_cast<providers::http_summarizer>(out.config.summarizer);
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
