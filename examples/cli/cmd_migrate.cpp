// `agentctx migrate SESSION.jsonl`: explicit, atomic upgrade of a v1/v2 file to v3.
#include "cli_common.hpp"
#include "commands.hpp"

#include <agentctx/runtime/error.hpp>
#include <agentctx/runtime/jsonl_store.hpp>

#include <cstdio>

namespace agentctx::cli {

namespace {

const char* const migrate_usage =
    "usage: agentctx migrate SESSION.jsonl [--json]\n\n"
    "Rewrites a v1/v2 session as v3 (ids, parent links, firstKeptEntryId, custom roles),\n"
    "atomically: a temporary file is written, synced and renamed over the original.\n"
    "A v3 file is left untouched.\n";

}  // namespace

int cmd_migrate(int argc, char** argv)
{
    int code = exit_ok;
    auto a = command_args(argc, argv, "migrate", migrate_usage, {}, {"json"}, code);
    if (!a)
        return code;
    const bool json = a->has("json");
    compaction::diagnostics diag;
    auto r = runtime::migrate_file(a->positional[0], diag);
    if (!r)
    {
        print_error(json, r.error().message(), diag.message);
        if (r.error() == runtime::make_error_code(runtime::errc::session_locked))
            return exit_locked;
        return r.error().category() == runtime::error_category() ? exit_io : exit_bad_session;
    }
    const bool migrated = *r == runtime::migrate_outcome::migrated;
    if (json)
        print_json(boost::json::object{{"migrated", migrated}});
    else
        std::printf("%s\n", migrated ? "migrated to v3" : "already v3: nothing to do");
    return exit_ok;
}

}  // namespace agentctx::cli
