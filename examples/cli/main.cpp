// agentctx: inspect, plan and compact Pi-format agent sessions from the command line.
#include "cli_common.hpp"
#include "cli_pg.hpp"
#include "commands.hpp"

#include <cstdio>
#include <cstring>

namespace {

const char* const usage_text =
    "usage: agentctx <command> [options]\n"
    "\n"
    "commands:\n"
    "  inspect SESSION.jsonl [--json]   header, entry counts, branches, compactions, usage\n"
    "  context SESSION.jsonl [--json]   the messages the next model request would carry\n"
    "  plan SESSION.jsonl [--json]      dry run: what a compaction would summarize and keep\n"
    "  compact SESSION.jsonl [--json]   run a compaction and append its entry (Ctrl-C cancels)\n"
    "  migrate SESSION.jsonl [--json]   upgrade a v1/v2 file to v3, atomically\n"
    "  checkpoint export|restore|status SESSION.jsonl [RECORD]\n"
    "                                   portable checkpoints: export the latest, restore one, show it\n"
    "  verify SESSION.jsonl [--json]    does each compaction's covered history still hash as recorded?\n"
    "  export postgresql://...#ID OUT.jsonl   a PostgreSQL session as a Pi JSONL file, byte for byte\n"
    "  import SESSION.jsonl postgresql://...  store a session file in PostgreSQL\n"
    "\n"
    "Read commands (inspect, context, plan, checkpoint export|status, verify) also accept a\n"
    "PostgreSQL session reference, postgresql://...#SESSION_ID, in place of SESSION.jsonl.\n"
    "  recover SESSION.jsonl [--json]   compact a history far over the window piece by piece (resumable)\n"
    "  simulate SESSION.jsonl... [--json]  what each compaction policy bills on recorded sessions\n"
    "  probe SESSION.jsonl... [--json]  which user rules, files, open work and decisions each recorded\n"
    "                                   compaction's summary kept (the recall probes)\n"
    "  advise --stdio                   the Pi extension's advisor: JSON lines on stdin and stdout\n"
    "\n"
    "Run `agentctx <command> --help` for a command's options.\n"
    "\n"
    "exit codes:\n"
    "  0  success\n"
    "  1  the operation ran and failed\n"
    "  2  bad command line\n"
    "  3  the session file is invalid (the error code and line are printed)\n"
    "  4  missing or unreadable file\n"
    "  5  the session file is locked by another writer\n";

}  // namespace

int main(int argc, char** argv)
{
    if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") ||
        !std::strcmp(argv[1], "help"))
    {
        std::fputs(usage_text, argc < 2 ? stderr : stdout);
        return argc < 2 ? agentctx::cli::exit_usage : agentctx::cli::exit_ok;
    }
    if (!std::strcmp(argv[1], "context"))
        return agentctx::cli::cmd_context(argc, argv);
    if (!std::strcmp(argv[1], "plan"))
        return agentctx::cli::cmd_plan(argc, argv);
    if (!std::strcmp(argv[1], "inspect"))
        return agentctx::cli::cmd_inspect(argc, argv);
    if (!std::strcmp(argv[1], "compact"))
        return agentctx::cli::cmd_compact(argc, argv);
    if (!std::strcmp(argv[1], "migrate"))
        return agentctx::cli::cmd_migrate(argc, argv);
    if (!std::strcmp(argv[1], "checkpoint"))
        return agentctx::cli::cmd_checkpoint(argc, argv);
    if (!std::strcmp(argv[1], "export"))
        return agentctx::cli::cmd_export(argc, argv);
    if (!std::strcmp(argv[1], "import"))
        return agentctx::cli::cmd_import(argc, argv);
    if (!std::strcmp(argv[1], "recover"))
        return agentctx::cli::cmd_recover(argc, argv);
    if (!std::strcmp(argv[1], "verify"))
        return agentctx::cli::cmd_verify(argc, argv);
    if (!std::strcmp(argv[1], "simulate"))
        return agentctx::cli::cmd_simulate(argc, argv);
    if (!std::strcmp(argv[1], "probe"))
        return agentctx::cli::cmd_probe(argc, argv);
    if (!std::strcmp(argv[1], "advise"))
        return agentctx::cli::cmd_advise(argc, argv);
    std::fprintf(stderr, "agentctx: unknown command '%s'\n\n%s", argv[1], usage_text);
    return agentctx::cli::exit_usage;
}
