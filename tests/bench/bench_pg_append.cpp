// Appends through sessions on the PostgreSQL store: appends/s on one session and across 1,000, and the
// latency percentiles. Uses AGENTCTX_PG_URL, or starts a throwaway cluster with tests/tools/pg_cluster.sh.
#include <agentctx/compaction/entry.hpp>
#include <agentctx/runtime/pg_store.hpp>
#include <agentctx/runtime/session.hpp>

#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

using namespace agentctx;
using boost::system::error_code;
using clock_type = std::chrono::steady_clock;

namespace {

const boost::json::object message{
    {"type", "message"},
    {"message", boost::json::object{{"role", "user"}, {"content", "next step please"}, {"timestamp", 1}}}};

template <class Pred>
void run_until(boost::asio::io_context& ioc, Pred done)
{
    while (!done())
        if (ioc.run_one() == 0)
            ioc.restart();  // it ran out of work between two operations
}

std::shared_ptr<runtime::session> create(
    boost::asio::io_context& ioc, runtime::pg_pool& pool, const std::string& id
)
{
    std::unique_ptr<runtime::pg_store> st;
    bool done = false;
    pool.async_create(
        compaction::make_header(id, compaction::iso_timestamp_now(), "/bench"),
        [&](error_code ec, std::unique_ptr<runtime::pg_store> s, std::string m) {
            if (ec)
                std::fprintf(stderr, "create: %s\n", m.c_str()), std::exit(1);
            st = std::move(s);
            done = true;
        }
    );
    run_until(ioc, [&] { return done; });
    compaction::diagnostics diag;
    return runtime::session::open(ioc.get_executor(), std::move(st), {}, diag).value();
}

struct figures
{
    double per_second = 0;
    double p50_ms = 0, p99_ms = 0;
};

// `total` appends spread over `sessions`, `in_flight` outstanding at once (each session has at
// most one: its appends are serialised by the session anyway).
figures measure(
    boost::asio::io_context& ioc,
    const std::vector<std::shared_ptr<runtime::session>>& sessions,
    std::size_t total,
    std::size_t in_flight
)
{
    std::vector<double> latencies;
    latencies.reserve(total);
    std::size_t started = 0, finished = 0, next = 0;
    std::function<void()> launch = [&] {
        if (started == total)
            return;
        ++started;
        auto& s = sessions[next++ % sessions.size()];
        const auto t0 = clock_type::now();
        s->async_append(message, [&, t0](error_code ec, std::string) {
            if (ec)
                std::fprintf(stderr, "append: %s\n", ec.message().c_str()), std::exit(1);
            latencies.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - t0).count());
            ++finished;
            launch();
        });
    };
    const auto t0 = clock_type::now();
    for (std::size_t i = 0; i < std::min(in_flight, total); ++i)
        launch();
    run_until(ioc, [&] { return finished == total; });
    const double secs = std::chrono::duration<double>(clock_type::now() - t0).count();
    std::sort(latencies.begin(), latencies.end());
    return {
        total / secs,
        latencies[latencies.size() / 2],
        latencies[std::min(latencies.size() - 1, latencies.size() * 99 / 100)]};
}

}  // namespace

int main()
{
    std::string url = std::getenv("AGENTCTX_PG_URL") ? std::getenv("AGENTCTX_PG_URL") : "";
    const std::string state = "/tmp/agentctx-bench-pg-" + std::to_string(::getpid());
    const std::string script = AGENTCTX_PG_CLUSTER_SCRIPT;
    if (url.empty())
    {
        if (std::system((script + " start " + state + " >/dev/null").c_str()) != 0 ||
            !std::getline(std::ifstream(state + "/url"), url))
        {
            std::fprintf(
                stderr,
                "bench_pg_append: no PostgreSQL (set AGENTCTX_PG_URL or install postgresql-15); skipped\n"
            );
            return 0;
        }
    }
    {
        boost::asio::io_context ioc(1);
        const std::size_t pool_size =
            std::getenv("AGENTCTX_PG_POOL") ? std::stoul(std::getenv("AGENTCTX_PG_POOL")) : 8;
        const std::size_t flushers =
            std::getenv("AGENTCTX_PG_FLUSHERS") ? std::stoul(std::getenv("AGENTCTX_PG_FLUSHERS")) : 0;
        runtime::pg_pool pool(
            ioc.get_executor(), url, {.max_connections = pool_size, .listen = false, .max_flushers = flushers}
        );
        bool migrated = false;
        pool.async_migrate([&](error_code ec, std::string m) {
            if (ec)
                std::fprintf(stderr, "migrate: %s\n", m.c_str()), std::exit(1);
            migrated = true;
        });
        run_until(ioc, [&] { return migrated; });
        const std::string run =
            std::to_string(::getpid()) + "-" + std::to_string(clock_type::now().time_since_epoch().count());

        std::vector<std::shared_ptr<runtime::session>> one{create(ioc, pool, "bench-one-" + run)};
        std::vector<std::shared_ptr<runtime::session>> many;
        for (int i = 0; i < 1000; ++i)
            many.push_back(create(ioc, pool, "bench-many-" + run + "-" + std::to_string(i)));
        std::printf(
            "pg_store appends (fsync on, Unix socket, 1 io thread, pool of %zu, %s flushers):\n",
            pool_size,
            flushers ? std::to_string(flushers).c_str() : "default"
        );
        auto report = [&](const char* what, const figures& f, const runtime::pg_pool_stats& before) {
            const auto after = pool.stats();
            const auto groups = after.append_groups - before.append_groups;
            std::printf(
                "  %-28s: %8.0f appends/s  p50 %.2f ms  p99 %.2f ms  (%.1f appends per transaction)\n",
                what,
                f.per_second,
                f.p50_ms,
                f.p99_ms,
                groups ? static_cast<double>(after.appends - before.appends) / static_cast<double>(groups)
                       : 0.0
            );
            std::fflush(stdout);
        };
        auto before = pool.stats();
        report("one session, one at a time", measure(ioc, one, 3000, 1), before);
        before = pool.stats();
        report("1,000 sessions, 64 in flight", measure(ioc, many, 10000, 64), before);
        before = pool.stats();
        report("1,000 sessions, 256 in flight", measure(ioc, many, 10000, 256), before);
        for (auto& s : one)
            s->close();
        for (auto& s : many)
            s->close();
        ioc.poll();
        pool.close();
        ioc.poll();
    }
    if (!std::getenv("AGENTCTX_PG_URL"))
        (void)std::system((script + " stop " + state).c_str());
}
