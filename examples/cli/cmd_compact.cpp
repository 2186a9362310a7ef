// `agentctx compact SESSION.jsonl`: the full runtime transaction; appends one compaction entry.
#include "cli_common.hpp"
#include "cli_session.hpp"
#include "commands.hpp"

#include <agentctx/compaction/json_text.hpp>
#include <agentctx/compaction/redaction.hpp>
#include <agentctx/providers/http_summarizer.hpp>
#include <agentctx/providers/offline_summarizer.hpp>
#include <agentctx/runtime/error.hpp>
#include <agentctx/runtime/session.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json/parse.hpp>
#include <spdlog/logger.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <unistd.h>

namespace agentctx::cli {

namespace {

const char* const compact_usage =
    "usage: agentctx compact SESSION.jsonl [--instructions TEXT] [--provider NAME] [--model M] [--base-url URL]\n"
    "                        [--dry-run]\n"
    "                        [--keep-recent N] [--reserve N] [--context-window N] [--settings FILE]\n"
    "                        [--project-dir DIR [--trust-project]] [--json]\n"
    "\n"
    "Runs a compaction: plans the cut, asks the summarizer for the checkpoint, validates it and\n"
    "appends one compaction entry. Ctrl-C cancels cleanly; the file is then unchanged.\n"
    "\n"
    "  --instructions TEXT  extra focus for the summary (as /compact TEXT)\n"
    "  --provider NAME      offline | openai | anthropic | openai-compatible | vllm | ollama | llamacpp.\n"
    "                       Default: from the settings file's \"provider\" section or the environment\n"
    "                       (AGENTCTX_PROVIDER, OPENAI_API_KEY, ANTHROPIC_API_KEY, ...); offline when none.\n"
    "  --model M, --base-url URL   override the provider's model and endpoint\n"
    "  --dry-run            run everything on a copy in memory and print the result; the file is untouched\n"
    "  --json               {\"compacted\", \"entryId\", \"firstKeptEntryId\", \"tokensBefore\", \"tokensAfter\",\n"
    "                        \"summary\", \"error\"}\n"
    "\n"
    "Environment: AGENTCTX_OFFLINE_DELAY_MS=N makes the offline summarizer take N ms (a simulated\n"
    "slow model, to watch progress or try Ctrl-C).\n";

}  // namespace

int cmd_compact(int argc, char** argv)
{
    int code = exit_ok;
    auto valued = session_valued_options;
    valued.push_back("instructions");
    auto a = command_args(argc, argv, "compact", compact_usage, valued, {"json", "dry-run", "trust-project"}, code);
    if (!a)
        return code;
    const bool json = a->has("json");
    boost::asio::io_context ioc(1);
    auto setup = cli_session_config(*a, json, ioc, code);
    if (!setup)
        return code;
    auto& config = setup->config;
    auto& http = setup->http;

    const std::string& path = a->positional[0];
    const auto session = open_writable_session(ioc, path, config, json, a->has("dry-run"), code);
    if (!session)
        return code;
    const auto before = session->current();
    if (!json)
        std::fprintf(stderr, "compacting %s with the %s summarizer%s...\n", path.c_str(), config.summarizer->name().c_str(),
                     a->has("dry-run") ? " (dry run)" : "");

    boost::asio::signal_set signals(ioc, SIGINT, SIGTERM);
    bool interrupted = false;
    signals.async_wait([&](boost::system::error_code ec, int) {
        if (ec)
            return;
        interrupted = true;
        session->abort_compaction();
    });
    // Progress: a spinner with elapsed time and streamed characters on a terminal.
    const bool tty = !json && ::isatty(STDERR_FILENO);
    std::size_t streamed = 0;
    if (http)
        http->on_progress([&](std::size_t n) { streamed = n; });
    const auto started = std::chrono::steady_clock::now();
    boost::asio::steady_timer ticker(ioc);
    bool finished = false;
    std::function<void(int)> tick = [&](int frame) {
        if (!tty || finished)
            return;
        static const char* const spin[] = {"|", "/", "-", "\\"};
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        std::fprintf(stderr, "\r%s %.1fs, %zu characters received", spin[frame % 4], secs, streamed);
        ticker.expires_after(std::chrono::milliseconds(100));
        ticker.async_wait([&, frame](boost::system::error_code ec) {
            if (!ec)
                tick(frame + 1);
        });
    };
    tick(0);
    boost::system::error_code result_ec;
    runtime::compaction_outcome outcome;
    session->async_compact(a->get("instructions"), [&](boost::system::error_code ec, runtime::compaction_outcome o) {
        result_ec = ec;
        outcome = std::move(o);
        signals.cancel();
        finished = true;
        ticker.cancel();
    });
    ioc.run();
    if (tty)
        std::fputs("\r\033[K", stderr);
    if (!json && http)
        std::fprintf(stderr, "model replied with %zu characters in %.1fs\n", streamed,
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());

    if (result_ec || !outcome.compacted)
    {
        const std::string code_name = result_ec ? result_ec.message() : "not_compacted";
        std::string why = interrupted ? "interrupted: the file is unchanged" : outcome.message;
        print_error(json, code_name, why);
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
            {"contextMessagesAfter", session->current()->messages.size()},
            {"summary", r.summary},
            {"error", nullptr},
        });
        return exit_ok;
    }
    std::printf("compacted%s: entry %s, kept from %s\n", a->has("dry-run") ? " (dry run, file untouched)" : "",
                outcome.entry_id.c_str(), r.first_kept_entry_id.c_str());
    std::printf("tokens    %lld -> %lld; messages %zu -> %zu\n\n", static_cast<long long>(r.tokens_before),
                static_cast<long long>(r.tokens_after), before->messages.size(), session->current()->messages.size());
    std::printf("%s\n", r.summary.c_str());
    return exit_ok;
}

}  // namespace agentctx::cli
