// agentctx import / export / read commands on a PostgreSQL session reference.
#include "file_text.hpp"
#include "pg_test_support.hpp"
#include "run_process.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace {

namespace fs = std::filesystem;

TEST(pg_cli, import_export_and_read_commands_on_a_postgresql_reference)
{
    std::string why;
    auto url = agentctx::test::pg_conninfo(why);
    if (!url)
        GTEST_SKIP() << why;
    // A copy with a fresh session id, so reruns on one database do not collide.
    const fs::path fixture = fs::path(AGENTCTX_EXAMPLES_DIR) / "sessions/pi16-task.jsonl";
    std::string text = agentctx::test::read_text(fixture);
    const std::string old_id = "019c3d10-8e21-7f44-a0b5-7c6d5e4f3a21";
    const auto at = text.find(old_id);
    ASSERT_NE(at, std::string::npos);
    const std::string id = agentctx::test::unique_session_id("cli");
    text.replace(at, old_id.size(), id);
    const fs::path in = fs::temp_directory_path() / (id + ".jsonl");
    const fs::path out = fs::temp_directory_path() / (id + "-out.jsonl");
    std::ofstream(in, std::ios::binary) << text;
    const std::string cli = AGENTCTX_CLI;
    const std::string q = "'" + *url + "'";
    const std::string ref = "'" + *url + "#" + id + "'";

    auto imported = agentctx::test::run_process(cli + " import " + in.string() + " " + q + " --json");
    ASSERT_EQ(imported.exit_code, 0) << imported.out;
    EXPECT_NE(imported.out.find("\"sessionId\":\"" + id + "\""), std::string::npos) << imported.out;
    auto again = agentctx::test::run_process(cli + " import " + in.string() + " " + q + " --json");
    EXPECT_NE(again.exit_code, 0);
    EXPECT_NE(again.out.find("already_exists"), std::string::npos) << again.out;

    auto exported = agentctx::test::run_process(cli + " export " + ref + " " + out.string());
    ASSERT_EQ(exported.exit_code, 0) << exported.out;
    EXPECT_EQ(agentctx::test::read_text(out), text) << "byte for byte";

    // Read commands take the reference and say the same as on the file.
    for (const char* command : {"inspect", "context", "plan"})
    {
        auto on_db = agentctx::test::run_process(cli + " " + command + " " + ref + " --json");
        auto on_file = agentctx::test::run_process(cli + " " + command + " " + in.string() + " --json");
        EXPECT_EQ(on_db.exit_code, 0) << command << on_db.out;
        EXPECT_EQ(on_db.out, on_file.out) << command;
    }
    auto missing = agentctx::test::run_process(cli + " inspect '" + *url + "#no-such-session' --json");
    EXPECT_EQ(missing.exit_code, 4);
    EXPECT_NE(missing.out.find("not_found"), std::string::npos) << missing.out;
    fs::remove(in);
    fs::remove(out);
}

}  // namespace
