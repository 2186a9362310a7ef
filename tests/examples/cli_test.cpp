// Runs the built agentctx binary: output and exit codes of each subcommand.
#include "fake_provider_server.hpp"
#include "file_text.hpp"
#include "run_process.hpp"
#include "session_text.hpp"

#include <agentctx/runtime/jsonl_store.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

namespace fs = std::filesystem;
using agentctx::test::run_process;

namespace {

const std::string cli = AGENTCTX_CLI;
const std::string fixture = std::string(AGENTCTX_FIXTURES_DIR) + "/pi_every_type.jsonl";

fs::path scratch(const std::string& name, const std::string& content)
{
    const auto p = fs::temp_directory_path() / ("agentctx-cli-" + std::to_string(::getpid()) + "-" + name);
    std::ofstream(p, std::ios::binary) << content;
    return p;
}

}  // namespace

TEST(cli_context, json_lists_projected_messages_with_entry_ids_and_tokens)
{
    const auto r = run_process(cli + " context " + fixture + " --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto v = boost::json::parse(r.out).as_object();
    EXPECT_EQ(v.at("leafId"), "a0000017");
    EXPECT_EQ(v.at("thinkingLevel"), "medium");
    EXPECT_EQ(v.at("model").at("provider"), "anthropic");
    EXPECT_EQ(v.at("model").at("modelId"), "claude-sonnet-4-5");
    // The leaf hangs off a0000011 through a branch summary: the compaction (a0000013) is not on
    // this path, so the whole path is projected.
    const auto& msgs = v.at("messages").as_array();
    std::vector<std::string> ids;
    for (const auto& m : msgs)
        ids.push_back(std::string(m.at("entryId").as_string()));
    EXPECT_EQ(
        ids,
        (std::vector<std::string>{
            "a0000003",
            "a0000004",
            "a0000005",
            "a0000006",
            "a0000007",
            "a0000008",
            "a0000009",
            "a000000a",
            "a000000b",
            "a000000c",
            "a0000010",
            "a0000011",
            "a0000016",
            "a0000017"})
    );
    EXPECT_EQ(msgs[0].at("role"), "user");
    EXPECT_EQ(msgs[9].at("role"), "custom");
    EXPECT_EQ(msgs[12].at("role"), "branchSummary");
    // "Run the linter before committing." is 33 characters -> 9 tokens.
    EXPECT_EQ(msgs[9].at("tokens"), 9);
    // toolResult with one image: text + 4800 characters.
    EXPECT_GT(msgs[2].at("tokens").as_int64(), 1200);
}

TEST(cli_context, compacted_path_starts_with_the_summary)
{
    // Cut the fixture after line 22 (the compaction's continuation) so the leaf is a0000015.
    std::ifstream in(fixture);
    std::string text, line;
    for (int i = 0; i < 22 && std::getline(in, line); ++i)
        text += line + "\n";
    const auto path = scratch("compacted.jsonl", text);
    const auto r = run_process(cli + " context " + path.string() + " --json");
    fs::remove(path);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto v = boost::json::parse(r.out).as_object();
    const auto& msgs = v.at("messages").as_array();
    ASSERT_EQ(msgs.size(), 5u);  // summary, kept a0000010 a0000011, then a0000014 a0000015
    EXPECT_EQ(msgs[0].at("role"), "compactionSummary");
    EXPECT_EQ(msgs[0].at("entryId"), "a0000013");
    EXPECT_EQ(msgs[1].at("entryId"), "a0000010");
    EXPECT_EQ(msgs[4].at("entryId"), "a0000015");
}

TEST(cli_context, human_output_lists_messages_and_total)
{
    const auto r = run_process(cli + " context " + fixture);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("14 messages"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("branchSummary"), std::string::npos);
    EXPECT_NE(r.out.find("model anthropic/claude-sonnet-4-5"), std::string::npos);
}

TEST(cli_context, missing_file_exits_4)
{
    const auto r = run_process(cli + " context /nonexistent/session.jsonl");
    EXPECT_EQ(r.exit_code, 4);
    EXPECT_NE(r.err.find("not_found"), std::string::npos) << r.err;
}

TEST(cli_context, bad_file_exits_3_with_code_and_line)
{
    const auto path = scratch(
        "bad.jsonl",
        R"({"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/"})"
        "\n"
        "{broken\n"
    );
    const auto r = run_process(cli + " context " + path.string() + " --json");
    EXPECT_EQ(r.exit_code, 3);
    const auto v = boost::json::parse(r.out).as_object();
    EXPECT_EQ(v.at("error").at("code"), "invalid_json");
    EXPECT_NE(std::string(v.at("error").at("message").as_string()).find("line 2"), std::string::npos);
    fs::remove(path);
}

TEST(cli_context, usage_errors_exit_2)
{
    EXPECT_EQ(run_process(cli + " context").exit_code, 2);
    EXPECT_EQ(run_process(cli + " context a b").exit_code, 2);
    EXPECT_EQ(run_process(cli + " context x --frobnicate").exit_code, 2);
    EXPECT_EQ(run_process(cli + " nosuchcommand").exit_code, 2);
    const auto help = run_process(cli + " context --help");
    EXPECT_EQ(help.exit_code, 0);
    EXPECT_NE(help.out.find("usage: agentctx context"), std::string::npos);
    const auto top = run_process(cli + " --help");
    EXPECT_EQ(top.exit_code, 0);
    EXPECT_NE(top.out.find("exit codes"), std::string::npos);
}

namespace {

// u1 a1 | model_change | u2 a2, each message 100 tokens: the fix-2 situation.
std::string metadata_before_prompt_session()
{
    const std::string t(400, 'x');
    auto msg = [&](const char* id, const char* parent, const char* role) {
        std::string m = std::string(R"({"type":"message","id":")") + id + R"(","parentId":)" +
                        (parent ? std::string("\"") + parent + "\"" : "null") +
                        R"(,"timestamp":"2026-01-15T09:00:01.000Z","message":)";
        if (std::string(role) == "user")
            m += R"({"role":"user","content":")" + t + R"(","timestamp":1}})";
        else
            m += R"({"role":"assistant","content":[{"type":"text","text":")" + t +
                 R"("}],"provider":"p","model":"m","stopReason":"stop","timestamp":2}})";
        return m + "\n";
    };
    return std::string(
               R"({"type":"session","version":3,"id":"s","timestamp":"2026-01-15T09:00:00.000Z","cwd":"/"})"
           ) +
           "\n" + msg("u1", nullptr, "user") + msg("a1", "u1", "assistant") +
           R"({"type":"model_change","id":"m1","parentId":"a1","timestamp":"2026-01-15T09:00:02.000Z","provider":"p","modelId":"m"})"
           "\n" +
           msg("u2", "m1", "user") + msg("a2", "u2", "assistant");
}

}  // namespace

