// 1,000 sessions compacting at once on one io_context thread against the loopback provider:
// wall time, CPU (the io thread alone and the whole process, server thread included), peak RSS.
//   bench_scale_compact [SESSIONS=1000] [ENTRIES=400]
#include <agentctx/providers/http_summarizer.hpp>
#include <agentctx/runtime/jsonl_store.hpp>
#include <agentctx/runtime/session.hpp>

#include "bench_rss.hpp"
#include "fake_provider_server.hpp"
#include "session_generator.hpp"

#include <boost/asio/io_context.hpp>
#include <spdlog/logger.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace agentctx;

namespace {

double cpu_seconds(clockid_t clock)
{
    timespec ts{};
    clock_gettime(clock, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

double seconds_since(std::chrono::steady_clock::time_point t0)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv)
{
    const std::size_t sessions = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000;
    const std::size_t entries = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 400;

    // One generated session (a compaction every 6 turns), copied once per session.
    const fs::path dir = fs::temp_directory_path() / ("agentctx-bench-scale-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const fs::path src = dir / "source.jsonl";
    tools::write_session_file(
        {.seed = 14, .entries = entries, .mean_tool_output = 2500, .compaction_every = 6}, src
    );
    for (std::size_t i = 0; i < sessions; ++i)
        fs::copy_file(src, dir / ("s" + std::to_string(i) + ".jsonl"));
    const auto file_bytes = fs::file_size(src);

    test::fake_provider_server server;
    server.set_default({.body = test::openai_body("## Goal\nscale benchmark summary\n\n## Progress\n- done")}
    );
    boost::asio::io_context ioc(1);
    providers::provider_config pc;
    pc.base_url = server.base_url() + "/v1";
    pc.model = "bench";
    pc.api_key = "k";
    auto logger = std::make_shared<spdlog::logger>("bench");  // no sinks
    auto summarizer = std::make_shared<providers::http_summarizer>(ioc.get_executor(), pc, logger);

    runtime::session_config config;
    config.settings.keep_recent_tokens = 2000;
    config.model = {.provider = "openai", .model_id = "bench", .context_window = 200000};
    config.summarizer = summarizer;
    config.logger = logger;

    const double open_cpu0 = cpu_seconds(CLOCK_THREAD_CPUTIME_ID);
    const auto t_open = std::chrono::steady_clock::now();
    std::vector<std::shared_ptr<runtime::session>> open;
    open.reserve(sessions);
    for (std::size_t i = 0; i < sessions; ++i)
    {
        compaction::diagnostics diag;
        auto store = runtime::jsonl_store::open(
            dir / ("s" + std::to_string(i) + ".jsonl"), {.fsync = runtime::fsync_policy::never}, diag
        );
        if (!store)
        {
            std::fprintf(stderr, "open store: %s\n", diag.message.c_str());
            return 1;
        }
        auto s = runtime::session::open(ioc.get_executor(), std::move(*store), config, diag);
        if (!s)
        {
            std::fprintf(stderr, "open session: %s\n", diag.message.c_str());
            return 1;
        }
        open.push_back(std::move(*s));
    }
    const double open_s = seconds_since(t_open);
    const double open_cpu = cpu_seconds(CLOCK_THREAD_CPUTIME_ID) - open_cpu0;
    const double rss_open = bench::peak_rss_mib();

    const double io0 = cpu_seconds(CLOCK_THREAD_CPUTIME_ID), proc0 = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID);
    const auto t0 = std::chrono::steady_clock::now();
    std::size_t committed = 0, failed = 0;
    for (auto& s : open)
        s->async_compact(std::nullopt, [&](boost::system::error_code ec, runtime::compaction_outcome o) {
            if (!ec && o.compacted)
                ++committed;
            else
            {
                if (failed++ == 0)
                    std::fprintf(stderr, "first failure: %s %s\n", ec.message().c_str(), o.message.c_str());
            }
        });
    ioc.run();
    const double wall = seconds_since(t0);
    const double io_cpu = cpu_seconds(CLOCK_THREAD_CPUTIME_ID) - io0;
    const double proc_cpu = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - proc0;

    std::printf(
        "sessions %zu (%zu entries, %.1f MB each), opened in %.2f s (CPU %.2f s; peak RSS %.0f MiB)\n",
        sessions,
        entries,
        static_cast<double>(file_bytes) / 1e6,
        open_s,
        open_cpu,
        rss_open
    );
    std::printf(
        "compactions committed %zu, failed %zu, provider requests %zu\n",
        committed,
        failed,
        server.requests().size()
    );
    std::printf(
        "wall %.3f s (%.0f compactions/s), io-thread CPU %.3f s (%.0f us each), process CPU %.3f s, peak RSS "
        "%.0f MiB\n",
        wall,
        static_cast<double>(committed) / wall,
        io_cpu,
        io_cpu * 1e6 / static_cast<double>(sessions),
        proc_cpu,
        bench::peak_rss_mib()
    );
    for (auto& s : open)
        s->close();
    ioc.restart();
    ioc.run();
    open.clear();
    fs::remove_all(dir);
    return failed == 0 ? 0 : 1;
}
