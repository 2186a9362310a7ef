// Test helper: runs an io_context until a condition holds (or a generous limit passes, which fails the test).
#pragma once

#include <boost/asio/io_context.hpp>

#include <gtest/gtest.h>

#include <chrono>

namespace agentctx::test {

/// Runs `ioc` one handler at a time until `done()`; fails the test after `limit` of wall time.
template <class Pred>
void run_until(boost::asio::io_context& ioc, Pred done, std::chrono::seconds limit = std::chrono::seconds(20))
{
    ioc.restart();
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!done() && std::chrono::steady_clock::now() < until)
        if (ioc.run_one_for(std::chrono::milliseconds(50)) == 0 && ioc.stopped())
            ioc.restart();
    ASSERT_TRUE(done()) << "timed out";
}

}  // namespace agentctx::test