TEST(cli_plan, json_has_context_threshold_and_plan)
{
    const auto path = scratch("plan.jsonl", metadata_before_prompt_session());
    const auto r = run_process(
        cli + " plan " + path.string() + " --keep-recent 200 --reserve 1000 --context-window 5000 --json"
    );
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto v = boost::json::parse(r.out).as_object();
    EXPECT_EQ(v.at("leafId"), "a2");
    EXPECT_EQ(v.at("threshold"), 4000);
    EXPECT_EQ(v.at("context").at("estimatedTokens"), 400);
    EXPECT_EQ(v.at("shouldCompact"), false);
    EXPECT_TRUE(v.at("error").is_null());
    const auto& plan = v.at("plan").as_object();
    EXPECT_EQ(plan.at("firstKeptEntryId"), "m1");
    EXPECT_EQ(plan.at("isSplitTurn"), false);
    EXPECT_EQ(plan.at("tokensBefore"), 400);
    EXPECT_EQ(plan.at("messagesToSummarize"), (boost::json::array{"u1", "a1"}));
    EXPECT_EQ(plan.at("turnPrefixMessages"), boost::json::array{});
    EXPECT_EQ(
        plan.at("serializedHistory").as_string(),
        "[User]: " + std::string(400, 'x') + "\n\n[Assistant]: " + std::string(400, 'x')
    );
    EXPECT_EQ(plan.at("serializedTurnPrefix"), "");

    // Pi calls the same cut a split turn and sends the previous turn as the "turn prefix".
    const auto pi = run_process(cli + " plan " + path.string() + " --keep-recent 200 --compat pi --json");
    ASSERT_EQ(pi.exit_code, 0) << pi.err;
    const auto pv = boost::json::parse(pi.out).as_object();
    EXPECT_EQ(pv.at("plan").at("isSplitTurn"), true);
    EXPECT_EQ(pv.at("plan").at("turnPrefixMessages"), (boost::json::array{"u1", "a1"}));
    EXPECT_EQ(pv.at("plan").at("messagesToSummarize"), boost::json::array{});

    const auto human = run_process(cli + " plan " + path.string() + " --keep-recent 200");
    EXPECT_EQ(human.exit_code, 0);
    EXPECT_NE(human.out.find("cut at    m1"), std::string::npos) << human.out;
    fs::remove(path);
}

TEST(cli_plan, the_keep_recent_flag_wins_over_the_model_s_override_in_a_settings_file)
{
    const auto path = scratch("plan-flag.jsonl", metadata_before_prompt_session());
    const auto settings = scratch(
        "flag-settings.json",
        R"({"compaction":{"modelOverrides":{"offline/offline":{"keepRecentTokens":20000}}}})"
    );
    const auto with_file = " --settings " + settings.string() + " --json";
    const auto r = run_process(cli + " plan " + path.string() + " --keep-recent 200" + with_file);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(boost::json::parse(r.out).at("plan").at("firstKeptEntryId"), "m1");
    // The file alone keeps 20000 tokens: nothing to compact.
    const auto file_only = run_process(cli + " plan " + path.string() + with_file);
    ASSERT_EQ(file_only.exit_code, 0) << file_only.err;
    EXPECT_EQ(boost::json::parse(file_only.out).at("error").at("code"), "nothing_to_compact");
    fs::remove(path);
    fs::remove(settings);
}

TEST(cli_plan, planning_errors_are_reported_in_the_json)
{
    const auto path = scratch("plan-small.jsonl", metadata_before_prompt_session());
    const auto r = run_process(cli + " plan " + path.string() + " --json");  // keep 20000: nothing to compact
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto v = boost::json::parse(r.out).as_object();
    EXPECT_TRUE(v.at("plan").is_null());
    EXPECT_EQ(v.at("error").at("code"), "nothing_to_compact");
    fs::remove(path);
}

