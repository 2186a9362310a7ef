// agentctx export (PostgreSQL session -> Pi JSONL file, byte for byte) and import (file -> PostgreSQL).
#include "cli_common.hpp"
#include "cli_pg.hpp"

#include <agentctx/runtime/pg_store.hpp>

#include <boost/asio/io_context.hpp>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

namespace agentctx::cli {

namespace {

using boost::system::error_code;

// One operation on a pool of its own, run to completion on this thread (a short-lived CLI).
template <class Start>
pg_outcome run_pg(const std::string& conninfo, bool migrate, Start start)
{
    boost::asio::io_context ioc;
    runtime::pg_pool pool(ioc.get_executor(), conninfo, {.max_connections = 1, .listen = false});
    std::optional<pg_outcome> out;
    auto finish = [&](error_code ec, std::string v) {
        out.emplace(pg_outcome{
            !ec,
            ec ? std::string() : std::move(v),
            ec ? ec.message() : std::string(),
            ec ? std::move(v) : std::string()});
    };
    if (migrate)
        pool.async_migrate([&](error_code ec, std::string m) {
            if (ec)
                return finish(ec, std::move(m));
            start(pool, finish);
        });
    else
        start(pool, finish);
    while (!out && ioc.run_one() > 0)
    {}
    pool.close();
    return out.value_or(pg_outcome{false, {}, "database_error", "the operation did not complete"});
}

std::string read_all(const std::string& path, bool& ok)
{
    std::ifstream f(path, std::ios::binary);
    ok = static_cast<bool>(f);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

}  // namespace

pg_outcome pg_export_text(const std::string& conninfo, const std::string& session_id)
{
    return run_pg(conninfo, false, [&](runtime::pg_pool& p, auto finish) {
        p.async_export(session_id, finish);
    });
}

pg_outcome pg_import_text(const std::string& conninfo, std::string jsonl)
{
    return run_pg(conninfo, true, [&](runtime::pg_pool& p, auto finish) {
        p.async_import(std::move(jsonl), finish);
    });
}

int cmd_export(int argc, char** argv)
{
    std::string error;
    auto a = parse_args(argc, argv, 2, {}, {"json", "help"}, error);
    if (!a || a->has("help") || a->positional.size() != 2)
    {
        std::fprintf(
            stderr,
            "%susage: agentctx export postgresql://...#SESSION_ID OUT.jsonl [--json]\n"
            "Writes the stored session as a Pi JSONL file, byte for byte (refuses to overwrite).\n",
            error.empty() ? "" : (error + "\n").c_str()
        );
        return a && a->has("help") ? exit_ok : exit_usage;
    }
    const bool json = a->has("json");
    std::string conninfo, id;
    if (!runtime::split_pg_reference(a->positional[0], conninfo, id) || id.empty())
    {
        print_error(json, "usage", "the first argument must be postgresql://...#SESSION_ID");
        return exit_usage;
    }
    const std::filesystem::path out = a->positional[1];
    if (std::error_code fe; std::filesystem::exists(out, fe))
    {
        print_error(json, "already_exists", out.string() + " exists already");
        return exit_io;
    }
    auto r = pg_export_text(conninfo, id);
    if (!r.ok)
    {
        print_error(json, r.code, r.message);
        return r.code == "not_found" ? exit_io : exit_failed;
    }
    std::ofstream(out, std::ios::binary) << r.value;
    if (json)
        print_json(boost::json::object{{"sessionId", id}, {"file", out.string()}, {"bytes", r.value.size()}});
    else
        std::printf(
            "exported session %s to %s (%zu bytes)\n", id.c_str(), out.string().c_str(), r.value.size()
        );
    return exit_ok;
}

int cmd_import(int argc, char** argv)
{
    std::string error;
    auto a = parse_args(argc, argv, 2, {}, {"json", "help"}, error);
    if (!a || a->has("help") || a->positional.size() != 2)
    {
        std::fprintf(
            stderr,
            "%susage: agentctx import SESSION.jsonl postgresql://... [--json]\n"
            "Stores a v3 session file in PostgreSQL, each line byte for byte; prints its reference.\n",
            error.empty() ? "" : (error + "\n").c_str()
        );
        return a && a->has("help") ? exit_ok : exit_usage;
    }
    const bool json = a->has("json");
    std::string conninfo, ignored;
    if (!runtime::split_pg_reference(a->positional[1], conninfo, ignored))
    {
        print_error(json, "usage", "the second argument must be a postgresql:// connection URI");
        return exit_usage;
    }
    bool readable = false;
    std::string text = read_all(a->positional[0], readable);
    if (!readable)
    {
        print_error(json, "not_found", "cannot read " + a->positional[0]);
        return exit_io;
    }
    auto r = pg_import_text(conninfo, std::move(text));
    if (!r.ok)
    {
        print_error(json, r.code, r.message);
        return r.code == "already_exists" ? exit_io : exit_failed;
    }
    const std::string ref = conninfo + "#" + r.value;
    if (json)
        print_json(boost::json::object{{"sessionId", r.value}, {"reference", runtime::redact_conninfo(ref)}});
    else
        std::printf("imported session %s: %s\n", r.value.c_str(), runtime::redact_conninfo(ref).c_str());
    return exit_ok;
}

}  // namespace agentctx::cli
