// The incremental SSE parser and the stream accumulators of both wire formats. Invariants: the
// events do not depend on how the stream is cut into chunks (one chunk vs fuzzer-chosen sizes);
// the accumulated reply does not either; nothing throws.
#include "fuzz_check.hpp"

#include "wire_format.hpp"

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <string>
#include <vector>

namespace pv = agentctx::providers;

namespace {

bool same_events(const std::vector<pv::sse_parser::event>& a, const std::vector<pv::sse_parser::event>& b)
{
    if (a.size() != b.size())
        return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (a[i].name != b[i].name || a[i].data != b[i].data)
            return false;
    return true;
}

bool same_reply(const pv::stream_accumulator& a, const pv::stream_accumulator& b)
{
    if (a.failed() != b.failed() || a.complete() != b.complete() || a.error() != b.error())
        return false;
    const auto x = a.reply(), y = b.reply();
    return x.output.text == y.output.text && x.output.tool_calls == y.output.tool_calls &&
           x.output.stop == y.output.stop && x.model == y.model && x.usage.input == y.usage.input &&
           x.usage.output == y.usage.output && x.usage.total_tokens == y.usage.total_tokens;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    FuzzedDataProvider in(data, size);
    std::vector<std::size_t> cuts;
    const std::size_t ncuts = in.ConsumeIntegralInRange<std::size_t>(0, 16);
    for (std::size_t i = 0; i < ncuts; ++i)
        cuts.push_back(in.ConsumeIntegralInRange<std::size_t>(1, 64));
    const std::string stream = in.ConsumeRemainingBytesAsString();

    pv::sse_parser whole;
    const auto all = whole.feed(stream);

    pv::sse_parser parts;
    std::vector<pv::sse_parser::event> pieces;
    std::size_t pos = 0;
    for (std::size_t i = 0; pos < stream.size(); ++i)
    {
        const std::size_t n = cuts.empty() ? 1 : cuts[i % cuts.size()];
        for (auto& e : parts.feed(std::string_view(stream).substr(pos, n)))
            pieces.push_back(std::move(e));
        pos += n;
    }
    FUZZ_CHECK(
        same_events(all, pieces), "chunking changed the events (%zu vs %zu)", all.size(), pieces.size()
    );

    for (const auto f : {pv::wire_format::openai, pv::wire_format::anthropic})
    {
        pv::stream_accumulator one(f), many(f);
        one.feed(stream);
        pos = 0;
        for (std::size_t i = 0; pos < stream.size(); ++i)
        {
            const std::size_t n = cuts.empty() ? 7 : cuts[(i + 1) % cuts.size()];
            many.feed(std::string_view(stream).substr(pos, n));
            pos += n;
        }
        FUZZ_CHECK(same_reply(one, many), "chunking changed the accumulated reply");
        (void)one.received_chars();
    }
    return 0;
}