TEST(cli_plan, usage_and_file_errors)
{
    EXPECT_EQ(run_process(cli + " plan").exit_code, 2);
    EXPECT_EQ(run_process(cli + " plan " + fixture + " --keep-recent lots").exit_code, 2);
    EXPECT_EQ(run_process(cli + " plan " + fixture + " --compat codex").exit_code, 2);
    EXPECT_EQ(run_process(cli + " plan /nonexistent.jsonl --json").exit_code, 4);
    const auto settings = scratch("settings.json", R"({"compaction":{"keepRecentTokens":"many"}})");
    const auto bad = run_process(cli + " plan " + fixture + " --settings " + settings.string() + " --json");
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_NE(bad.out.find("invalid_settings"), std::string::npos) << bad.out;
    fs::remove(settings);
    // A named settings file must exist (the server refuses to start on the same one).
    const auto missing =
        run_process(cli + " plan " + fixture + " --settings /nonexistent-agentctx/settings.json --json");
    EXPECT_EQ(missing.exit_code, 4);
    EXPECT_NE(missing.out.find("not_found"), std::string::npos) << missing.out;
    EXPECT_NE(missing.out.find("cannot read the settings file"), std::string::npos) << missing.out;
    EXPECT_EQ(run_process(cli + " plan --help").exit_code, 0);
}

