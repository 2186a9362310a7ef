// Per-append cost of a session (store write + log index + O(1) snapshot update) at 1k..100k entries.
#include <agentctx/runtime/jsonl_store.hpp>
#include <agentctx/runtime/session.hpp>

#include "session_generator.hpp"

#include <benchmark/benchmark.h>
#include <boost/asio/io_context.hpp>

#include <cstdio>
#include <filesystem>

namespace fs = std::filesystem;
using namespace agentctx;

namespace {

// No compactions, so the projected context grows with the session: the worst case for appends.
fs::path source_file(std::size_t entries)
{
    const fs::path p =
        fs::temp_directory_path() / ("agentctx-bench-append-v1-" + std::to_string(entries) + ".jsonl");
    tools::write_session_file(
        {.seed = 7, .entries = entries, .mean_tool_output = 300, .branch_rate = 0}, p, true
    );
    return p;
}

void BM_session_append(benchmark::State& state)
{
    const auto src = source_file(static_cast<std::size_t>(state.range(0)));
    const fs::path work = fs::temp_directory_path() / "agentctx-bench-append-work.jsonl";
    fs::copy_file(src, work, fs::copy_options::overwrite_existing);
    boost::asio::io_context ioc(1);
    compaction::diagnostics diag;
    auto store = runtime::jsonl_store::open(work, {.fsync = runtime::fsync_policy::never}, diag);
    auto s = runtime::session::open(ioc.get_executor(), std::move(*store), {}, diag).value();
    const boost::json::object msg{
        {"type", "message"},
        {"message",
         boost::json::object{{"role", "user"}, {"content", "next step please"}, {"timestamp", 1}}}};
    for (auto _ : state)
    {
        s->async_append(msg, [](boost::system::error_code, std::string) {});
        ioc.restart();
        ioc.run();
    }
    state.counters["context_msgs"] = static_cast<double>(s->current()->messages.size());
    s->close();
    ioc.restart();
    ioc.run();
    s.reset();
    fs::remove(work);
}

}  // namespace

BENCHMARK(BM_session_append)
    ->Arg(1000)
    ->Arg(10000)
    ->Arg(100000)
    ->Unit(benchmark::kMicrosecond)
    ->Iterations(20000);

BENCHMARK_MAIN();
