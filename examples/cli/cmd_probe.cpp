// `agentctx probe SESSION...`: for every recorded compaction, the recall probes of the span it covered
// and which of them its summary kept; a table per session and a total per probe kind. With --replay, the
// same for the compactions of the session replayed under the current settings.
#include "cli_common.hpp"
#include "cli_session.hpp"
#include "commands.hpp"

#include <agentctx/compaction/recall_score.hpp>
#include <agentctx/runtime/simulate.hpp>

#include <array>
#include <cstdio>

#include <unistd.h>

namespace agentctx::cli {

namespace {

const char* const probe_usage =
    "usage: agentctx probe SESSION.jsonl... [--missing] [--json] [--replay [SETTINGS FLAGS]]\n"
    "\n"
    "For every compaction on each session's active path (Pi's or agentctx's): the probes of the part\n"
    "it summarized (the user's rules and their overrides, files, failed commands and names, open\n"
    "work, decisions; see docs/quality.md) and how many its summary kept, per kind; then the total\n"
    "per kind over all sessions. No model call.\n"
    "\n"
    "  --missing   list each probe a summary did not keep\n"
    "  --json      one JSON object with the same numbers (and every missing probe)\n"
    "  --replay    also replay each session (recorded compactions dropped, the file untouched) under\n"
    "              the current settings and summarizer, and score the compactions that replay makes;\n"
    "              the settings flags of `agentctx compact` apply (--settings, --project-dir,\n"
    "              --trust-project, --provider, --model, --base-url, --keep-recent, --reserve,\n"
    "              --max-source-chars, --max-calls, --context-window); the offline summarizer when\n"
    "              no model is configured. A progress bar on a terminal's stderr.\n";

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

void print_header(const std::string& title, std::size_t compactions)
{
    std::printf(
        "%s: %zu compactions\n  %-24s %10s %10s %10s %10s\n",
        title.c_str(),
        compactions,
        "compaction (kept/probes)",
        "rule",
        "artifact",
        "open_work",
        "decision"
    );
}

// Scored compactions: a row each (printed, or added to `rows`), their sum returned.
tally score_rows(
    const std::vector<compaction::compaction_recall>& scored, const args& a, boost::json::array& rows
)
{
    const bool json = a.has("json");
    tally session;
    for (const auto& r : scored)
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
    return session;
}

// The replay's bar on a terminal's stderr: redrawn at each percent, cleared at the end.
void replay_progress(const std::string& path, std::size_t done, std::size_t total, int& drawn)
{
    const int percent = total ? static_cast<int>(100 * done / total) : 100;
    if (percent == drawn)
        return;
    drawn = percent;
    std::fprintf(
        stderr, "\r%s %3d%% replay %-40.40s", bar(percent / 100.0, 30).c_str(), percent, path.c_str()
    );
    if (done == total)
        std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
}

// What a replay made: its compactions scored, and the compactions that failed (the first's reason).
struct replay_result
{
    std::vector<compaction::compaction_recall> scored;
    std::size_t failed = 0;
    std::string first_error;
};

// `log` replayed under `host` (recorded compactions dropped, in memory) and its compactions scored.
compaction::result<replay_result> replay_scores(
    const compaction::session_log& log,
    const runtime::host_config& host,
    const std::string& path,
    compaction::diagnostics& diag
)
{
    replay_result out;
    runtime::simulate_options options;
    options.host = host;
    std::string replayed;
    options.replayed = &replayed;
    options.on_event = [&out](const runtime::session_event& e) {
        const auto* end = std::get_if<runtime::compaction_end_event>(&e);
        if (!end || end->result || end->discarded || end->will_retry)
            return;
        if (++out.failed == 1)
            out.first_error = end->error_message.value_or("failed");
    };
    int drawn = -1;
    if (::isatty(STDERR_FILENO))
        options.progress = [&](std::size_t done, std::size_t total) {
            replay_progress(path, done, total, drawn);
        };
    const runtime::simulate_policy policy{
        "replay", host.settings.compaction, compaction::compat_mode::agentctx};
    if (auto cost = runtime::simulate_session(log, policy, options, diag); !cost)
        return cost.error();
    compaction::load_report report;
    auto again = compaction::session_log::load(std::move(replayed), {}, report, diag);
    if (!again)
        return again.error();
    auto scored = compaction::score_recorded_compactions(*again, diag);
    if (!scored)
        return scored.error();
    out.scored = std::move(*scored);
    return out;
}

struct totals
{
    tally recorded, replayed;
};

// One session: its compactions scored (and, with `host`, its replay's), printed (or added to
// `sessions`), added to `total`.
int probe_session(
    const std::string& path,
    const args& a,
    const std::optional<runtime::host_config>& host,
    boost::json::array& sessions,
    totals& total
)
{
    const bool json = a.has("json");
    int code = exit_ok;
    auto s = open_session(path, json, code);
    if (!s)
        return code;
    compaction::diagnostics diag;
    auto scored = compaction::score_recorded_compactions(s->log, diag);
    if (!scored)
        return print_error(json, scored.error().message(), path + ": " + diag.message), exit_bad_session;
    std::optional<replay_result> again;
    if (host)
    {
        auto r = replay_scores(s->log, *host, path, diag);
        if (!r)
            return print_error(json, r.error().message(), path + ": replay: " + diag.message), exit_failed;
        again = std::move(*r);
    }
    boost::json::array rows, replay_rows;
    if (!json)
        print_header(path, scored->size());
    const auto session = score_rows(*scored, a, rows);
    if (!json)
        print_row("session", session);
    total.recorded.add(session);
    boost::json::object out{{"path", path}, {"compactions", std::move(rows)}, {"total", session.json()}};
    if (again)
    {
        if (!json)
            print_header(path + " replayed", again->scored.size());
        const auto replayed = score_rows(again->scored, a, replay_rows);
        if (!json)
            print_row("session (replay)", replayed);
        if (!json && again->failed)
            std::printf("  %zu compactions failed (first: %s)\n", again->failed, again->first_error.c_str());
        total.replayed.add(replayed);
        out["replay"] = boost::json::object{
            {"compactions", std::move(replay_rows)},
            {"total", replayed.json()},
            {"failed", again->failed},
            {"firstError",
             again->failed ? boost::json::value(again->first_error) : boost::json::value(nullptr)}};
    }
    if (json)
        sessions.push_back(std::move(out));
    return exit_ok;
}

std::string percent_cell(std::size_t kept, std::size_t probes)
{
    return cell(kept, probes) + (probes ? " (" + std::to_string(100 * kept / probes) + "%)" : "");
}

void print_totals(const totals& total, bool replay)
{
    std::printf("total (kept/probes)\n");
    if (replay)
        std::printf("  %-10s %-16s %s\n", "", "recorded", "replayed");
    for (const auto k : kinds)
    {
        const auto i = static_cast<std::size_t>(k);
        const auto recorded = percent_cell(total.recorded.kept[i], total.recorded.probes[i]);
        std::printf("  %-10s ", std::string(compaction::to_string(k)).c_str());
        if (replay)
            std::printf(
                "%-16s %s\n",
                recorded.c_str(),
                percent_cell(total.replayed.kept[i], total.replayed.probes[i]).c_str()
            );
        else
            std::printf("%s\n", recorded.c_str());
    }
}

}  // namespace

int cmd_probe(int argc, char** argv)
{
    std::string error;
    auto a = parse_args(
        argc, argv, 2, session_valued_options, {"json", "missing", "replay", "trust-project", "help"}, error
    );
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
    std::optional<runtime::host_config> host;
    if (a->has("replay"))
    {
        int code = exit_ok;
        host = cli_host_config(*a, json, code);
        if (!host)
            return code;
    }
    boost::json::array sessions;
    totals total;
    for (const auto& path : a->positional)
        if (const int code = probe_session(path, *a, host, sessions, total); code != exit_ok)
            return code;
    if (json)
    {
        boost::json::object out{{"sessions", std::move(sessions)}, {"total", total.recorded.json()}};
        if (host)
            out["replayTotal"] = total.replayed.json();
        print_json(out);
    }
    else
        print_totals(total, host.has_value());
    std::fflush(stdout);
    return exit_ok;
}

}  // namespace agentctx::cli