namespace {

fs::path copy_of_bundled(const std::string& name)
{
    std::ifstream in(std::string(AGENTCTX_EXAMPLES_DIR) + "/sessions/coding-task.jsonl", std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return scratch(name, ss.str());
}

}  // namespace

TEST(cli_inspect, reports_counts_usage_and_trigger)
{
    const auto r = run_process(cli + " inspect " + fixture + " --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto v = boost::json::parse(r.out).as_object();
    EXPECT_EQ(v.at("entries"), 23);
    EXPECT_EQ(v.at("compactions"), 1);
    EXPECT_EQ(v.at("entriesByType").at("message"), 14);
    EXPECT_EQ(v.at("entriesByType").at("unknown"), 1);  // the hologram_snapshot line
    EXPECT_EQ(v.at("branches"), 2);
    EXPECT_EQ(v.at("leafId"), "a0000017");
    EXPECT_EQ(v.at("wouldCompact"), false);
    // Anchored on the last usage (7000), plus the branch summary (135 chars -> 34) and the prompt (9).
    EXPECT_EQ(v.at("usageTokens"), 7000 + 34 + 9);
    const auto human = run_process(cli + " inspect " + fixture);
    EXPECT_NE(human.out.find("compactions 1"), std::string::npos) << human.out;
    EXPECT_EQ(run_process(cli + " inspect /nonexistent.jsonl").exit_code, 4);
}

TEST(cli_compact, appends_one_compaction_and_the_context_shrinks)
{
    const auto path = copy_of_bundled("compact.jsonl");
    const auto before = agentctx::test::read_text(path);
    const auto r = run_process(
        cli + " compact " + path.string() + " --keep-recent 3000 --instructions 'focus on tests' --json"
    );
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    const auto v = boost::json::parse(r.out).as_object();
    EXPECT_EQ(v.at("compacted"), true);
    EXPECT_LT(v.at("tokensAfter").as_int64(), v.at("tokensBefore").as_int64());
    EXPECT_NE(std::string(v.at("summary").as_string()).find("## Goal"), std::string::npos);
    const auto after = agentctx::test::read_text(path);
    ASSERT_EQ(after.substr(0, before.size()), before);  // append-only
    EXPECT_NE(after.find("\"summarizer\":\"offline\""), std::string::npos);
    const auto ctx =
        boost::json::parse(run_process(cli + " context " + path.string() + " --json").out).as_object();
    EXPECT_EQ(ctx.at("messages").as_array()[0].at("entryId"), v.at("entryId"));
    // Compacting again right away: the last entry is the compaction.
    const auto again = run_process(cli + " compact " + path.string() + " --json");
    EXPECT_EQ(again.exit_code, 1);
    EXPECT_NE(again.out.find("already_compacted"), std::string::npos) << again.out;
    fs::remove(path);
}

TEST(cli_compact, the_settings_files_redaction_section_is_honoured)
{
    const auto path = copy_of_bundled("redact.jsonl");
    const auto before = agentctx::test::read_text(path);
    const auto bad = scratch("redact-bad.json", R"({"redaction":{"allowlist":[5]}})");
    const auto r = run_process(
        cli + " compact " + path.string() + " --keep-recent 3000 --settings " + bad.string() + " --json"
    );
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.out.find("invalid_settings"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("redaction.allowlist[0]"), std::string::npos) << r.out;
    EXPECT_EQ(agentctx::test::read_text(path), before);  // nothing written
    const auto off = scratch("redact-off.json", R"({"redaction":{"enabled":false}})");
    EXPECT_EQ(
        run_process(
            cli + " compact " + path.string() + " --keep-recent 3000 --settings " + off.string() + " --json"
        )
            .exit_code,
        0
    );
    fs::remove(bad);
    fs::remove(off);
    fs::remove(path);
}

TEST(cli_compact, dry_run_leaves_the_file_untouched)
{
    const auto path = copy_of_bundled("dry.jsonl");
    const auto before = agentctx::test::read_text(path);
    const auto r = run_process(cli + " compact " + path.string() + " --keep-recent 3000 --dry-run");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("dry run, file untouched"), std::string::npos);
    EXPECT_EQ(agentctx::test::read_text(path), before);
    fs::remove(path);
}

TEST(cli_compact, bad_missing_and_locked_files)
{
    const auto bad =
        scratch("bad-compact.jsonl", "{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n{oops\n");
    EXPECT_EQ(run_process(cli + " compact " + bad.string()).exit_code, 3);
    EXPECT_EQ(agentctx::test::read_text(bad), "{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n{oops\n");
    EXPECT_EQ(run_process(cli + " compact /nonexistent.jsonl").exit_code, 4);
    const auto path = copy_of_bundled("locked.jsonl");
    const auto before = agentctx::test::read_text(path);
    {
        agentctx::compaction::diagnostics diag;
        auto holder = agentctx::runtime::jsonl_store::open(path, {}, diag);
        ASSERT_TRUE(holder);
        const auto r = run_process(cli + " compact " + path.string() + " --json");
        EXPECT_EQ(r.exit_code, 5);
        EXPECT_NE(r.out.find("session_locked"), std::string::npos) << r.out;
    }
    EXPECT_EQ(agentctx::test::read_text(path), before);
    EXPECT_EQ(run_process(cli + " compact " + path.string() + " --provider magic").exit_code, 2);
    fs::remove(bad);
    fs::remove(path);
}

TEST(cli_compact, an_interrupted_compaction_leaves_the_file_unchanged)
{
    const auto path = copy_of_bundled("interrupt.jsonl");
    const auto before = agentctx::test::read_text(path);
    const auto fifo = fs::temp_directory_path() / ("agentctx-cli-" + std::to_string(::getpid()) + "-stderr");
    fs::remove(fifo);
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    // A slow (simulated) model, started as a background job (SIGINT ignored until the CLI takes
    // it). The shell reads the CLI's stderr through the FIFO and passes it on; it sends SIGINT
    // when the CLI says the compaction started (its handler is in place by then), long before
    // the 20 s answer, then reads on to the end.
    const auto r = run_process(
        "sh -c 'AGENTCTX_OFFLINE_DELAY_MS=20000 " + cli + " compact " + path.string() +
        " --keep-recent 3000 2>" + fifo.string() +
        " & pid=$!; while IFS= read -r line; do printf \"%s\\n\" \"$line\" >&2;" +
        " if [ \"$line\" = \"compaction started\" ]; then kill -INT $pid; fi; done <" + fifo.string() +
        "; wait $pid'"
    );
    fs::remove(fifo);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("\ncompaction started\n"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("interrupted: the file is unchanged"), std::string::npos) << r.err;
    EXPECT_EQ(agentctx::test::read_text(path), before);
    fs::remove(path);
}

TEST(cli_migrate, upgrades_v1_atomically_once)
{
    const auto path = scratch(
        "v1.jsonl",
        R"({"type":"session","id":"old","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"})"
        "\n"
        R"({"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}})"
        "\n"
    );
    auto r = run_process(cli + " migrate " + path.string() + " --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(boost::json::parse(r.out).at("migrated"), true);
    const auto migrated = agentctx::test::read_text(path);
    EXPECT_NE(migrated.find("\"version\":3"), std::string::npos);
    EXPECT_NE(migrated.find("\"parentId\":null"), std::string::npos);
    r = run_process(cli + " migrate " + path.string());
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_NE(r.out.find("already v3"), std::string::npos);
    EXPECT_EQ(agentctx::test::read_text(path), migrated);
    EXPECT_EQ(run_process(cli + " migrate /nonexistent.jsonl").exit_code, 4);
    fs::remove(path);
}

