// `agentctx checkpoint export|restore|status` and `agentctx verify`: portable checkpoints.
#include "cli_common.hpp"
#include "cli_session.hpp"
#include "commands.hpp"

#include <agentctx/compaction/checkpoint.hpp>
#include <agentctx/compaction/json_text.hpp>
#include <agentctx/compaction/record_checks.hpp>
#include <agentctx/runtime/snapshot.hpp>
#include <agentctx/runtime/error.hpp>

#include <boost/json/parse.hpp>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <sstream>

namespace agentctx::cli {

namespace {

const char* const checkpoint_usage =
    "usage: agentctx checkpoint export  SESSION.jsonl [--json]\n"
    "       agentctx checkpoint restore SESSION.jsonl RECORD [summarizer and budget flags] [--json]\n"
    "       agentctx checkpoint status  SESSION.jsonl [summarizer and budget flags] [--json]\n"
    "\n"
    "Portable checkpoints (format agentctx-checkpoint-v1).\n"
    "  export   prints the latest compaction on the active path as a record (JSON); writes nothing\n"
    "  restore  appends the record (RECORD: a file, or - for stdin) as one compaction entry when the\n"
    "           whole covered prefix of SESSION matches it and this configuration (the summarizer and\n"
    "           budget flags of `agentctx compact`) is the one that wrote it; otherwise refuses with\n"
    "           a named reason (replaced, shortened, corrupt, unsupported_format, other_identity,\n"
    "           other_configuration) and leaves the file byte-identical\n"
    "  status   the latest compaction's record: covered entries, whether its prefix still hashes as\n"
    "           recorded, and whether this configuration matches it\n"
    "\n"
    "Summarizer and budget flags: --provider NAME --model M --base-url URL --keep-recent N --reserve N\n"
    "  --context-window N --settings FILE --project-dir DIR [--trust-project] (see `compact --help`).\n";

const char* const verify_usage =
    "usage: agentctx verify SESSION.jsonl [--json]\n"
    "\n"
    "For every compaction entry: whether the history it covers still hashes as its recorded\n"
    "sourceRevision (ok), does not (changed: the history was edited), or has none (unrecorded).\n"
    "Exits 1 when any is changed. Never writes.\n"
    "  --json  {\"compactions\": [{\"id\", \"line\", \"covered\", \"sourceRevision\", \"actual\", "
    "\"status\"}], \"changed\"}\n";

// A refusal: the code, the named reason, and that nothing was touched.
void print_rejection(bool json, std::string_view code, std::string_view reason, std::string_view message)
{
    if (json)
    {
        print_json(boost::json::object{
            {"error",
             boost::json::object{
                 {"code", code}, {"reason", reason}, {"message", message}, {"originalsAvailable", true}}}});
        return;
    }
    std::cerr << "agentctx: " << code << " (" << reason << "): " << message
              << "\n  nothing was written; the original entries are unchanged (originalsAvailable: true)\n";
}

std::optional<std::string> read_record(const std::string& where)
{
    if (where == "-")
        return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    std::ifstream in(where, std::ios::binary);
    if (!in)
        return std::nullopt;
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

int checkpoint_export(const args& a)
{
    const bool json = a.has("json");
    int code = exit_ok;
    auto opened = open_session(a.positional[0], json, code);
    if (!opened)
        return code;
    const auto c = compaction::latest_compaction(opened->log);
    if (!c)
    {
        print_rejection(
            json, "checkpoint_unavailable", "no_compaction", "the active path has no compaction to export"
        );
        return exit_failed;
    }
    compaction::checkpoint_reason why{};
    compaction::diagnostics diag;
    auto r = compaction::make_checkpoint(opened->log, *c, why, diag);
    if (!r)
    {
        print_rejection(json, r.error().message(), compaction::to_string(why), diag.message);
        return exit_failed;
    }
    // Secrets a compaction carries from before its details were redacted stay out of the record.
    auto redactor = compaction::redactor::create(compaction::redaction_settings{}, diag);
    std::map<std::string, std::size_t> counts;
    if (redactor)
        compaction::redact_record(*r, *redactor, counts);
    if (!counts.empty())
        r->digest = compaction::record_digest(*r);
    print_json(compaction::to_json(*r));
    return exit_ok;
}

int checkpoint_status(const args& a)
{
    const bool json = a.has("json");
    int code = exit_ok;
    boost::asio::io_context ioc(1);
    auto setup = cli_session_config(a, json, ioc, code);
    if (!setup)
        return code;
    auto opened = open_session(a.positional[0], json, code);
    if (!opened)
        return code;
    compaction::diagnostics diag;
    auto st = runtime::checkpoint_status_of(
        opened->log,
        runtime::checkpoint_identity_of(setup->config),
        runtime::config_digest_of(setup->config),
        diag
    );
    if (!st)
    {
        print_error(json, st.error().message(), diag.message);
        return exit_bad_session;
    }
    boost::json::object out{
        {"current",
         boost::json::object{
             {"identity", compaction::to_json(st->identity)}, {"configDigest", st->config_digest}}}};
    if (st->latest)
    {
        const auto& l = *st->latest;
        boost::json::object latest{
            {"id", l.id},
            {"covered", l.covered},
            {"status", compaction::to_string(l.status)},
            {"actual", compaction::to_json(l.actual)}};
        if (st->recorded)
        {
            latest["sourceRevision"] = compaction::to_json(st->recorded->revision);
            latest["identity"] = compaction::to_json(st->recorded->identity);
            latest["configDigest"] = st->recorded->config_digest;
            latest["sameIdentity"] = st->recorded->identity == st->identity;
            latest["sameConfiguration"] = st->recorded->config_digest == st->config_digest;
        }
        else
            latest["sourceRevision"] = nullptr;
        latest["restorable"] = st->restorable;
        out["latest"] = std::move(latest);
    }
    else
        out["latest"] = nullptr;
    if (json)
    {
        print_json(out);
        return exit_ok;
    }
    if (!st->latest)
    {
        std::printf("no compaction on the active path\n");
        return exit_ok;
    }
    std::printf(
        "latest compaction %s: %s, covers %zu entries\n",
        st->latest->id.c_str(),
        compaction::to_string(st->latest->status),
        st->latest->covered
    );
    if (st->recorded)
        std::printf(
            "written by %s/%s under %s configuration; %s\n",
            st->recorded->identity.provider.c_str(),
            st->recorded->identity.model.c_str(),
            st->recorded->config_digest == st->config_digest ? "this" : "another",
            st->restorable ? "a record of it restores here" : "a record of it would be refused here"
        );
    return exit_ok;
}

int checkpoint_restore(const args& a)
{
    const bool json = a.has("json");
    int code = exit_ok;
    if (a.positional.size() != 2)
    {
        std::fprintf(
            stderr, "agentctx checkpoint restore: expected SESSION.jsonl and RECORD\n\n%s", checkpoint_usage
        );
        return exit_usage;
    }
    boost::asio::io_context ioc(1);
    auto setup = cli_session_config(a, json, ioc, code);
    if (!setup)
        return code;
    const auto text = read_record(a.positional[1]);
    if (!text)
    {
        print_error(json, "not_found", "cannot read the checkpoint record '" + a.positional[1] + "'");
        return exit_io;
    }
    compaction::checkpoint_reason why{};
    compaction::diagnostics pdiag;
    auto record = compaction::parse_record_json(*text, why, pdiag);  // a key named twice is refused
    if (!record)
    {
        print_rejection(json, "checkpoint_invalid", compaction::to_string(why), pdiag.message);
        return exit_failed;
    }
    const std::string& path = a.positional[0];
    const auto session = open_writable_session(ioc, path, setup->config, json, false, code);
    if (!session)
        return code;
    boost::system::error_code ec;
    runtime::checkpoint_outcome out;
    session->async_restore_checkpoint(
        std::move(*record),
        [&](boost::system::error_code e, runtime::checkpoint_outcome o) {
            ec = e;
            out = std::move(o);
        }
    );
    ioc.run();
    if (ec)
    {
        const std::string reason = out.reason == compaction::checkpoint_reason::none
                                       ? ec.message()
                                       : std::string(compaction::to_string(out.reason));
        print_rejection(json, ec.message(), reason, out.message);
        return exit_failed;
    }
    if (json)
    {
        print_json(boost::json::object{
            {"restored", true},
            {"entryId", out.entry_id},
            {"covered", out.record->revision.count},
            {"recordDigest", out.record->digest},
            {"contextMessages", session->current()->messages.size()},
            {"error", nullptr}});
        return exit_ok;
    }
    std::printf(
        "restored: compaction entry %s appended, covering %zu entries (record %s)\n",
        out.entry_id.c_str(),
        out.record->revision.count,
        out.record->digest.substr(0, 12).c_str()
    );
    return exit_ok;
}

}  // namespace

int cmd_checkpoint(int argc, char** argv)
{
    if (argc < 3 || !std::strcmp(argv[2], "--help") || !std::strcmp(argv[2], "-h"))
    {
        std::fputs(checkpoint_usage, argc < 3 ? stderr : stdout);
        return argc < 3 ? exit_usage : exit_ok;
    }
    const std::string sub = argv[2];
    if (sub != "export" && sub != "restore" && sub != "status")
    {
        std::fprintf(
            stderr, "agentctx checkpoint: unknown subcommand '%s'\n\n%s", sub.c_str(), checkpoint_usage
        );
        return exit_usage;
    }
    std::string error;
    auto a = parse_args(
        argc,
        argv,
        3,
        sub == "export" ? std::vector<std::string_view>{} : session_valued_options,
        sub == "export" ? std::vector<std::string_view>{"json", "help"}
                        : std::vector<std::string_view>{"json", "trust-project", "help"},
        error
    );
    if (!a)
    {
        std::fprintf(
            stderr, "agentctx checkpoint %s: %s\n\n%s", sub.c_str(), error.c_str(), checkpoint_usage
        );
        return exit_usage;
    }
    if (a->has("help"))
    {
        std::fputs(checkpoint_usage, stdout);
        return exit_ok;
    }
    if (sub == "restore")
        return checkpoint_restore(*a);
    if (a->positional.size() != 1)
    {
        std::fprintf(
            stderr, "agentctx checkpoint %s: expected one SESSION.jsonl\n\n%s", sub.c_str(), checkpoint_usage
        );
        return exit_usage;
    }
    return sub == "export" ? checkpoint_export(*a) : checkpoint_status(*a);
}

namespace {

// The native-state check (the provider's validation, size, ownership) of each row's compaction,
// as a session applies it before it replays the state.
void add_native_problems(
    const compaction::session_log& log, std::vector<compaction::compaction_verification>& rows
)
{
    std::size_t row = 0;
    for (std::size_t i = 0; i < log.size() && row < rows.size(); ++i)
    {
        if (log.meta(i).type != compaction::entry_type::compaction)
            continue;
        auto& r = rows[row++];
        compaction::diagnostics diag;
        auto e = log.get(i, diag);
        const auto* details = e ? (*e)->details.if_object() : nullptr;
        const auto* ours =
            details && details->contains("agentctx") ? details->at("agentctx").if_object() : nullptr;
        if (!ours || !ours->contains("native"))
            continue;
        if (auto problem = runtime::native_problem(**e, ours->at("native")); !problem.empty())
        {
            r.problems.push_back("details.agentctx.native: " + problem);
            if (r.status != compaction::verify_status::changed)
                r.status = compaction::verify_status::invalid;
        }
    }
}

}  // namespace

int cmd_verify(int argc, char** argv)
{
    int code = exit_ok;
    auto a = command_args(argc, argv, "verify", verify_usage, {}, {"json"}, code);
    if (!a)
        return code;
    const bool json = a->has("json");
    auto opened = open_session(a->positional[0], json, code);
    if (!opened)
        return code;
    compaction::diagnostics diag;
    auto rows = compaction::verify_compactions(opened->log, diag);
    if (!rows)
    {
        print_error(json, rows.error().message(), diag.message);
        return exit_bad_session;
    }
    add_native_problems(opened->log, *rows);
    bool changed = false, invalid = false;
    boost::json::array list;
    for (const auto& r : *rows)
    {
        changed = changed || r.status == compaction::verify_status::changed;
        invalid = invalid || !r.problems.empty();
        boost::json::array problems;
        for (const auto& p : r.problems)
            problems.emplace_back(p);
        list.push_back(boost::json::object{
            {"id", r.id},
            {"line", r.line},
            {"covered", r.covered},
            {"sourceRevision",
             r.recorded ? boost::json::value(compaction::to_json(*r.recorded)) : boost::json::value(nullptr)},
            {"actual", compaction::to_json(r.actual)},
            {"status", compaction::to_string(r.status)},
            {"problems", std::move(problems)},
        });
    }
    if (json)
        print_json(boost::json::object{
            {"compactions", std::move(list)}, {"changed", changed}, {"invalid", invalid}});
    else
    {
        if (rows->empty())
            std::printf("no compactions\n");
        for (const auto& r : *rows)
        {
            std::printf(
                "%-10s line %-6zu covers %-6zu %s%s\n",
                r.id.c_str(),
                r.line,
                r.covered,
                compaction::to_string(r.status),
                r.status == compaction::verify_status::changed ? ": the covered history was edited" : ""
            );
            for (const auto& p : r.problems)
                std::printf("           %s (not used: the portable summary stands in)\n", p.c_str());
        }
    }
    return changed || invalid ? exit_failed : exit_ok;
}

}  // namespace agentctx::cli
