// `agentctx compact SESSION.jsonl`: the full runtime transaction; appends one compaction entry.
#include "cli_common.hpp"
#include "commands.hpp"

#include <agentctx/compaction/json_text.hpp>
#include <agentctx/providers/offline_summarizer.hpp>
#include <agentctx/runtime/error.hpp>
#include <agentctx/runtime/jsonl_store.hpp>
#include <agentctx/runtime/memory_store.hpp>
#include <agentctx/runtime/session.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <spdlog/logger.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace agentctx::cli {

namespace {

const char* const compact_usage =
    "usage: agentctx compact SESSION.jsonl [--instructions TEXT] [--provider offline] [--dry-run]\n"
    "                        [--keep-recent N] [--reserve N] [--context-window N] [--settings FILE] [--json]\n"
    "\n"
    "Runs a compaction: plans the cut, asks the summarizer for the checkpoint, validates it and\n"
    "appends one compaction entry. Ctrl-C cancels cleanly; the file is then unchanged.\n"
    "\n"
    "  --instructions TEXT  extra focus for the summary (as /compact TEXT)\n"
    "  --provider offline   the summarizer (offline: deterministic, no network; the default)\n"
    "  --dry-run            run everything on a copy in memory and print the result; the file is untouched\n"
    "  --json               {\"compacted\", \"entryId\", \"firstKeptEntryId\", \"tokensBefore\", \"tokensAfter\",\n"
    "                        \"summary\", \"error\"}\n"
    "\n"
    "Environment: AGENTCTX_OFFLINE_DELAY_MS=N makes the offline summarizer take N ms (a simulated\n"
    "slow model, to watch progress or try Ctrl-C).\n";

}  // namespace

int cmd_compact(int argc, char** argv)
{
    std::string error;
    auto a = parse_args(argc, argv, 2,
                        {"instructions", "provider", "model", "base-url", "keep-recent", "reserve", "context-window", "settings"},
                        {"json", "help", "dry-run"}, error);
    if (!a || a->has("help") || a->positional.size() != 1)
    {
        std::fputs(compact_usage, a && a->has("help") ? stdout : stderr);
        if (!error.empty())
            std::fprintf(stderr, "agentctx compact: %s\n", error.c_str());
        return a && a->has("help") ? exit_ok : exit_usage;
    }
    const bool json = a->has("json");
    const std::string provider = a->get("provider").value_or("offline");
    if (provider != "offline")
    {
        print_error(json, "invalid_request", "provider '" + provider + "' is not available in this build; use --provider offline");
        return exit_usage;
    }
    int code = exit_ok;
    bool ok = true;
    const auto window = count_option(*a, "context-window", 200000, ok);
    if (!ok)
        return exit_usage;
    auto settings = cli_settings(*a, json, code);
    if (!settings)
        return code;

    const std::string& path = a->positional[0];
    compaction::diagnostics diag;
    std::unique_ptr<runtime::store> store;
    if (a->has("dry-run"))
    {
        std::ifstream in(path, std::ios::binary);
        if (!in)
        {
            print_error(json, "not_found", "no session file at '" + path + "'");
            return exit_io;
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
            return s.error() == runtime::make_error_code(runtime::errc::session_locked) ? exit_locked : exit_io;
        }
        store = std::move(*s);
    }

    boost::asio::io_context ioc(1);
    runtime::session_config config;
    config.settings = *settings;
    config.model.context_window = *window;
    // AGENTCTX_OFFLINE_DELAY_MS simulates a slow model (to see progress and try Ctrl-C).
    const char* delay_env = std::getenv("AGENTCTX_OFFLINE_DELAY_MS");
    const auto delay = std::chrono::milliseconds(delay_env ? std::strtoll(delay_env, nullptr, 10) : 0);
    config.summarizer = std::make_shared<providers::offline_summarizer>(ioc.get_executor(), delay);
    config.logger = std::make_shared<spdlog::logger>("agentctx");  // no sinks: the CLI prints its own lines
    auto session = runtime::session::open(ioc.get_executor(), std::move(store), config, diag);
    if (!session)
    {
        print_error(json, session.error().message(), path + ": " + diag.message);
        return exit_bad_session;
    }
    const auto before = (*session)->current();
    if (!json)
        std::fprintf(stderr, "compacting %s with the %s summarizer%s...\n", path.c_str(), config.summarizer->name().c_str(),
                     a->has("dry-run") ? " (dry run)" : "");

    boost::asio::signal_set signals(ioc, SIGINT, SIGTERM);
    bool interrupted = false;
    signals.async_wait([&](boost::system::error_code ec, int) {
        if (ec)
            return;
        interrupted = true;
        (*session)->abort_compaction();
    });
    boost::system::error_code result_ec;
    runtime::compaction_outcome outcome;
    (*session)->async_compact(a->get("instructions"), [&](boost::system::error_code ec, runtime::compaction_outcome o) {
        result_ec = ec;
        outcome = std::move(o);
        signals.cancel();
    });
    ioc.run();

    if (result_ec || !outcome.compacted)
    {
        const std::string code_name = result_ec ? result_ec.message() : "not_compacted";
        print_error(json, code_name, interrupted ? "interrupted: the file is unchanged" : outcome.message);
        return exit_failed;
    }
    const auto& r = *outcome.result;
    if (json)
    {
        print_json(boost::json::object{
            {"compacted", true},
            {"dryRun", a->has("dry-run")},
            {"entryId", outcome.entry_id},
            {"firstKeptEntryId", r.first_kept_entry_id},
            {"tokensBefore", r.tokens_before},
            {"tokensAfter", r.tokens_after},
            {"contextMessagesBefore", before->messages.size()},
            {"contextMessagesAfter", (*session)->current()->messages.size()},
            {"summary", r.summary},
            {"error", nullptr},
        });
        return exit_ok;
    }
    std::printf("compacted%s: entry %s, kept from %s\n", a->has("dry-run") ? " (dry run, file untouched)" : "",
                outcome.entry_id.c_str(), r.first_kept_entry_id.c_str());
    std::printf("tokens    %lld -> %lld; messages %zu -> %zu\n\n", static_cast<long long>(r.tokens_before),
                static_cast<long long>(r.tokens_after), before->messages.size(), (*session)->current()->messages.size());
    std::printf("%s\n", r.summary.c_str());
    return exit_ok;
}

}  // namespace agentctx::cli
