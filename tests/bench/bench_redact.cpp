// Redaction throughput (MB/s) over a generated transcript of code and logs with a few secrets.
#include <agentctx/compaction/redaction.hpp>

#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <string>

using namespace agentctx::compaction;

namespace {

std::string pick(std::mt19937_64& rng, std::string_view alphabet, std::size_t n)
{
    std::string s;
    for (std::size_t i = 0; i < n; ++i)
        s += alphabet[rng() % alphabet.size()];
    return s;
}

// Serialized-transcript shape (as in the summary prompt): user turns, assistant prose, tool calls
// with C++ code, build logs, JSON, git output. One secret roughly every `secret_every` bytes.
std::string make_transcript(std::size_t bytes, std::size_t secret_every)
{
    std::mt19937_64 rng(42);
    constexpr std::string_view alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    constexpr std::string_view hex = "0123456789abcdef";
    constexpr std::string_view words[] = {
        "session",
        "compaction",
        "token",
        "entry",
        "parent",
        "summary",
        "request",
        "provider",
        "context",
        "message",
        "result",
        "buffer",
        "key",
        "index"};
    auto word = [&] { return std::string(words[rng() % std::size(words)]); };
    std::string out;
    std::size_t next_secret = secret_every;
    while (out.size() < bytes)
    {
        out +=
            "[User]: Please fix the failing " + word() + " test and check the " + word() + " handling.\n\n";
        out += "[Assistant]: I'll look at the " + word() + "_" + word() + " implementation first; the " +
               word() + " count looks off by one.\n\n";
        out += "[Assistant tool calls]: read(path=\"src/" + word() + "_" + word() +
               ".cpp\")\n\n[Tool result]:\n";
        for (int i = 0; i < 12; ++i)
            out += "    auto " + word() + "_" + std::to_string(rng() % 100) + " = " + word() + ".find(" +
                   word() + "_key, " + std::to_string(rng() % 4096) + ");  // " + word() + " " + word() +
                   "\n";
        out += "\n[Tool result]:\n";
        for (int i = 0; i < 10; ++i)
            out += "2026-12-01T11:" + std::to_string(10 + rng() % 50) + ":07.123Z INFO " + word() +
                   ": processed " + std::to_string(rng() % 100000) + " entries in " +
                   std::to_string(rng() % 900) + "ms id=" + pick(rng, hex, 8) + "-" + pick(rng, hex, 4) +
                   " commit=" + pick(rng, hex, 40) + "\n";
        out += "{\"type\":\"message\",\"id\":\"" + pick(rng, hex, 8) +
               "\",\"usage\":{\"input_tokens\":" + std::to_string(rng() % 50000) +
               ",\"output_tokens\":" + std::to_string(rng() % 4000) + "}}\n\n";
        if (out.size() >= next_secret)
        {
            switch (rng() % 4)
            {
            case 0:
                out += "export AWS_ACCESS_KEY_ID=AKIA" + pick(rng, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16) +
                       "\n";
                break;
            case 1:
                out += "git remote set-url origin https://ghp_" + pick(rng, alnum, 36) + "@github.com/o/r\n";
                break;
            case 2:
                out += "DB_PASSWORD=\"" + pick(rng, alnum, 28) + "\"\n";
                break;
            default:
                out += "curl -H 'Authorization: Bearer " + pick(rng, alnum, 40) + "' https://api/\n";
                break;
            }
            next_secret += secret_every;
        }
    }
    return out;
}

void run(benchmark::State& state, bool prefilter)
{
    const auto text = make_transcript(static_cast<std::size_t>(state.range(0)), 50 * 1024);
    diagnostics diag;
    const auto r = redactor::create(default_redaction_rules(), {}, diag, prefilter).value();
    std::size_t found = 0;
    for (auto _ : state)
    {
        auto out = r.redact(text);
        found = 0;
        for (const auto& [name, n] : out.counts)
            found += n;
        benchmark::DoNotOptimize(out.text.data());
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
    state.counters["secrets"] = static_cast<double>(found);
}

void BM_redact_prefilter(benchmark::State& state)
{
    run(state, true);
}
void BM_redact_sequential(benchmark::State& state)
{
    run(state, false);
}

void BM_redactor_create(benchmark::State& state)
{
    for (auto _ : state)
    {
        diagnostics diag;
        benchmark::DoNotOptimize(redactor::create(redaction_settings{}, diag).value());
    }
}

}  // namespace

BENCHMARK(BM_redact_prefilter)->Arg(4 << 20)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_redact_sequential)->Arg(4 << 20)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_redactor_create)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
