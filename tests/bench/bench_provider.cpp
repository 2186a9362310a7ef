// Summary requests per second and CPU per request through the HTTP provider against the loopback server.
#include <agentctx/providers/http_summarizer.hpp>

#include "fake_provider_server.hpp"

#include <benchmark/benchmark.h>
#include <boost/asio/io_context.hpp>

#include <ctime>

using namespace agentctx;

namespace {

double cpu_seconds()
{
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// Batches of `concurrency` requests in flight on one thread; the server thread is included in CPU.
void BM_provider_requests(benchmark::State& state)
{
    test::fake_provider_server server;
    const bool stream = state.range(1) != 0;
    if (stream)
        server.set_default({.chunks = test::openai_stream({"## Goal\n", "benchmark ", "reply"})});
    else
        server.set_default({.body = test::openai_body("## Goal\nbenchmark reply")});
    boost::asio::io_context ioc(1);
    providers::provider_config c;
    c.base_url = server.base_url() + "/v1";
    c.model = "bench";
    c.api_key = "k";
    c.stream = stream;
    providers::http_summarizer s(ioc.get_executor(), c);
    compaction::summary_prompt p;
    p.system_prompt = "SYS";
    p.prompt = std::string(20000, 'x');  // a ~5k-token prompt body
    p.max_output_tokens = 1000;
    const auto concurrency = static_cast<int>(state.range(0));
    std::int64_t done = 0;
    const double cpu0 = cpu_seconds();
    for (auto _ : state)
    {
        int left = concurrency;
        for (int i = 0; i < concurrency; ++i)
            s.async_summarize(p, [&](boost::system::error_code ec, compaction::summary_output) {
                if (ec)
                    state.SkipWithError(ec.message().c_str());
                --left;
            });
        ioc.restart();
        while (left > 0)
            ioc.run_one();
        done += concurrency;
    }
    state.counters["req_per_s"] = benchmark::Counter(static_cast<double>(done), benchmark::Counter::kIsRate);
    state.counters["cpu_us_per_req"] = (cpu_seconds() - cpu0) * 1e6 / static_cast<double>(done);
}

}  // namespace

BENCHMARK(BM_provider_requests)->Args({1, 0})->Args({64, 0})->Args({64, 1})->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2);

BENCHMARK_MAIN();
