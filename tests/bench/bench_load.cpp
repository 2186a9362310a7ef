// Open + active path + projection of generated 1k / 10k / 100k-entry sessions: throughput, peak RSS.
#include <agentctx/compaction/prepare.hpp>
#include <agentctx/compaction/projection.hpp>
#include <agentctx/runtime/jsonl_store.hpp>

#include "bench_rss.hpp"
#include "session_generator.hpp"

#include <benchmark/benchmark.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;
using namespace agentctx;

namespace {

// Sessions are generated once into the temp directory and reused across runs.
fs::path session_file(std::size_t entries)
{
    const fs::path p =
        fs::temp_directory_path() / ("agentctx-bench-v3-" + std::to_string(entries) + ".jsonl");
    tools::write_session_file(
        {.seed = 2026,
         .entries = entries,
         .mean_tool_output = 5200,
         .image_rate = 0.01,
         .branch_rate = 0.01,
         .compaction_every = 25},
        p,
        true
    );
    return p;
}

// Peak resident set since the last reset (Linux: writing 5 to clear_refs resets VmHWM).
void reset_peak_rss()
{
    std::ofstream("/proc/self/clear_refs") << "5";
}

void BM_open_path_project(benchmark::State& state)
{
    const auto path = session_file(static_cast<std::size_t>(state.range(0)));
    const auto bytes = fs::file_size(path);
    std::size_t messages = 0, path_len = 0;
    double rss_before = 0, rss_peak = 0;
    for (auto _ : state)
    {
        state.PauseTiming();
        reset_peak_rss();
        rss_before = bench::peak_rss_mib();
        state.ResumeTiming();

        compaction::diagnostics diag;
        auto store = runtime::jsonl_store::open(path, {.read_only = true}, diag);
        compaction::load_report report;
        auto log = (*store)->load({}, report, diag);
        if (!log)
        {
            state.SkipWithError(diag.message.c_str());
            return;
        }
        path_len = log->active_path().size();
        auto ctx = compaction::build_session_context(*log, diag);
        messages = ctx->messages.size();
        benchmark::DoNotOptimize(ctx);

        state.PauseTiming();
        rss_peak = bench::peak_rss_mib();
        state.ResumeTiming();
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(bytes) * state.iterations());
    state.counters["file_MB"] = static_cast<double>(bytes) / 1e6;
    state.counters["path_len"] = static_cast<double>(path_len);
    state.counters["ctx_msgs"] = static_cast<double>(messages);
    state.counters["peak_RSS_MiB"] = rss_peak;
    state.counters["RSS_growth_MiB"] = rss_peak - rss_before;
}

// Open + plan: the path after the previous compaction is read once (no quadratic walks).
void BM_open_plan(benchmark::State& state)
{
    const auto path = session_file(static_cast<std::size_t>(state.range(0)));
    std::size_t summarized = 0;
    for (auto _ : state)
    {
        compaction::diagnostics diag;
        auto store = runtime::jsonl_store::open(path, {.read_only = true}, diag);
        compaction::load_report report;
        auto log = (*store)->load({}, report, diag);
        compaction::compaction_settings settings;
        settings.keep_recent_tokens = 2000;
        auto prep = compaction::prepare_compaction(*log, settings, {}, diag);
        if (!prep)
        {
            state.SkipWithError(diag.message.c_str());
            return;
        }
        summarized = prep->messages_to_summarize.size();
        benchmark::DoNotOptimize(prep);
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(fs::file_size(path)) * state.iterations());
    state.counters["summarized"] = static_cast<double>(summarized);
}

}  // namespace

BENCHMARK(BM_open_plan)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond)->MinTime(2);
BENCHMARK(BM_open_path_project)
    ->Arg(1000)
    ->Arg(10000)
    ->Arg(100000)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(2);

BENCHMARK_MAIN();