TEST(cli_compact, through_an_openai_compatible_server)
{
    agentctx::test::fake_provider_server server;
    // This cut is a split turn: the history and turn-prefix requests both get this reply.
    server.set_default({.chunks = agentctx::test::openai_stream({"## Goal\n", "summary from the model"})});
    const auto path = copy_of_bundled("provider.jsonl");
    const auto r = run_process(
        "env -u OPENAI_API_KEY -u ANTHROPIC_API_KEY " + cli + " compact " + path.string() +
        " --provider openai-compatible --base-url " + server.base_url() +
        "/v1 --model local --keep-recent 3000 --json"
    );
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    const auto v = boost::json::parse(r.out).as_object();
    const std::string summary(v.at("summary").as_string());
    // The generated session's user messages set rules ("You must never ...") the reply leaves out:
    // the recall gate asks once more in the same conversation, then carries them verbatim.
    EXPECT_EQ(summary.rfind("## Goal\nsummary from the model\n\n## User rules (verbatim)\n- ", 0), 0u)
        << summary;
    EXPECT_NE(summary.find("\n\n---\n\n**Turn Context (split turn):**"), std::string::npos) << summary;
    ASSERT_EQ(server.requests().size(), 3u);  // history, turn prefix, the gate's follow-up
    EXPECT_NE(server.requests()[2].body.find("Your checkpoint above leaves out"), std::string::npos);
    EXPECT_EQ(server.requests()[0].target, "/v1/chat/completions");
    EXPECT_EQ(boost::json::parse(server.requests()[0].body).at("model"), "local");
    EXPECT_NE(
        agentctx::test::read_text(path).find("\"summarizer\":\"openai-compatible:local\""), std::string::npos
    );

    server.set_default({.status = 401, .body = R"({"error":{"message":"bad key","code":"invalid_api_key"}})"}
    );
    const auto fresh = copy_of_bundled("provider-auth.jsonl");
    const auto before = agentctx::test::read_text(fresh);
    const auto fail = run_process(
        "env -u OPENAI_API_KEY " + cli + " compact " + fresh.string() +
        " --provider openai-compatible --base-url " + server.base_url() + "/v1 --keep-recent 3000 --json"
    );
    EXPECT_EQ(fail.exit_code, 1);
    EXPECT_NE(fail.out.find("\"code\":\"auth\""), std::string::npos) << fail.out;
    EXPECT_EQ(agentctx::test::read_text(fresh), before);
    fs::remove(fresh);
    // A hosted provider without its key is a usage error, before anything runs.
    const auto nokey = run_process(
        "env -u ANTHROPIC_API_KEY " + cli + " compact " + path.string() + " --provider anthropic --json"
    );
    EXPECT_EQ(nokey.exit_code, 2);
    EXPECT_NE(nokey.out.find("ANTHROPIC_API_KEY"), std::string::npos) << nokey.out;
    fs::remove(path);
}

TEST(cli_plan, global_and_trusted_project_settings_files)
{
    const auto root = fs::temp_directory_path() / ("agentctx-cli-settings-" + std::to_string(::getpid()));
    fs::create_directories(root / "agent");
    fs::create_directories(root / "project" / ".pi");
    std::ofstream(root / "agent" / "settings.json")
        << R"({"compaction":{"keepRecentTokens":3000,"reserveTokens":1000}})";
    std::ofstream(root / "project" / ".pi" / "settings.json") << R"({"compaction":{"reserveTokens":2000}})";
    const auto session = std::string(AGENTCTX_EXAMPLES_DIR) + "/sessions/coding-task.jsonl";
    const std::string env = "PI_CODING_AGENT_DIR=" + (root / "agent").string() + " ";
    auto threshold = [&](const std::string& extra) {
        const auto r =
            run_process("env " + env + cli + " plan " + session + " --context-window 10000 --json " + extra);
        EXPECT_EQ(r.exit_code, 0) << r.err;
        return boost::json::parse(r.out).at("threshold").as_int64();
    };
    EXPECT_EQ(threshold(""), 9000);                                              // global file
    EXPECT_EQ(threshold("--project-dir " + (root / "project").string()), 9000);  // untrusted: ignored
    EXPECT_EQ(threshold("--project-dir " + (root / "project").string() + " --trust-project"), 8000);
    EXPECT_EQ(
        threshold("--project-dir " + (root / "project").string() + " --trust-project --reserve 500"), 9500
    );
    const auto with =
        boost::json::parse(run_process("env " + env + cli + " plan " + session + " --json").out);
    const auto flag = boost::json::parse(
        run_process("env -u PI_CODING_AGENT_DIR " + cli + " plan " + session + " --keep-recent 3000 --json")
            .out
    );
    EXPECT_EQ(
        with.at("plan").at("firstKeptEntryId"), flag.at("plan").at("firstKeptEntryId")
    );  // keepRecentTokens 3000 from the file
    fs::remove_all(root);
}

TEST(cli_context, pi16_system_messages_show_with_role_system_and_the_replayed_prompt)
{
    // A system message used to show as role "other".
    const auto r = run_process(
        cli + " context " + std::string(AGENTCTX_EXAMPLES_DIR) + "/sessions/pi16-task.jsonl --json"
    );
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto v = boost::json::parse(r.out).as_object();
    bool system = false;
    for (const auto& m : v.at("messages").as_array())
    {
        EXPECT_NE(m.at("role"), "other");
        system = system || m.at("role") == "system";
    }
    EXPECT_TRUE(system);
    ASSERT_TRUE(v.at("system").is_object());
    EXPECT_EQ(v.at("system").at("role"), "system");
    EXPECT_GT(v.at("estimatedTokens").as_int64(), 0);
}

// ---- portable checkpoints ---------------------------------------------------

namespace {

// The bundled session compacted with the offline summarizer (keep 3000); returns its path and
// the text it had before.
std::pair<fs::path, std::string> compacted_copy(const std::string& name)
{
    const auto path = copy_of_bundled(name);
    const auto before = agentctx::test::read_text(path);
    const auto r = run_process(cli + " compact " + path.string() + " --keep-recent 3000 --json");
    EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
    return {path, before};
}

std::size_t lines_of(const std::string& s)
{
    return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n'));
}

}  // namespace

