// The agent server under load, measured from outside: it runs as a child process; N client
// threads append to and read the context of 1,000 sessions over keep-alive loopback connections,
// first alone, then with compactions running against a loopback provider. Throughput, p50/p99.
//   bench_server_load [--clients N=16] [--sessions N=1000] [--seconds S=10] [--threads N=2]
//                     [--compactors N=4] [--server BIN]     (BIN default: AGENTCTX_SERVER_BIN)
#include "bench_http.hpp"
#include "bench_rss.hpp"
#include "fake_provider_server.hpp"
#include "server_binary.hpp"
#include "session_generator.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

using agentctx::bench::connection;

namespace {

struct samples
{
    std::vector<double> ms;
    std::size_t errors = 0, conflicts = 0;
    void merge(const samples& o)
    {
        ms.insert(ms.end(), o.ms.begin(), o.ms.end());
        errors += o.errors;
        conflicts += o.conflicts;
    }
};

double percentile(std::vector<double> v, double p)
{
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

void report(const char* what, const samples& s, double seconds)
{
    std::printf(
        "  %-10s %8zu ok %6.0f/s  p50 %7.2f ms  p99 %7.2f ms  max %8.2f ms  (errors %zu, 409 %zu)\n",
        what,
        s.ms.size(),
        static_cast<double>(s.ms.size()) / seconds,
        percentile(s.ms, 0.5),
        percentile(s.ms, 0.99),
        percentile(s.ms, 1.0),
        s.errors,
        s.conflicts
    );
}

double ms_since(clock_type::time_point t0)
{
    return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

std::string append_body(std::mt19937_64& rng, int k)
{
    std::string text = "step " + std::to_string(rng() % 100000) + ": " + std::string(160 + rng() % 200, 'w');
    if (k % 2 == 0)
        return R"({"type":"message","message":{"role":"user","content":")" + text + R"(","timestamp":1}})";
    return R"({"type":"message","message":{"role":"assistant","content":[{"type":"text","text":")" + text +
           R"("}],"provider":"openai","model":"bench","stopReason":"stop","timestamp":1}})";
}

// Runs for `seconds`: `clients` threads append (2 of 3 requests) and read context (1 of 3) on
// random sessions; `compactors` threads compact random sessions back to back.
void phase(
    const char* title, std::uint16_t port, std::size_t sessions, int clients, int compactors, double seconds
)
{
    std::atomic<bool> stop{false};
    std::vector<samples> appends(static_cast<std::size_t>(clients)), reads(static_cast<std::size_t>(clients)),
        compacts(static_cast<std::size_t>(compactors));
    std::vector<std::thread> threads;
    for (int c = 0; c < clients; ++c)
        threads.emplace_back([&, c] {
            connection conn(port);
            std::mt19937_64 rng(static_cast<std::uint64_t>(c) * 7919 + 1);
            std::string body;
            for (int k = 0; !stop.load(std::memory_order_relaxed); ++k)
            {
                const std::string id = "bench" + std::to_string(rng() % sessions);
                const bool read = k % 3 == 2;
                const auto t0 = clock_type::now();
                const int status =
                    read ? conn.request("GET", "/v1/sessions/" + id + "/context", "", body)
                         : conn.request("POST", "/v1/sessions/" + id + "/entries", append_body(rng, k), body);
                auto& s = read ? reads[static_cast<std::size_t>(c)] : appends[static_cast<std::size_t>(c)];
                if (status == (read ? 200 : 201))
                    s.ms.push_back(ms_since(t0));
                else if (status == 0)
                {
                    ++s.errors;
                    return;
                }
                else if (s.errors++ == 0)
                    std::fprintf(stderr, "%s %d: %s\n", read ? "context" : "append", status, body.c_str());
            }
        });
    for (int c = 0; c < compactors; ++c)
        threads.emplace_back([&, c] {
            connection conn(port);
            std::mt19937_64 rng(static_cast<std::uint64_t>(c) * 104729 + 3);
            std::string body;
            while (!stop.load(std::memory_order_relaxed))
            {
                const std::string id = "bench" + std::to_string(rng() % sessions);
                const auto t0 = clock_type::now();
                const int status = conn.request("POST", "/v1/sessions/" + id + "/compact", "", body);
                auto& s = compacts[static_cast<std::size_t>(c)];
                if (status == 200)
                    s.ms.push_back(ms_since(t0));
                else if (status == 409)
                    ++s.conflicts;  // nothing left to compact, or a compaction already running
                else if (status == 0)
                {
                    ++s.errors;
                    return;
                }
                else
                {
                    if (s.errors++ == 0)
                        std::fprintf(stderr, "compact %d: %s\n", status, body.c_str());
                }
            }
        });
    const auto t0 = clock_type::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    stop = true;
    for (auto& t : threads)
        t.join();
    const double elapsed = ms_since(t0) / 1000.0;
    samples a, r, k;
    for (const auto& s : appends)
        a.merge(s);
    for (const auto& s : reads)
        r.merge(s);
    for (const auto& s : compacts)
        k.merge(s);
    std::printf(
        "%s (%d clients, %d compactors, %.1f s): %.0f requests/s\n",
        title,
        clients,
        compactors,
        elapsed,
        static_cast<double>(a.ms.size() + r.ms.size() + k.ms.size()) / elapsed
    );
    report("append", a, elapsed);
    report("context", r, elapsed);
    if (compactors)
        report("compact", k, elapsed);
}

