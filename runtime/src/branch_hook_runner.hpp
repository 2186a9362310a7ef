// The before_branch and branched hooks of a session, run as Pi 1.6's runner runs session_before_tree and
// session_tree.
#pragma once

#include <agentctx/runtime/branch_hooks.hpp>

#include <boost/asio/awaitable.hpp>

#include <functional>
#include <optional>
#include <vector>

namespace spdlog {
class logger;
}

namespace agentctx::runtime::detail {

/// Registration before operations run (not synchronized with them); running on the strand.
class branch_hook_runner
{
public:
    void add(before_branch_hook h);
    void add(async_before_branch_hook h) { before_.push_back(std::move(h)); }
    void add(branched_hook h);
    void add(async_branched_hook h) { after_.push_back(std::move(h)); }
    bool has_before() const noexcept { return !before_.empty(); }

    /// Awaits the before hooks in registration order: the last non-empty answer wins whole; a
    /// cancel returns at once; a hook that throws is logged and skipped. `stopped` is asked after
    /// each hook: true (the navigation was cancelled meanwhile) ends the run with `stopped` set.
    struct before_result
    {
        bool stopped = false;
        before_branch_decision decision;
    };
    boost::asio::awaitable<before_result> run_before(
        const before_branch_event& e, spdlog::logger& log, std::function<bool()> stopped
    ) const;

    /// Awaits every branched hook in registration order; one that throws is logged and skipped.
    boost::asio::awaitable<void> run_after(const branched_event& e, spdlog::logger& log) const;

private:
    std::vector<async_before_branch_hook> before_;
    std::vector<async_branched_hook> after_;  ///< synchronous ones wrapped
};

}  // namespace agentctx::runtime::detail
