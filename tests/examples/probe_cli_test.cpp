// `agentctx probe --replay`: the session compacted again under the current settings, its checkpoints
// scored beside the recorded ones, the file untouched.
#include "fake_provider_server.hpp"
#include "file_text.hpp"
#include "run_process.hpp"
#include "session_text.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace fs = std::filesystem;
using agentctx::test::run_process;

namespace {

const std::string cli = AGENTCTX_CLI;

fs::path scratch(const std::string& name, const std::string& content)
{
    const auto p = fs::temp_directory_path() / ("agentctx-probe-" + std::to_string(::getpid()) + "-" + name);
    std::ofstream(p, std::ios::binary) << content;
    return p;
}

// Two rules in the first turn, then `turns` turns padded with `pad` characters with no rule in them; a
// recorded compaction after turn 10 whose summary keeps neither rule.
std::string ruled_session(std::size_t turns, std::size_t pad = 400)
{
    agentctx::test::session_text s;
    s.user("u", "Never push to main. Keep the public signature of parse_row.").assistant("a", "Understood.");
    for (std::size_t i = 0; i < turns; ++i)
    {
        const auto n = std::to_string(i);
        s.user("u" + n, "turn " + n + " " + std::string(pad, 'q'));
        s.assistant("a" + n, "answer " + n + " " + std::string(pad, 'a'));
        if (i == 10)
            s.compaction("c1", "u" + n, "## Goal\nTurns.");
    }
    return s.text;
}

// The compactions `agentctx simulate` counts for the policy of `settings` on `path`.
std::int64_t simulated_compactions(const fs::path& path, const fs::path& settings, const std::string& window)
{
    const auto r = run_process(
        cli + " simulate " + path.string() + " --settings " + settings.string() + " --context-window " +
        window + " --json"
    );
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return boost::json::parse(r.out).at("policies").at(settings.stem().string()).at("compactions").as_int64();
}

}  // namespace

TEST(cli_probe, replay_scores_the_compactions_the_current_settings_make_and_leaves_the_file_as_it_was)
{
    const auto path = scratch("replay.jsonl", ruled_session(40));
    const auto settings =
        scratch("replay-keep.json", R"({"compaction": {"keepRecentTokens": 600, "reserveTokens": 1000}})");
    const auto before = agentctx::test::read_text(path);
    const std::string window = "4000";
    const auto r = run_process(
        cli + " probe " + path.string() + " --replay --settings " + settings.string() + " --context-window " +
        window + " --json"
    );
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(agentctx::test::read_text(path), before);
    const auto v = boost::json::parse(r.out).as_object();
    const auto& session = v.at("sessions").at(0).as_object();
    // The recorded part is what `probe` without --replay prints.
    const auto plain = boost::json::parse(run_process(cli + " probe " + path.string() + " --json").out);
    EXPECT_EQ(session.at("compactions"), plain.at("sessions").at(0).at("compactions"));
    EXPECT_EQ(v.at("total"), plain.at("total"));
    EXPECT_EQ(session.at("compactions").as_array().size(), 1u);
    EXPECT_EQ(session.at("total").at("rule").at("kept"), 0);
    // The replay compacts where simulate's replay under the same settings does; each of its
    // compactions is probed for both rules (the first from the span, the later ones carried) and
    // the offline summarizer keeps them.
    const auto n = simulated_compactions(path, settings, window);
    ASSERT_GE(n, 2);
    const auto& replay = session.at("replay").as_object();
    EXPECT_EQ(replay.at("compactions").as_array().size(), static_cast<std::size_t>(n));
    for (const auto& c : replay.at("compactions").as_array())
    {
        EXPECT_EQ(c.at("byKind").at("rule"), (boost::json::object{{"probes", 2}, {"kept", 2}})) << c;
        EXPECT_NE(c.at("entryId"), "c1");
    }
    EXPECT_EQ(replay.at("total").at("rule"), (boost::json::object{{"probes", 2 * n}, {"kept", 2 * n}}));
    EXPECT_EQ(v.at("replayTotal"), replay.at("total"));
    EXPECT_EQ(replay.at("failed"), 0);
    EXPECT_TRUE(replay.at("firstError").is_null());
    EXPECT_EQ(session.at("path").as_string(), path.string());
    // Without --replay there is no replay part.
    EXPECT_FALSE(plain.as_object().contains("replayTotal"));
    EXPECT_FALSE(plain.at("sessions").at(0).as_object().contains("replay"));
    fs::remove(path);
    fs::remove(settings);
}

