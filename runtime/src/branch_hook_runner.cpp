// The before_branch and branched hooks, in Pi 1.6's runner order (see branch_hook_runner.hpp).
#include "branch_hook_runner.hpp"

#include <spdlog/spdlog.h>

#include <exception>

namespace agentctx::runtime::detail {

void branch_hook_runner::add(before_branch_hook h)
{
    // One list, awaited in order: a synchronous hook is an awaitable that never suspends.
    before_.push_back(
        [h = std::move(h)](const before_branch_event& e) -> boost::asio::awaitable<before_branch_decision> {
            co_return h(e);
        }
    );
}

void branch_hook_runner::add(branched_hook h)
{
    after_.push_back([h = std::move(h)](const branched_event& e) -> boost::asio::awaitable<void> {
        h(e);
        co_return;
    });
}

boost::asio::awaitable<branch_hook_runner::before_result> branch_hook_runner::run_before(
    const before_branch_event& e, spdlog::logger& log, std::function<bool()> stopped
) const
{
    before_result out;
    for (const auto& h : before_)
    {
        before_branch_decision d;
        bool threw = false;
        try
        {
            d = co_await h(e);
        }
        catch (const std::exception& ex)
        {
            log.error("before_branch hook threw, skipped: {}", ex.what());
            threw = true;
        }
        if (stopped())
        {
            out.stopped = true;
            co_return out;
        }
        if (threw || d.empty())
            continue;
        // Pi keeps the latest answer as it is, not merged with earlier ones.
        out.decision = std::move(d);
        if (out.decision.cancel)
            co_return out;
    }
    co_return out;
}

boost::asio::awaitable<void> branch_hook_runner::run_after(const branched_event& e, spdlog::logger& log) const
{
    for (const auto& h : after_)
    {
        try
        {
            co_await h(e);
        }
        catch (const std::exception& ex)
        {
            log.error("branched hook threw, skipped: {}", ex.what());
        }
    }
}

}  // namespace agentctx::runtime::detail
