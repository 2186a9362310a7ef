// The memory an idle open session costs: a guard against a fixed per-session cost coming back.
#include <agentctx/providers/offline_summarizer.hpp>
#include <agentctx/runtime/memory_store.hpp>
#include <agentctx/runtime/session.hpp>

#include <boost/asio/io_context.hpp>

#include <gtest/gtest.h>

#include <malloc.h>

#include <memory>
#include <string>
#include <vector>

using namespace agentctx;

namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool plain_malloc = false;  // the sanitizers' allocators keep their own books
#else
constexpr bool plain_malloc = true;
#endif

// Bytes the allocator holds for the program now.
std::size_t heap_in_use()
{
    return mallinfo2().uordblks;
}

}  // namespace

// docs/performance.md measures about 6 KiB of heap per empty open session (one io_context, the
// default settings). Twice that fails: a per-session copy of something shareable (the compiled
// redaction rules were ~180 KiB each) shows up here at once.
TEST(session_memory, an_empty_open_session_costs_less_than_twice_the_measured_figure)
{
    if (!plain_malloc)
        GTEST_SKIP() << "the sanitizers replace malloc; mallinfo2 does not see their heap";
    constexpr int sessions = 400;
    constexpr double measured_kib = 6.5;
    boost::asio::io_context ioc;
    const auto summarizer = std::make_shared<providers::offline_summarizer>(ioc.get_executor());
    std::vector<std::shared_ptr<runtime::session>> open;
    open.reserve(sessions);
    const auto open_one = [&](int i) {
        runtime::session_config config;
        config.summarizer = summarizer;
        compaction::diagnostics diag;
        auto s = runtime::session::create(
            ioc.get_executor(),
            std::make_unique<runtime::memory_store>(),
            compaction::make_header("s" + std::to_string(i), "2026-01-15T09:00:00.000Z", "/tmp"),
            std::move(config),
            diag
        );
        ASSERT_TRUE(s) << diag.message;
        open.push_back(std::move(*s));
    };
    open_one(-1);  // the first session pays for what every later one shares
    const std::size_t before = heap_in_use();
    for (int i = 0; i < sessions; ++i)
        open_one(i);
    const double per_session_kib = static_cast<double>(heap_in_use() - before) / 1024.0 / sessions;
    EXPECT_LT(per_session_kib, 2 * measured_kib);
    EXPECT_GT(per_session_kib, 0.5);  // the measurement sees the sessions at all
}