TEST(cli_checkpoint, export_then_restore_into_a_copy_appends_one_compaction)
{
    const auto [original, uncompacted] = compacted_copy("ckpt-original.jsonl");
    const auto exported = run_process(cli + " checkpoint export " + original.string() + " --json");
    ASSERT_EQ(exported.exit_code, 0) << exported.err << exported.out;
    const auto record = boost::json::parse(exported.out).as_object();
    EXPECT_EQ(record.at("format"), "agentctx-checkpoint-v1");
    EXPECT_EQ(record.at("identity").at("provider"), "offline");
    const auto record_file = scratch("ckpt-record.json", exported.out);

    // A copy of the history before the compaction: the record applies, one line is appended.
    const auto copy = scratch("ckpt-copy.jsonl", uncompacted);
    const auto r = run_process(
        cli + " checkpoint restore " + copy.string() + " " + record_file.string() +
        " --keep-recent 3000 --json"
    );
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    const auto v = boost::json::parse(r.out).as_object();
    EXPECT_EQ(v.at("restored"), true);
    EXPECT_EQ(v.at("recordDigest"), record.at("digest"));
    const auto after = agentctx::test::read_text(copy);
    EXPECT_EQ(after.substr(0, uncompacted.size()), uncompacted);
    EXPECT_EQ(lines_of(after), lines_of(uncompacted) + 1);
    // The projection is the original's: same roles and entry ids after the summary (entries the
    // compaction carries verbatim, like the current instruction, show its own id).
    auto ids = [](const std::string& out) {
        std::vector<std::string> roles;
        const auto v = boost::json::parse(out);
        std::string compaction;
        for (const auto& m : v.at("messages").as_array())
        {
            const std::string id(m.at("entryId").as_string());
            if (m.at("role") == "compactionSummary")
                compaction = id;
            roles.push_back(
                std::string(m.at("role").as_string()) + (m.at("role") == "compactionSummary" ? std::string()
                                                         : id == compaction                  ? "@carried"
                                                                                             : "@" + id)
            );
        }
        return roles;
    };
    EXPECT_EQ(
        ids(run_process(cli + " context " + copy.string() + " --json").out),
        ids(run_process(cli + " context " + original.string() + " --json").out)
    );
    // The bundled session holds one Pi-written compaction (unrecorded); the restored one verifies.
    const auto ver = run_process(cli + " verify " + copy.string() + " --json");
    EXPECT_EQ(ver.exit_code, 0) << ver.out;
    const auto rows = boost::json::parse(ver.out).at("compactions").as_array();
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].at("status"), "unrecorded");
    EXPECT_EQ(rows[1].at("status"), "ok");
    EXPECT_EQ(rows[1].at("id"), v.at("entryId"));
    // Status shows the latest compaction's record.
    const auto st = run_process(cli + " checkpoint status " + copy.string() + " --keep-recent 3000 --json");
    ASSERT_EQ(st.exit_code, 0) << st.err;
    const auto sv = boost::json::parse(st.out);
    EXPECT_EQ(sv.at("latest").at("status"), "ok");
    EXPECT_EQ(sv.at("latest").at("sameConfiguration"), true);
    EXPECT_EQ(sv.at("latest").at("restorable"), true);
    // Another keepRecentTokens: status says so.
    const auto st2 = run_process(cli + " checkpoint status " + copy.string() + " --keep-recent 100 --json");
    EXPECT_EQ(boost::json::parse(st2.out).at("latest").at("sameConfiguration"), false);
    for (const auto& p : {original, record_file, copy})
        fs::remove(p);
}

