// `agentctx recover` against the loopback fake provider: finishes piecewise, survives SIGKILL and
// Ctrl-C between pieces and resumes without repeating a completed piece (request counts).
#include "fake_provider_server.hpp"
#include "long_session.hpp"
#include "run_process.hpp"

#include <agentctx/compaction/progress_record.hpp>
#include <agentctx/compaction/session_log.hpp>

#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

#include <csignal>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using agentctx::test::run_process;

const std::string cli = AGENTCTX_CLI;

std::string read(const fs::path& p)
{
    return agentctx::test::read_text(p);
}

std::size_t progress_lines(const std::string& text)
{
    std::size_t n = 0;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);)
        n += l.find("\"customType\":\"agentctx.compaction_progress\"") != std::string::npos;
    return n;
}

class recover_test : public ::testing::Test
{
protected:
    void SetUp() override
    {
        path_ = agentctx::test::scratch_long_session("recover", "big.jsonl", 60);
        dir_ = path_.parent_path();
        original_ = read(path_);
        agentctx::test::scripted_response r;
        r.body = agentctx::test::openai_body("## Goal\nRecovered note.");
        r.delay = std::chrono::milliseconds(delay_ms_);
        server_.set_default(r);
    }
    void TearDown() override { fs::remove_all(dir_); }

    std::vector<std::string> argv() const
    {
        return {
            cli,
            "recover",
            path_.string(),
            "--provider",
            "openai-compatible",
            "--base-url",
            server_.base_url() + "/v1",
            "--max-source-chars",
            "2000",
            "--keep-recent",
            "390",
            "--json"};
    }
    std::string command() const
    {
        std::string c;
        for (const auto& a : argv())
            c += (c.empty() ? "" : " ") + a;
        return c;
    }

    // Starts recover as a child, waits until `pieces` progress entries are in the file, signals it.
    int interrupt_after(std::size_t pieces, int sig)
    {
        auto args = argv();
        std::vector<char*> cargs;
        for (auto& a : args)
            cargs.push_back(a.data());
        cargs.push_back(nullptr);
        const pid_t pid = ::fork();
        if (pid == 0)
        {
            const int devnull = ::open("/dev/null", O_WRONLY);
            ::dup2(devnull, 1);
            ::dup2(devnull, 2);
            ::execv(cargs[0], cargs.data());
            ::_exit(127);
        }
        const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (progress_lines(read(path_)) < pieces && std::chrono::steady_clock::now() < limit)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        ::kill(pid, sig);
        int status = 0;
        ::waitpid(pid, &status, 0);
        return status;
    }

    int delay_ms_ = 60;
    agentctx::test::fake_provider_server server_;
    fs::path dir_, path_;
    std::string original_;
};

}  // namespace

TEST_F(recover_test, finishes_piecewise_and_installs_one_compaction)
{
    const auto r = run_process(command());
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const auto out = json::parse(r.out).as_object();
    const auto& ev = out.at("evidence").as_object();
    EXPECT_EQ(ev.at("method"), "piecewise");
    const auto total = ev.at("pieces").at("total").to_number<std::size_t>();
    EXPECT_EQ(total, 23u);
    EXPECT_EQ(ev.at("calls"), 23);
    EXPECT_EQ(server_.requests().size(), total);
    const auto now = read(path_);
    ASSERT_EQ(now.compare(0, original_.size(), original_), 0);  // append-only
    EXPECT_EQ(progress_lines(now), total - 1);
    const auto last = now.substr(now.rfind('\n', now.size() - 2) + 1);
    EXPECT_EQ(json::parse(last).at("type"), "compaction");
    EXPECT_EQ(run_process(cli + " verify " + path_.string()).exit_code, 0);
}

TEST_F(recover_test, sigkill_between_pieces_then_restart_resumes_without_repeating_a_piece)
{
    const int status = interrupt_after(5, SIGKILL);
    ASSERT_TRUE(WIFSIGNALED(status));
    const auto killed_at = read(path_);
    const std::size_t kept = progress_lines(killed_at);
    ASSERT_GE(kept, 5u);
    const std::size_t first_run = server_.requests().size();
    EXPECT_LE(first_run, kept + 1);  // at most the piece in flight was lost
    // The strict loader accepts the file as the kill left it.
    agentctx::compaction::diagnostics diag;
    agentctx::compaction::load_report report;
    EXPECT_TRUE(agentctx::compaction::session_log::load(killed_at, {}, report, diag)) << diag.message;

    const auto r = run_process(command());
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const auto ev = json::parse(r.out).at("evidence").as_object();
    const auto total = ev.at("pieces").at("total").to_number<std::size_t>();
    EXPECT_EQ(total, 23u);
    EXPECT_EQ(ev.at("pieces").at("resumed").to_number<std::size_t>(), kept);
    EXPECT_EQ(ev.at("calls").to_number<std::size_t>(), total - kept);
    EXPECT_EQ(server_.requests().size(), first_run + total - kept);
    // No turn summarized by a completed piece of the first run is sent again.
    const auto reqs = server_.requests();
    for (std::size_t i = 0; i < kept; ++i)
        for (std::size_t t = 0; t < 60; ++t)
        {
            const auto marker = agentctx::test::turn_marker(t);
            if (reqs[i].body.find(marker) == std::string::npos)
                continue;
            for (std::size_t j = first_run; j < reqs.size(); ++j)
                EXPECT_EQ(reqs[j].body.find(marker), std::string::npos) << marker << " repeated";
        }
    EXPECT_EQ(run_process(cli + " verify " + path_.string()).exit_code, 0);
}

TEST_F(recover_test, ctrl_c_keeps_accepted_pieces_only_and_the_next_run_continues)
{
    const int status = interrupt_after(3, SIGINT);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 1);
    const auto now = read(path_);
    ASSERT_EQ(now.compare(0, original_.size(), original_), 0);
    const std::size_t kept = progress_lines(now);
    ASSERT_GE(kept, 3u);
    // Only progress lines were added.
    std::istringstream added(now.substr(original_.size()));
    std::size_t lines = 0;
    for (std::string l; std::getline(added, l);)
        ++lines;
    EXPECT_EQ(lines, kept);
    const auto r = run_process(command());
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(json::parse(r.out).at("evidence").at("pieces").at("resumed").to_number<std::size_t>(), kept);
}

TEST_F(recover_test, max_calls_stops_with_exit_1_and_names_the_kept_pieces)
{
    const auto r = run_process(command() + " --max-calls 4");
    EXPECT_EQ(r.exit_code, 1);
    const auto out = json::parse(r.out).as_object();
    EXPECT_EQ(out.at("error").at("code"), "summary_call_limit");
    EXPECT_NE(
        std::string(out.at("error").at("message").as_string()).find("4 of 23 pieces are kept"),
        std::string::npos
    );
    EXPECT_EQ(server_.requests().size(), 4u);
    EXPECT_EQ(progress_lines(read(path_)), 4u);
}
