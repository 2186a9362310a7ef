// The example clients (Python, Node) run their agent loop against the server binary.
#include "run_process.hpp"
#include "server_binary.hpp"

#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

// The interpreter's path, or "" when it is not installed.
std::string find_program(const std::string& name)
{
    auto r = agentctx::test::run_process("command -v " + name);
    while (!r.out.empty() && (r.out.back() == '\n' || r.out.back() == '\r'))
        r.out.pop_back();
    return r.exit_code == 0 ? r.out : std::string();
}

// Runs `interpreter client --url ... --token ...` against a fresh server (threshold 4000 tokens);
// the client's report, its last line.
json::value run_client(const std::string& interpreter, const std::string& client)
{
    const auto dir =
        fs::temp_directory_path() / ("agentctx-clients-" + std::to_string(::getpid()) + "-" +
                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir / "data");
    std::ofstream(dir / "settings.json")
        << R"({"compaction":{"reserveTokens":196000,"keepRecentTokens":300}})";
    agentctx::test::server_process server(
        AGENTCTX_SERVER_BIN,
        {.args =
             {"--port",
              "0",
              "--data-dir",
              (dir / "data").string(),
              "--settings",
              (dir / "settings.json").string()},
         .env = {{"AGENTCTX_SERVER_TOKEN", "client-t0ken"}}}
    );
    EXPECT_NE(server.port, 0) << server.log;
    const auto r = agentctx::test::run_process(
        interpreter + " " + std::string(AGENTCTX_EXAMPLES_DIR) + "/clients/" + client +
        " --url http://127.0.0.1:" + std::to_string(server.port) + " --token client-t0ken"
    );
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    fs::remove_all(dir);
    const auto last = r.out.rfind('\n', r.out.size() - (r.out.empty() ? 0 : 2));
    boost::system::error_code ec;
    auto report = json::parse(r.out.substr(last == std::string::npos ? 0 : last + 1), ec);
    EXPECT_FALSE(ec) << r.out << r.err;
    return report;
}

// What both clients must report: every entry posted, one overflow recovered, two compactions
// (the overflow's and the last turn's threshold check), the context read back compacted.
void expect_the_scripted_run(const json::value& report)
{
    ASSERT_TRUE(report.is_object()) << report;
    EXPECT_EQ(report.at("entries"), 13) << report;
    EXPECT_EQ(report.at("contextMessages"), 5) << report;
    EXPECT_EQ(report.at("overflowRetries"), 1) << report;
    EXPECT_EQ(report.at("compactions"), 2) << report;
    EXPECT_EQ(report.at("startsWithSummary"), true) << report;
    EXPECT_EQ(
        report.at("lastMessage"),
        json::parse(
            R"({"role":"assistant","content":"Fixed the link line (-lm); the build and all 12 tests pass."})"
        )
    ) << report;
}

}  // namespace

TEST(server_clients, the_python_agent_loop_runs_against_the_server_binary)
{
    const auto python = find_program("python3");
    if (python.empty())
        GTEST_SKIP() << "python3 is not installed: the Python client cannot run";
    expect_the_scripted_run(run_client(python, "agent_loop.py"));
}

TEST(server_clients, the_node_agent_loop_runs_against_the_server_binary)
{
    const auto node = find_program("node");
    if (node.empty())
        GTEST_SKIP() << "node is not installed: the Node client cannot run";
    expect_the_scripted_run(run_client(node, "agent_loop.mjs"));
}