TEST(cli_checkpoint, rejections_name_the_reason_and_leave_the_file_byte_identical)
{
    const auto [original, uncompacted] = compacted_copy("ckpt-orig2.jsonl");
    const auto exported = run_process(cli + " checkpoint export " + original.string());
    ASSERT_EQ(exported.exit_code, 0) << exported.err;
    const auto record_file = scratch("ckpt-record2.json", exported.out);
    auto expect_refused = [&](const std::string& name,
                              const std::string& text,
                              const std::string& record,
                              const std::string& flags,
                              const std::string& code,
                              const std::string& reason) {
        const auto copy = scratch(name, text);
        const auto r = run_process(
            cli + " checkpoint restore " + copy.string() + " " + record + " " + flags + " --json"
        );
        EXPECT_EQ(r.exit_code, 1) << name << ": " << r.out << r.err;
        const auto v = boost::json::parse(r.out);
        EXPECT_EQ(v.at("error").at("code").as_string(), code) << name << ": " << r.out;
        EXPECT_EQ(v.at("error").at("reason").as_string(), reason) << name << ": " << r.out;
        EXPECT_EQ(v.at("error").at("originalsAvailable"), true);
        EXPECT_FALSE(v.at("error").at("message").as_string().empty());
        EXPECT_EQ(agentctx::test::read_text(copy), text) << name << ": the file changed";
        fs::remove(copy);
    };
    // Another keepRecentTokens is another summary configuration.
    expect_refused(
        "ckpt-config.jsonl",
        uncompacted,
        record_file.string(),
        "--keep-recent 100",
        "checkpoint_mismatch",
        "other_configuration"
    );
    // Shortened: only the header and the first entries.
    {
        std::string shortened;
        std::size_t pos = 0;
        for (int k = 0; k < 4; ++k)
            pos = uncompacted.find('\n', pos) + 1;
        shortened = uncompacted.substr(0, pos);
        expect_refused(
            "ckpt-short.jsonl",
            shortened,
            record_file.string(),
            "--keep-recent 3000",
            "checkpoint_mismatch",
            "shortened"
        );
    }
    // Replaced: the second entry's text edited in place.
    {
        std::string edited = uncompacted;
        const auto second = edited.find('\n', edited.find('\n') + 1) + 1;
        const auto at = edited.find("\"text\":\"", second);
        ASSERT_NE(at, std::string::npos);
        edited.insert(at + 8, "EDITED ");
        expect_refused(
            "ckpt-edited.jsonl",
            edited,
            record_file.string(),
            "--keep-recent 3000",
            "checkpoint_mismatch",
            "replaced"
        );
    }
    // A record whose summary was changed: corrupt. From stdin.
    {
        auto rec = boost::json::parse(exported.out).as_object();
        rec["summary"] = "## Goal\ntampered";
        const auto bad = scratch("ckpt-bad.json", boost::json::serialize(rec));
        const auto copy = scratch("ckpt-corrupt.jsonl", uncompacted);
        const auto r = run_process(
            cli + " checkpoint restore " + copy.string() + " - --keep-recent 3000 --json < " + bad.string()
        );
        EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
        EXPECT_EQ(boost::json::parse(r.out).at("error").at("reason"), "corrupt") << r.out;
        EXPECT_EQ(agentctx::test::read_text(copy), uncompacted);
        fs::remove(copy);
        fs::remove(bad);
    }
    // Trigger settings do not matter: another --reserve is accepted.
    {
        const auto copy = scratch("ckpt-reserve.jsonl", uncompacted);
        const auto r = run_process(
            cli + " checkpoint restore " + copy.string() + " " + record_file.string() +
            " --keep-recent 3000 --reserve 1000 --json"
        );
        EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
        fs::remove(copy);
    }
    // Before our compaction the latest one is Pi's: it carries no record.
    {
        const auto plain = scratch("ckpt-plain.jsonl", uncompacted);
        const auto r = run_process(cli + " checkpoint export " + plain.string() + " --json");
        EXPECT_EQ(r.exit_code, 1);
        EXPECT_EQ(boost::json::parse(r.out).at("error").at("reason"), "unrecorded");
        fs::remove(plain);
    }
    // A session without any compaction has nothing to export.
    {
        const auto plain = scratch(
            "ckpt-none.jsonl", uncompacted.substr(0, uncompacted.find('\n', uncompacted.find('\n') + 1) + 1)
        );
        const auto r = run_process(cli + " checkpoint export " + plain.string() + " --json");
        EXPECT_EQ(r.exit_code, 1);
        EXPECT_EQ(boost::json::parse(r.out).at("error").at("reason"), "no_compaction") << r.out;
        fs::remove(plain);
    }
    fs::remove(original);
    fs::remove(record_file);
}

TEST(cli_verify, flags_a_hand_edited_covered_entry_and_never_writes)
{
    const auto [path, uncompacted] = compacted_copy("verify.jsonl");
    const auto ok = run_process(cli + " verify " + path.string() + " --json");
    ASSERT_EQ(ok.exit_code, 0) << ok.out << ok.err;
    const auto v = boost::json::parse(ok.out);
    ASSERT_EQ(v.at("compactions").as_array().size(), 2u);  // Pi's (unrecorded), then ours
    EXPECT_EQ(v.at("compactions").at(0).at("status"), "unrecorded");
    EXPECT_EQ(v.at("compactions").at(1).at("status"), "ok");
    EXPECT_EQ(v.at("changed"), false);
    EXPECT_EQ(v.at("compactions").at(1).at("sourceRevision"), v.at("compactions").at(1).at("actual"));

    // Hand-edit the first covered entry (line 2).
    std::string text = agentctx::test::read_text(path);
    const auto second = text.find('\n') + 1;
    const auto at = text.find("\"text\":\"", second);
    ASSERT_NE(at, std::string::npos);
    text.insert(at + 8, "EDITED ");
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
    const auto bad = run_process(cli + " verify " + path.string() + " --json");
    EXPECT_EQ(bad.exit_code, 1) << bad.out;
    const auto b = boost::json::parse(bad.out);
    EXPECT_EQ(b.at("compactions").at(0).at("status"), "unrecorded");
    EXPECT_EQ(b.at("compactions").at(1).at("status"), "changed");
    EXPECT_EQ(b.at("changed"), true);
    EXPECT_EQ(agentctx::test::read_text(path), text);  // never written
    const auto human = run_process(cli + " verify " + path.string());
    EXPECT_EQ(human.exit_code, 1);
    EXPECT_NE(human.out.find("changed"), std::string::npos) << human.out;
    // Export refuses a record of a changed history.
    const auto ex = run_process(cli + " checkpoint export " + path.string() + " --json");
    EXPECT_EQ(ex.exit_code, 1);
    EXPECT_EQ(boost::json::parse(ex.out).at("error").at("reason"), "replaced");
    fs::remove(path);
}

// ---- hostile records and forged derived state -----------------------------------------------

namespace {

std::string hostile(const std::string& name)
{
    return std::string(AGENTCTX_FIXTURES_DIR) + "/hostile/" + name;
}

}  // namespace

