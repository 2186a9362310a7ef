// `agentctx recover SESSION.jsonl`: offline recovery of a history far over the window, piece by
// piece with resumable progress; installs one compaction entry only once the final note validates.
#include "cli_common.hpp"
#include "cli_compaction_run.hpp"
#include "cli_session.hpp"
#include "commands.hpp"

#include <agentctx/runtime/error.hpp>
#include <agentctx/runtime/session.hpp>

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdio>
#include <unistd.h>

namespace agentctx::cli {

namespace {

const char* const recover_usage =
    "usage: agentctx recover SESSION.jsonl [--provider NAME] [--model M] [--base-url URL]\n"
    "                        [--max-source-chars N] [--max-calls N]\n"
    "                        [--keep-recent N] [--reserve N] [--context-window N] [--settings FILE]\n"
    "                        [--project-dir DIR [--trust-project]] [--json]\n"
    "\n"
    "Compacts an existing history of any size: the prefix is cut into complete exchange batches\n"
    "that each fit one summary request, summarized in order with a running note, and each finished\n"
    "piece is kept in the file as an `agentctx.compaction_progress` custom entry. Ctrl-C (or a\n"
    "crash) keeps the finished pieces; run the command again to continue. The compaction entry is\n"
    "appended only once the final note covers the whole prefix and validates. No tool runs and no\n"
    "model turn is taken. Holds the session's write lock throughout.\n"
    "\n"
    "  --max-source-chars N  the most serialized history one request carries "
    "(compaction.summaryMaxSourceChars;\n"
    "                        default: 60% of --context-window at 3 characters per token)\n"
    "  --max-calls N         stop after N model calls (compaction.summaryMaxCalls); the next run continues\n"
    "  --json                {\"compacted\", \"entryId\", \"evidence\", \"error\"}\n"
    "\n"
    "Provider and budget options as for `agentctx compact`.\n";

// A recovery that did not install its compaction: why, and how much of it the file keeps.
int report_unfinished(
    bool json,
    const compaction_run& run,
    const std::optional<runtime::compaction_evidence>& evidence,
    const boost::json::value& ev
)
{
    const std::string code_name = run.ec ? run.ec.message() : "not_compacted";
    std::string why = run.interrupted ? "interrupted" : run.outcome.message;
    if (evidence && evidence->pieces_completed > 0)
        why += "; " + std::to_string(evidence->pieces_completed) + " of " +
               std::to_string(evidence->pieces_total) +
               " pieces are kept in the file: run `agentctx recover` again to continue";
    if (json)
        print_json(boost::json::object{
            {"compacted", false},
            {"evidence", ev},
            {"error", boost::json::object{{"code", code_name}, {"message", why}}}});
    else
        std::fprintf(stderr, "agentctx: %s: %s\n", code_name.c_str(), why.c_str());
    return exit_failed;
}

// The answer for a recovery whose compaction entry was appended.
void print_recovered(
    bool json,
    const runtime::compaction_outcome& outcome,
    const std::optional<runtime::compaction_evidence>& evidence,
    const boost::json::value& ev,
    double secs
)
{
    if (json)
    {
        print_json(boost::json::object{
            {"compacted", true},
            {"entryId", outcome.entry_id},
            {"firstKeptEntryId", outcome.result->first_kept_entry_id},
            {"tokensBefore", outcome.result->tokens_before},
            {"tokensAfter", outcome.result->tokens_after},
            {"evidence", ev},
            {"error", nullptr}});
        return;
    }
    std::printf(
        "recovered: entry %s, kept from %s; %zu pieces (%zu resumed), %d calls, %.1fs\n",
        outcome.entry_id.c_str(),
        outcome.result->first_kept_entry_id.c_str(),
        evidence ? evidence->pieces_total : 1,
        evidence ? evidence->pieces_resumed : 0,
        evidence ? evidence->calls : 0,
        secs
    );
    std::printf(
        "tokens    %lld -> %lld\n",
        static_cast<long long>(outcome.result->tokens_before),
        static_cast<long long>(outcome.result->tokens_after)
    );
}

}  // namespace

int cmd_recover(int argc, char** argv)
{
    int code = exit_ok;
    auto a = command_args(
        argc, argv, "recover", recover_usage, session_valued_options, {"json", "trust-project"}, code
    );
    if (!a)
        return code;
    const bool json = a->has("json");
    boost::asio::io_context ioc(1);
    auto setup = cli_session_config(*a, json, ioc, code);
    if (!setup)
        return code;
    const std::string& path = a->positional[0];
    // The write lock, for the whole run.
    const auto session = open_writable_session(ioc, path, setup->config, json, false, code);
    if (!session)
        return code;

    const bool tty = !json && ::isatty(STDERR_FILENO);
    const auto started = std::chrono::steady_clock::now();
    const auto secs = [&] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    };
    std::size_t done = 0, left = 0;
    std::optional<runtime::compaction_evidence> evidence;
    session->on_event([&](const runtime::session_event& e) {
        if (const auto* p = std::get_if<runtime::compaction_progress_event>(&e))
        {
            done = p->completed;
            left = p->remaining;
            if (!json && !tty)
                std::fprintf(stderr, "piece %zu done, %zu remaining (%.1fs)\n", done, left, secs());
        }
        else if (const auto* f = std::get_if<runtime::compaction_finished_event>(&e))
            evidence = f->evidence;
    });
    if (!json)
        std::fprintf(
            stderr,
            "recovering %s with the %s summarizer...\n",
            path.c_str(),
            setup->config.summarizer->name().c_str()
        );

    const auto run =
        run_compaction(ioc, *session, std::nullopt, tty, !json && !tty, std::chrono::milliseconds(200), [&] {
            const double total = static_cast<double>(done + left);
            std::fprintf(
                stderr,
                "\r%s %zu/%s pieces, %.1fs",
                bar(total > 0 ? done / total : 0.0, 30).c_str(),
                done,
                total > 0 ? std::to_string(done + left).c_str() : "?",
                secs()
            );
        });
    const auto ev = evidence ? boost::json::value(runtime::to_json(*evidence)) : boost::json::value(nullptr);
    if (run.ec || !run.outcome.compacted)
        return report_unfinished(json, run, evidence, ev);
    print_recovered(json, run.outcome, evidence, ev, secs());
    return exit_ok;
}

}  // namespace agentctx::cli
