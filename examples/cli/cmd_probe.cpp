// `agentctx probe SESSION...`: for every recorded compaction, the recall probes of the span it covered
// and which of them its summary kept; a table per session and a total per probe kind.
#include "cli_common.hpp"
#include "commands.hpp"

#include <agentctx/compaction/recall_score.hpp>

#include <array>
#include <cstdio>

namespace agentctx::cli {

namespace {

const char* const probe_usage =
    "usage: agentctx probe SESSION.jsonl... [--json]\n"
    "\n"
    "For every compaction on each session's active path (Pi's or agentctx's): the probes of the part\n"
    "it summarized (the user's rules and their overrides, files, failed commands and names, open\n"
    "work, decisions; see docs/quality.md) and how many its summary kept, per kind; then the total\n"
    "per kind over all sessions. No model call.\n"
    "\n"
    "  --missing   list each probe a summary did not keep\n"
    "  --json      one JSON object with the same numbers (and every missing probe)\n";

constexpr std::array kinds{
    compaction::probe_kind::rule,
    compaction::probe_kind::artifact,
    compaction::probe_kind::open_work,
    compaction::probe_kind::decision};

// Probes and kept ones, per kind.
struct tally
{
    std::array<std::size_t, 4> probes{}, kept{};
    void add(const compaction::compaction_recall& r)
    {
        for (std::size_t i = 0; i < r.probes.size(); ++i)
        {
            const auto k = static_cast<std::size_t>(r.probes[i].kind);
            ++probes[k];
            kept[k] += r.kept[i];
        }
    }
    void add(const tally& t)
    {
        for (std::size_t k = 0; k < 4; ++k)
            probes[k] += t.probes[k], kept[k] += t.kept[k];
    }
    boost::json::object json() const
    {
        boost::json::object o;
        for (const auto k : kinds)
        {
            const auto i = static_cast<std::size_t>(k);
            o[compaction::to_string(k)] = boost::json::object{{"probes", probes[i]}, {"kept", kept[i]}};
        }
        return o;
    }
};

std::string cell(std::size_t kept, std::size_t probes)
{
    return probes == 0 ? "-" : std::to_string(kept) + "/" + std::to_string(probes);
}

void print_row(const char* name, const tally& t)
{
    std::printf("  %-24s", name);
    for (std::size_t k = 0; k < 4; ++k)
        std::printf(" %10s", cell(t.kept[k], t.probes[k]).c_str());
    std::printf("\n");
}

boost::json::object compaction_json(const compaction::compaction_recall& r, const tally& t)
{
    boost::json::array missing;
    for (std::size_t i = 0; i < r.probes.size(); ++i)
        if (!r.kept[i])
            missing.push_back(boost::json::object{
                {"kind", compaction::to_string(r.probes[i].kind)}, {"text", r.probes[i].text}});
    return {{"entryId", r.entry_id}, {"byKind", t.json()}, {"missing", std::move(missing)}};
}

// One session: its compactions scored, printed (or added to `sessions`), added to `total`.
int probe_session(const std::string& path, const args& a, boost::json::array& sessions, tally& total)
{
    const bool json = a.has("json");
    int code = exit_ok;
    auto s = open_session(path, json, code);
    if (!s)
        return code;
    compaction::diagnostics diag;
    auto scored = compaction::score_recorded_compactions(s->log, diag);
    if (!scored)
        return print_error(json, scored.error().message(), diag.message), exit_bad_session;
    boost::json::array rows;
    if (!json)
        std::printf(
            "%s: %zu compactions\n  %-24s %10s %10s %10s %10s\n",
            path.c_str(),
            scored->size(),
            "compaction (kept/probes)",
            "rule",
            "artifact",
            "open_work",
            "decision"
        );
    tally session;
    for (const auto& r : *scored)
    {
        tally t;
        t.add(r);
        session.add(t);
        if (json)
            rows.push_back(compaction_json(r, t));
        else
            print_row(r.entry_id.c_str(), t);
        if (!json && a.has("missing"))
            for (std::size_t i = 0; i < r.probes.size(); ++i)
                if (!r.kept[i])
                    std::printf(
                        "      missing %s: %s\n",
                        std::string(to_string(r.probes[i].kind)).c_str(),
                        r.probes[i].text.c_str()
                    );
    }
    if (json)
        sessions.push_back(boost::json::object{
            {"path", path}, {"compactions", std::move(rows)}, {"total", session.json()}});
    else
        print_row("session", session);
    total.add(session);
    return exit_ok;
}

}  // namespace

int cmd_probe(int argc, char** argv)
{
    std::string error;
    auto a = parse_args(argc, argv, 2, {}, {"json", "missing", "help"}, error);
    if (!a || a->has("help") || a->positional.empty())
    {
        if (a && a->has("help"))
            return std::fputs(probe_usage, stdout), exit_ok;
        std::fprintf(
            stderr, "agentctx probe: %s\n%s", error.empty() ? "no session file" : error.c_str(), probe_usage
        );
        return exit_usage;
    }
    const bool json = a->has("json");
    boost::json::array sessions;
    tally total;
    for (const auto& path : a->positional)
        if (const int code = probe_session(path, *a, sessions, total); code != exit_ok)
            return code;
    if (json)
        print_json(boost::json::object{{"sessions", std::move(sessions)}, {"total", total.json()}});
    else
    {
        std::printf("total (kept/probes)\n");
        for (const auto k : kinds)
        {
            const auto i = static_cast<std::size_t>(k);
            std::printf(
                "  %-10s %s%s\n",
                std::string(compaction::to_string(k)).c_str(),
                cell(total.kept[i], total.probes[i]).c_str(),
                total.probes[i]
                    ? (" (" + std::to_string(100 * total.kept[i] / total.probes[i]) + "%)").c_str()
                    : ""
            );
        }
    }
    std::fflush(stdout);
    return exit_ok;
}

}  // namespace agentctx::cli