TEST(cli_hostile, forged_records_are_refused_with_their_reason_and_the_field)
{
    const auto [original, uncompacted] = compacted_copy("hostile-original.jsonl");
    const std::pair<std::string, std::string> cases[] = {
        {"record-kept-repeated.json", "checkpoint field 'keptVerbatim': 2000 ids, over the bound of 1000"},
        {"record-read-files-over-bound.json",
         "checkpoint field 'readFiles': 1001 paths, over the bound of 1000"},
        {"record-duplicate-keys.json", "the checkpoint record names the key 'summary' twice in one object"},
        {"record-empty-summary.json", "checkpoint field 'summary': Summarization returned an empty summary"},
    };
    for (const auto& [record, message] : cases)
    {
        const auto copy = scratch("hostile-copy.jsonl", uncompacted);
        const auto r = run_process(
            cli + " checkpoint restore " + copy.string() + " " + hostile(record) +
            " --keep-recent 3000 --json"
        );
        EXPECT_EQ(r.exit_code, 1) << record << ": " << r.out << r.err;
        const auto e = boost::json::parse(r.out).at("error");
        EXPECT_EQ(e.at("code"), "checkpoint_invalid") << record;
        EXPECT_EQ(e.at("reason"), "corrupt") << record;
        EXPECT_EQ(e.at("message"), boost::json::value(message)) << record;
        EXPECT_EQ(agentctx::test::read_text(copy), uncompacted) << record;
        fs::remove(copy);
    }
    fs::remove(original);
}

TEST(cli_verify, forged_derived_state_is_invalid_and_exits_1)
{
    {
        const auto r = run_process(cli + " verify " + hostile("session-forged-pins.jsonl") + " --json");
        EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
        const auto v = boost::json::parse(r.out);
        EXPECT_EQ(v.at("invalid"), true);
        EXPECT_EQ(v.at("compactions").at(0).at("status"), "invalid");
        EXPECT_EQ(
            v.at("compactions").at(0).at("problems"),
            (boost::json::array{"details.agentctx.pinned: carried entry 'rem' differs from the covered entry"}
            )
        );
        const auto human = run_process(cli + " verify " + hostile("session-forged-pins.jsonl"));
        EXPECT_EQ(human.exit_code, 1);
        EXPECT_NE(human.out.find("not used: the portable summary stands in"), std::string::npos) << human.out;
        // The forged pin never reaches the context: the summary and the kept entries only.
        const auto ctx = run_process(cli + " context " + hostile("session-forged-pins.jsonl") + " --json");
        ASSERT_EQ(ctx.exit_code, 0) << ctx.err;
        std::vector<std::string> roles;
        const auto shown = boost::json::parse(ctx.out);
        for (const auto& m : shown.at("messages").as_array())
            roles.emplace_back(m.at("role").as_string());
        EXPECT_EQ(roles, (std::vector<std::string>{"compactionSummary", "user", "assistant"}));
    }
    {
        const auto r = run_process(cli + " verify " + hostile("session-forged-native.jsonl") + " --json");
        EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
        const auto v = boost::json::parse(r.out);
        EXPECT_EQ(v.at("compactions").at(0).at("status"), "invalid");
        EXPECT_EQ(
            v.at("compactions").at(0).at("problems"),
            (boost::json::array{
                "details.agentctx.native: the compaction records no native summary (evidence.method is not "
                "\"native\")"})
        );
    }
}

TEST(cli_probe, each_recorded_compaction_is_scored_against_the_probes_of_its_span)
{
    agentctx::test::session_text s;
    s.user("u0", "Never push to main. EU suppliers only.").assistant("a0", "Understood.");
    s.user("u1", "Fix `parse_row`.").assistant("a1", "Fixed.");
    s.user("u2", "Next.").assistant("a2", "Done.");
    s.compaction(
        "c1", "u2", "## Goal\nFix parse_row.\n\n## Constraints & Preferences\n- Suppliers: EU only."
    );
    s.user("u3", "More.");
    const auto path = scratch("probe.jsonl", s.text);
    const auto r = run_process(cli + " probe " + path.string() + " --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto v = boost::json::parse(r.out).as_object();
    const auto& c = v.at("sessions").at(0).at("compactions").at(0).as_object();
    EXPECT_EQ(c.at("entryId"), "c1");
    EXPECT_EQ(
        boost::json::serialize(c.at("byKind")),
        R"({"rule":{"probes":2,"kept":1},"artifact":{"probes":1,"kept":1},"open_work":{"probes":0,"kept":0},)"
        R"("decision":{"probes":0,"kept":0}})"
    );
    EXPECT_EQ(boost::json::serialize(c.at("missing")), R"([{"kind":"rule","text":"Never push to main."}])");
    EXPECT_EQ(v.at("total").at("rule").at("kept"), 1);
    const auto text = run_process(cli + " probe " + path.string() + " --missing");
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(
        text.out.find("  c1                              1/2        1/1          -          -\n"),
        std::string::npos
    ) << text.out;
    EXPECT_NE(text.out.find("      missing rule: Never push to main.\n"), std::string::npos);
    EXPECT_NE(text.out.find("  rule       1/2 (50%)\n"), std::string::npos);
    fs::remove(path);
}