double child_cpu_seconds(pid_t pid)
{
    std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const auto close = stat.rfind(')');
    std::vector<std::string> fields;
    std::string cur;
    for (std::size_t i = close + 2; i < stat.size(); ++i)
        if (stat[i] == ' ')
            fields.push_back(std::move(cur)), cur.clear();
        else
            cur += stat[i];
    // fields[11], fields[12]: utime, stime (fields counted from the state, field 3 of stat).
    return (std::stod(fields.at(11)) + std::stod(fields.at(12))) /
           static_cast<double>(::sysconf(_SC_CLK_TCK));
}

}  // namespace

int main(int argc, char** argv)
{
    int clients = 16, threads = 2, compactors = 4;
    std::size_t sessions = 1000;
    double seconds = 10;
    std::string bin;
#ifdef AGENTCTX_SERVER_BIN
    bin = AGENTCTX_SERVER_BIN;
#endif
    if (const char* e = std::getenv("AGENTCTX_SERVER_BIN"))
        bin = e;
    for (int i = 1; i + 1 < argc; i += 2)
    {
        const std::string a = argv[i];
        if (a == "--clients")
            clients = std::atoi(argv[i + 1]);
        else if (a == "--sessions")
            sessions = std::strtoull(argv[i + 1], nullptr, 10);
        else if (a == "--seconds")
            seconds = std::atof(argv[i + 1]);
        else if (a == "--threads")
            threads = std::atoi(argv[i + 1]);
        else if (a == "--compactors")
            compactors = std::atoi(argv[i + 1]);
        else if (a == "--server")
            bin = argv[i + 1];
    }

    // 1,000 sessions of ~120 entries (~35k tokens: over keepRecentTokens 20000, under the threshold).
    const fs::path dir = fs::temp_directory_path() / ("agentctx-bench-server-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const std::string text =
        agentctx::tools::generate_session({.seed = 5, .entries = 120, .mean_tool_output = 2500});
    for (std::size_t i = 0; i < sessions; ++i)
        std::ofstream(dir / ("bench" + std::to_string(i) + ".jsonl"), std::ios::binary) << text;
    std::printf(
        "%zu sessions of %.2f MB in %s\n", sessions, static_cast<double>(text.size()) / 1e6, dir.c_str()
    );

    agentctx::test::fake_provider_server provider;
    provider.set_default(
        {.body = agentctx::test::openai_body("## Goal\nserver load summary\n\n## Progress\n- done")}
    );
    const std::string base = provider.base_url() + "/v1";

    const std::string t = std::to_string(threads), open = std::to_string(sessions + 64);
    agentctx::test::server_process child(
        bin,
        {.args =
             {"--no-auth",
              "--port",
              "0",
              "--data-dir",
              dir.string(),
              "--threads",
              t,
              "--max-open-sessions",
              open},
         .env = {{"OPENAI_BASE_URL", base}, {"OPENAI_API_KEY", "k"}, {"AGENTCTX_MODEL", "bench"}}}
    );
    const std::uint16_t port = child.port;
    const pid_t pid = child.pid;
    if (!port)
    {
        std::fprintf(stderr, "the server did not start (%s): %s\n", bin.c_str(), child.log.c_str());
        fs::remove_all(dir);
        return 1;
    }
    // Drain the server's output so it never blocks on a full pipe (it ends when the server exits).
    std::thread drain([fd = child.fd] {
        char buf[4096];
        while (::read(fd, buf, sizeof buf) > 0)
        {}
    });
    struct join_drain
    {
        agentctx::test::server_process& child;
        std::thread& drain;
        ~join_drain()
        {
            child.kill_now();
            drain.join();
        }
    } joined{child, drain};

    {
        // Open every session once (first touch reads the file), so both phases see warm sessions.
        connection conn(port);
        std::string body;
        const auto t0 = clock_type::now();
        for (std::size_t i = 0; i < sessions; ++i)
            if (conn.request("GET", "/v1/sessions/bench" + std::to_string(i) + "/context", "", body) != 200)
            {
                std::fprintf(stderr, "context of bench%zu: %s\n", i, body.c_str());
                return 1;
            }
        std::printf("first context read of every session: %.2f s\n", ms_since(t0) / 1000.0);
    }
    const double cpu0 = child_cpu_seconds(pid);
    phase("appends + context reads", port, sessions, clients, 0, seconds);
    const double cpu1 = child_cpu_seconds(pid);
    std::printf(
        "  server CPU %.2f s, peak RSS %.0f MiB\n",
        cpu1 - cpu0,
        agentctx::bench::peak_rss_mib(std::to_string(pid))
    );
    phase("appends + context reads + compactions", port, sessions, clients, compactors, seconds);
    std::printf(
        "  server CPU %.2f s, peak RSS %.0f MiB, provider requests %zu\n",
        child_cpu_seconds(pid) - cpu1,
        agentctx::bench::peak_rss_mib(std::to_string(pid)),
        provider.requests().size()
    );

    ::kill(pid, SIGTERM);
    child.wait(std::chrono::seconds(30));
    fs::remove_all(dir);
    return 0;
}