TEST(cli_probe, replay_table_shows_the_recorded_and_the_replayed_totals)
{
    const auto path = scratch("replay-table.jsonl", ruled_session(40));
    const auto r = run_process(
        cli + " probe " + path.string() + " --replay --keep-recent 600 --reserve 1000 --context-window 4000"
    );
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find(path.string() + ": 1 compactions\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(path.string() + " replayed: "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("  c1                              0/2"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("             recorded         replayed\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("  rule       0/2 (0%)         "), std::string::npos) << r.out;
    EXPECT_EQ(r.err, "");  // stderr is not a terminal: no progress bar
    fs::remove(path);
}

// The replay's summaries come from the configured model: one that leaves the rules out keeps none
// with the gate off, and with the gate (`repair`, the default) every rule survives every compaction.
TEST(cli_probe, replay_compacts_with_the_configured_summarizer)
{
    agentctx::test::fake_provider_server server;
    server.set_default({.chunks = agentctx::test::openai_stream({"## Goal\n", "turns"})});
    const auto path = scratch("replay-model.jsonl", ruled_session(40, 2000));
    const auto before = agentctx::test::read_text(path);
    const auto off = scratch(
        "replay-off.json",
        R"({"compaction": {"keepRecentTokens": 3000, "reserveTokens": 4000, "recallGate": "off"}})"
    );
    const auto run = [&](const std::string& settings) {
        const auto r = run_process(
            "env -u OPENAI_API_KEY -u ANTHROPIC_API_KEY " + cli + " probe " + path.string() +
            " --replay --provider openai-compatible --base-url " + server.base_url() +
            "/v1 --model local --context-window 20000 " + settings + " --json"
        );
        EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
        return boost::json::parse(r.out).at("sessions").at(0).at("replay").as_object();
    };
    const auto forgot = run("--settings " + off.string());
    const auto requests = server.requests().size();
    const auto forgot_n = forgot.at("compactions").as_array().size();
    ASSERT_GE(forgot_n, 1u) << boost::json::serialize(forgot);
    EXPECT_EQ(forgot.at("failed"), 0);
    EXPECT_GE(requests, forgot_n);
    // The first compaction reads both rules and its summary has neither; nothing carries them on.
    EXPECT_EQ(forgot.at("total").at("rule"), (boost::json::object{{"probes", 2}, {"kept", 0}}));
    const auto gated = run("--keep-recent 3000 --reserve 4000");
    const auto gated_n = static_cast<std::int64_t>(gated.at("compactions").as_array().size());
    ASSERT_GE(gated_n, 1);
    EXPECT_GT(server.requests().size(), requests + static_cast<std::size_t>(gated_n));  // + follow-ups
    EXPECT_EQ(
        gated.at("total").at("rule"), (boost::json::object{{"probes", 2 * gated_n}, {"kept", 2 * gated_n}})
    );
    // In a 4,000-token window the model's reply is over each request's output cap: every
    // compaction of the replay fails, and the report says so.
    const auto capped = run_process(
        "env -u OPENAI_API_KEY -u ANTHROPIC_API_KEY " + cli + " probe " + path.string() +
        " --replay --provider openai-compatible --base-url " + server.base_url() +
        "/v1 --model local --context-window 4000 --keep-recent 600 --reserve 1000 --json"
    );
    ASSERT_EQ(capped.exit_code, 0) << capped.err;
    const auto failed = boost::json::parse(capped.out).at("sessions").at(0).at("replay");
    EXPECT_EQ(failed.at("compactions").as_array().size(), 0u);
    EXPECT_GE(failed.at("failed").as_int64(), 1);
    EXPECT_NE(std::string(failed.at("firstError").as_string()).find("over the cap"), std::string::npos)
        << failed;
    EXPECT_EQ(agentctx::test::read_text(path), before);
    fs::remove(path);
    fs::remove(off);
}

// The settings are read first: a bad file is the usage error (2), not the missing session (4).
TEST(cli_probe, replay_refuses_a_bad_settings_file_before_reading_any_session)
{
    const auto bad = scratch("replay-bad.json", R"({"compaction": {"keepRecentTokens": "many"}})");
    const auto missing = fs::temp_directory_path() / "agentctx-probe-no-such-session.jsonl";
    const auto r = run_process(cli + " probe " + missing.string() + " --replay --settings " + bad.string());
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_NE(r.err.find("keepRecentTokens"), std::string::npos) << r.err;
    EXPECT_EQ(run_process(cli + " probe " + missing.string() + " --replay").exit_code, 4);
    fs::remove(bad);
}
