// Open sessions per node: memory per open session, creates per second, reopens per second and their
// p99, through the library (in this process) and through the agent server (a child process).
//   bench_sessions [--via library|server] [--shape empty|chat20|tools500|compacted]
//                  [--store jsonl|memory|pg] [--sessions N=2000] [--clients N=64] [--threads N=2] [--server
//                  BIN]
// `--store pg` (server only) uses AGENTCTX_PG_URL or a throwaway cluster (tests/tools/pg_cluster.sh).
// Figures and the commands that produce them: docs/performance.md ("Open sessions per node").
#include "bench_http.hpp"
#include "server_binary.hpp"
#include "session_generator.hpp"

#include <agentctx/providers/offline_summarizer.hpp>
#include <agentctx/runtime/jsonl_store.hpp>
#include <agentctx/runtime/memory_store.hpp>
#include <agentctx/runtime/pg_store.hpp>
#include <agentctx/runtime/session.hpp>

#include <boost/asio/io_context.hpp>

#include <malloc.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;
using namespace agentctx;
using clock_type = std::chrono::steady_clock;

namespace {

struct options
{
    std::string via = "library";
    std::string shape = "chat20";
    std::string store = "jsonl";  ///< memory (library): the store holds the text; pg (server): PostgreSQL
    std::size_t sessions = 2000;
    int clients = 64;
    int threads = 2;
    std::string server_bin;
};

// The log every session of `shape` starts from (empty: none, sessions are created instead).
std::string shape_text(const std::string& shape)
{
    if (shape == "chat20")  // 20 entries of chat and tool rounds: 31 KiB
        return tools::generate_session({.seed = 44, .entries = 20, .mean_tool_output = 2800});
    if (shape == "tools500")
        return tools::generate_session({.seed = 44, .entries = 500, .mean_tool_output = 2500});
    if (shape == "compacted")
        return tools::generate_session(
            {.seed = 44, .entries = 500, .mean_tool_output = 2500, .compaction_every = 40}
        );
    return {};
}

double rss_kib(pid_t pid)
{
    std::ifstream f("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(f, line);)
        if (line.rfind("VmRSS:", 0) == 0)
            return std::stod(line.substr(6));
    return 0;
}

double heap_kib()
{
    return static_cast<double>(mallinfo2().uordblks) / 1024.0;
}

double thread_cpu_us()
{
    timespec t{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_nsec) / 1e3;
}

double percentile(std::vector<double> v, double p)
{
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

double seconds_since(clock_type::time_point t0)
{
    return std::chrono::duration<double>(clock_type::now() - t0).count();
}

fs::path session_path(const fs::path& dir, std::size_t i)
{
    return dir / ("s" + std::to_string(i) + ".jsonl");
}

// Writes `text` as session i, its header's id made "s<i>" (the file's name).
void write_session(const fs::path& dir, std::size_t i, const std::string& text)
{
    const std::string key = "\"id\":\"";
    const auto at = text.find(key) + key.size();
    const auto end = text.find('"', at);
    std::ofstream(session_path(dir, i), std::ios::binary)
        << text.substr(0, at) << "s" << i << text.substr(end);
}

class library_bench
{
public:
    library_bench(const options& o, fs::path dir) : o_(o), dir_(std::move(dir)) {}

    void run()
    {
        const std::string text = shape_text(o_.shape);
        if (text.empty())
            create_all();
        else
        {
            for (std::size_t i = 0; i < o_.sessions; ++i)
                write_session(dir_, i, text);
            std::printf("log on disk: %.1f KiB per session\n", static_cast<double>(text.size()) / 1024.0);
            if (o_.store == "jsonl")
                logs_alone();
            open_all();
        }
        reopen_all();
    }

private:
    runtime::session_config config() const
    {
        runtime::session_config c;
        c.summarizer = summarizer_;
        return c;
    }

    // Session i's store: its file, or (memory) a store holding the file's text.
    compaction::result<std::unique_ptr<runtime::store>> store_of(std::size_t i, compaction::diagnostics& diag)
        const
    {
        if (o_.store == "memory")
        {
            std::ifstream f(session_path(dir_, i), std::ios::binary);
            std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
            return std::unique_ptr<runtime::store>(std::make_unique<runtime::memory_store>(std::move(text)));
        }
        auto st = runtime::jsonl_store::open(session_path(dir_, i), {}, diag);
        if (!st)
            return st.error();
        return std::unique_ptr<runtime::store>(std::move(*st));
    }

    // Empty sessions through session::create (header written and synced, as a host creates one).
    void create_all()
    {
        const double heap0 = heap_kib(), rss0 = rss_kib(::getpid());
        const auto t0 = clock_type::now();
        for (std::size_t i = 0; i < o_.sessions; ++i)
        {
            compaction::diagnostics diag;
            const auto header =
                compaction::make_header("s" + std::to_string(i), "2026-12-07T00:00:00.000Z", "/");
            if (o_.store == "memory")
            {
                keep(
                    runtime::session::create(
                        ioc_.get_executor(), std::make_unique<runtime::memory_store>(), header, config(), diag
                    ),
                    diag
                );
                continue;
            }
            auto st = runtime::jsonl_store::create(session_path(dir_, i), header, {}, diag);
            if (!st)
                fail(diag);
            keep(runtime::session::open(ioc_.get_executor(), std::move(*st), config(), diag), diag);
        }
        const double secs = seconds_since(t0);
        print_memory("open (created)", heap0, rss0);
        std::printf(
            "creates: %.0f/s (one thread, each header synced)\n", static_cast<double>(o_.sessions) / secs
        );
    }

    // The logs alone (store load, no session): the share of a session that is its log.
    void logs_alone()
    {
        const double heap0 = heap_kib();
        std::vector<compaction::session_log> logs;
        for (std::size_t i = 0; i < o_.sessions; ++i)
        {
            compaction::diagnostics diag;
            compaction::load_report report;
            auto st = runtime::jsonl_store::open(session_path(dir_, i), {.read_only = true}, diag);
            auto log = st ? (*st)->load({}, report, diag) : st.error();
            if (!log)
                fail(diag);
            logs.push_back(std::move(*log));
        }
        std::printf(
            "log entries in memory: %.1f KiB per session\n",
            (heap_kib() - heap0) / static_cast<double>(o_.sessions)
        );
    }

    void open_all()
    {
        const double heap0 = heap_kib(), rss0 = rss_kib(::getpid());
        for (std::size_t i = 0; i < o_.sessions; ++i)
        {
            compaction::diagnostics diag;
            auto st = store_of(i, diag);
            if (!st)
                fail(diag);
            keep(runtime::session::open(ioc_.get_executor(), std::move(*st), config(), diag), diag);
        }
        print_memory("open", heap0, rss0);
    }

    // Every session closed, then each reopened from its file and closed again: CPU per reopen.
    void reopen_all()
    {
        open_.clear();
        if (o_.store == "memory" && o_.shape == "empty")
            return;  // nothing was stored anywhere to reopen
        std::vector<double> cpu_us;
        const auto t0 = clock_type::now();
        for (std::size_t i = 0; i < o_.sessions; ++i)
        {
            const double c0 = thread_cpu_us();
            compaction::diagnostics diag;
            auto st = store_of(i, diag);
            if (!st)
                fail(diag);
            auto s = runtime::session::open(ioc_.get_executor(), std::move(*st), config(), diag);
            if (!s)
                fail(diag);
            s->reset();
            cpu_us.push_back(thread_cpu_us() - c0);
        }
        std::printf(
            "reopen: %.0f/s, CPU per reopen p50 %.0f us, p99 %.0f us, max %.0f us\n",
            static_cast<double>(o_.sessions) / seconds_since(t0),
            percentile(cpu_us, 0.5),
            percentile(cpu_us, 0.99),
            percentile(cpu_us, 1.0)
        );
    }

    void keep(compaction::result<std::shared_ptr<runtime::session>> s, const compaction::diagnostics& diag)
    {
        if (!s)
            fail(diag);
        open_.push_back(std::move(*s));
    }

    void print_memory(const char* what, double heap0, double rss0) const
    {
        const auto n = static_cast<double>(o_.sessions);
        std::printf(
            "%s: %zu sessions, heap %.1f KiB per session, RSS %.1f KiB per session\n",
            what,
            o_.sessions,
            (heap_kib() - heap0) / n,
            (rss_kib(::getpid()) - rss0) / n
        );
    }

    [[noreturn]] static void fail(const compaction::diagnostics& diag)
    {
        std::fprintf(stderr, "bench_sessions: %s\n", diag.message.c_str());
        std::exit(1);
    }

    const options& o_;
    fs::path dir_;
    boost::asio::io_context ioc_;
    std::shared_ptr<providers::summarizer> summarizer_ =
        std::make_shared<providers::offline_summarizer>(ioc_.get_executor());
    std::vector<std::shared_ptr<runtime::session>> open_;
};

// `clients` threads, each on its own keep-alive connection, run `request(i)` for i in [0, n).
std::vector<double> in_flight(
    int clients,
    std::size_t n,
    const std::function<bool(bench::connection&, std::size_t)>& request,
    std::uint16_t port
)
{
    std::atomic<std::size_t> next{0};
    std::vector<std::vector<double>> ms(static_cast<std::size_t>(clients));
    std::vector<std::thread> threads;
    for (int c = 0; c < clients; ++c)
        threads.emplace_back([&, c] {
            bench::connection conn(port);
            for (std::size_t i; (i = next.fetch_add(1)) < n;)
            {
                const auto t0 = clock_type::now();
                if (!request(conn, i))
                    std::exit(1);
                ms[static_cast<std::size_t>(c)].push_back(seconds_since(t0) * 1000);
            }
        });
    for (auto& t : threads)
        t.join();
    std::vector<double> all;
    for (const auto& m : ms)
        all.insert(all.end(), m.begin(), m.end());
    return all;
}

// A PostgreSQL to run against: AGENTCTX_PG_URL, or a throwaway cluster started in `state`.
std::string pg_url(const fs::path& state)
{
    if (const char* url = std::getenv("AGENTCTX_PG_URL"))
        return url;
    std::string url;
    const std::string script = AGENTCTX_PG_CLUSTER_SCRIPT;
    if (std::system((script + " start " + state.string() + " >/dev/null").c_str()) != 0 ||
        !std::getline(std::ifstream(state / "url"), url))
        std::fprintf(stderr, "bench_sessions: no PostgreSQL (set AGENTCTX_PG_URL)\n"), std::exit(1);
    return url;
}

// Stores the sessions of the shape in the database (the server migrates the schema first).
void import_sessions(const std::string& url, const fs::path& dir, std::size_t n)
{
    boost::asio::io_context ioc(1);
    runtime::pg_pool pool(ioc.get_executor(), url, {.max_connections = 8, .listen = false});
    pool.async_migrate([](boost::system::error_code ec, std::string m) {
        if (ec)
            std::fprintf(stderr, "migrate: %s\n", m.c_str()), std::exit(1);
    });
    ioc.run();
    ioc.restart();
    for (std::size_t i = 0; i < n; ++i)
    {
        std::ifstream f(session_path(dir, i), std::ios::binary);
        std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
        pool.async_import(std::move(text), [](boost::system::error_code ec, std::string m) {
            if (ec)
                std::fprintf(stderr, "import: %s\n", m.c_str()), std::exit(1);
        });
    }
    ioc.run();
    pool.close();
    ioc.restart();
    ioc.poll();
}

void server_bench(const options& o, const fs::path& dir)
{
    const std::string text = shape_text(o.shape);
    for (std::size_t i = 0; !text.empty() && i < o.sessions; ++i)
        write_session(dir, i, text);
    std::string store_arg = "--data-dir", store_value = dir.string();
    if (o.store == "pg")
    {
        store_arg = "--store";
        store_value = pg_url(dir / "pg");
        if (!text.empty())
            import_sessions(store_value, dir, o.sessions);
    }
    test::server_process child(
        o.server_bin,
        {.args =
             {"--no-auth",
              "--port",
              "0",
              store_arg,
              store_value,
              "--threads",
              std::to_string(o.threads),
              "--max-open-sessions",
              std::to_string(o.sessions + 64)}}
    );
    if (!child.port)
        std::fprintf(stderr, "the server did not start: %s\n", child.log.c_str()), std::exit(1);
    const double rss0 = rss_kib(child.pid);
    const auto t0 = clock_type::now();
    const auto ms = in_flight(
        o.clients,
        o.sessions,
        [&](bench::connection& conn, std::size_t i) {
            std::string body;
            const int status =
                text.empty()
                    ? conn.request("POST", "/v1/sessions", "{}", body)
                    : conn.request("GET", "/v1/sessions/s" + std::to_string(i) + "/context", "", body);
            if (status == (text.empty() ? 201 : 200))
                return true;
            std::fprintf(stderr, "status %d: %s\n", status, body.c_str());
            return false;
        },
        child.port
    );
    const double secs = seconds_since(t0);
    std::printf(
        "server (%s), %s: %zu sessions, %d clients in flight: %.0f %s/s, p50 %.2f ms, p99 %.2f ms; RSS %.1f "
        "KiB "
        "per "
        "open session\n",
        o.store.c_str(),
        o.shape.c_str(),
        o.sessions,
        o.clients,
        static_cast<double>(o.sessions) / secs,
        text.empty() ? "creates" : "opens",
        percentile(ms, 0.5),
        percentile(ms, 0.99),
        (rss_kib(child.pid) - rss0) / static_cast<double>(o.sessions)
    );
}

options parse(int argc, char** argv)
{
    options o;
#ifdef AGENTCTX_SERVER_BIN
    o.server_bin = AGENTCTX_SERVER_BIN;
#endif
    for (int i = 1; i + 1 < argc; i += 2)
    {
        const std::string a = argv[i], v = argv[i + 1];
        if (a == "--via")
            o.via = v;
        else if (a == "--store")
            o.store = v;
        else if (a == "--shape")
            o.shape = v;
        else if (a == "--sessions")
            o.sessions = std::strtoull(v.c_str(), nullptr, 10);
        else if (a == "--clients")
            o.clients = std::atoi(v.c_str());
        else if (a == "--threads")
            o.threads = std::atoi(v.c_str());
        else if (a == "--server")
            o.server_bin = v;
    }
    return o;
}

}  // namespace

int main(int argc, char** argv)
{
    const options o = parse(argc, argv);
    const fs::path dir =
        fs::temp_directory_path() / ("agentctx-bench-sessions-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    if (o.via == "server")
    {
        server_bench(o, dir);
        if (o.store == "pg" && !std::getenv("AGENTCTX_PG_URL"))
            (void
            )std::system((std::string(AGENTCTX_PG_CLUSTER_SCRIPT) + " stop " + (dir / "pg").string()).c_str()
            );
    }
    else
        library_bench(o, dir).run();
    fs::remove_all(dir);
}
