// `agentctx compact SESSION.jsonl`: the full runtime transaction; appends one compaction entry.
#include "cli_common.hpp"
#include "cli_compaction_run.hpp"
#include "cli_session.hpp"
#include "commands.hpp"

#include <agentctx/compaction/json_text.hpp>
#include <agentctx/compaction/redaction.hpp>
#include <agentctx/providers/http_summarizer.hpp>
#include <agentctx/providers/offline_summarizer.hpp>
#include <agentctx/runtime/error.hpp>
#include <agentctx/runtime/session.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>
#include <spdlog/logger.h>

#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace agentctx::cli {

namespace {

const char* const compact_usage =
    "usage: agentctx compact SESSION.jsonl [--instructions TEXT] [--provider NAME] [--model M] [--base-url "
    "URL]\n"
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
    "  --json               {\"compacted\", \"entryId\", \"firstKeptEntryId\", \"tokensBefore\", "
    "\"tokensAfter\",\n"
    "                        \"summary\", \"error\"}\n"
    "\n"
    "Environment: AGENTCTX_OFFLINE_DELAY_MS=N makes the offline summarizer take N ms (a simulated\n"
    "slow model, to watch progress or try Ctrl-C).\n";

// The answer for a compaction that was appended (or, with --dry-run, made in memory).
void print_compacted(
    bool json,
    bool dry_run,
    const runtime::compaction_outcome& outcome,
    std::size_t messages_before,
    std::size_t messages_after
)
{
    const auto& r = *outcome.result;
    if (json)
    {
        print_json(boost::json::object{
            {"compacted", true},
            {"dryRun", dry_run},
            {"entryId", outcome.entry_id},
            {"firstKeptEntryId", r.first_kept_entry_id},
            {"tokensBefore", r.tokens_before},
            {"tokensAfter", r.tokens_after},
            {"contextMessagesBefore", messages_before},
            {"contextMessagesAfter", messages_after},
            {"summary", r.summary},
            {"error", nullptr},
        });
        return;
    }
    std::printf(
        "compacted%s: entry %s, kept from %s\n",
        dry_run ? " (dry run, file untouched)" : "",
        outcome.entry_id.c_str(),
        r.first_kept_entry_id.c_str()
    );
    std::printf(
        "tokens    %lld -> %lld; messages %zu -> %zu\n\n",
        static_cast<long long>(r.tokens_before),
        static_cast<long long>(r.tokens_after),
        messages_before,
        messages_after
    );
    std::printf("%s\n", r.summary.c_str());
}

}  // namespace

int cmd_compact(int argc, char** argv)
{
    int code = exit_ok;
    auto valued = session_valued_options;
    valued.push_back("instructions");
    auto a = command_args(
        argc, argv, "compact", compact_usage, valued, {"json", "dry-run", "trust-project"}, code
    );
    if (!a)
        return code;
    const bool json = a->has("json");
    const bool dry_run = a->has("dry-run");
    boost::asio::io_context ioc(1);
    auto setup = cli_session_config(*a, json, ioc, code);
    if (!setup)
        return code;
    auto& config = setup->config;
    auto& http = setup->http;

    const std::string& path = a->positional[0];
    const auto session = open_writable_session(ioc, path, config, json, dry_run, code);
    if (!session)
        return code;
    const auto before = session->current();
    if (!json)
        std::fprintf(
            stderr,
            "compacting %s with the %s summarizer%s...\n",
            path.c_str(),
            config.summarizer->name().c_str(),
            dry_run ? " (dry run)" : ""
        );

    // Progress: a spinner with elapsed time and streamed characters on a terminal.
    const bool tty = !json && ::isatty(STDERR_FILENO);
    std::size_t streamed = 0;
    if (http)
        http->on_progress([&](std::size_t n) { streamed = n; });
    const auto started = std::chrono::steady_clock::now();
    const auto secs = [&] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    };
    const auto run = run_compaction(
        ioc,
        *session,
        a->get("instructions"),
        tty,
        !json && !tty,
        std::chrono::milliseconds(100),
        [&, frame = 0]() mutable {
            static const char* const spin[] = {"|", "/", "-", "\\"};
            std::fprintf(stderr, "\r%s %.1fs, %zu characters received", spin[frame++ % 4], secs(), streamed);
        }
    );
    if (!json && http)
        std::fprintf(stderr, "model replied with %zu characters in %.1fs\n", streamed, secs());

    if (run.ec || !run.outcome.compacted)
    {
        const std::string code_name = run.ec ? run.ec.message() : "not_compacted";
        print_error(
            json, code_name, run.interrupted ? "interrupted: the file is unchanged" : run.outcome.message
        );
        return exit_failed;
    }
    print_compacted(json, dry_run, run.outcome, before->messages.size(), session->current()->messages.size());
    return exit_ok;
}

}  // namespace agentctx::cli
