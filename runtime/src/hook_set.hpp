// The session's listeners and hooks: registration, their order, and what a throwing one does.
#pragma once

#include <agentctx/runtime/events.hpp>
#include <agentctx/runtime/session.hpp>

#include "branch_hook_runner.hpp"

#include <boost/asio/awaitable.hpp>

#include <functional>
#include <memory>
#include <vector>

namespace spdlog {
class logger;
}

namespace agentctx::runtime::detail {

/**
 * @brief Every callback a host registered on a session, run in registration order.
 *
 * Registration happens before operations run (it is not synchronized with them); everything else
 * runs on the session's strand. A listener or hook that throws is logged and the next still runs.
 * Synchronous hooks are kept as awaitables that never suspend, so each list has one order.
 */
class hook_set
{
public:
    /// `observer` sees every event before the host's listeners (the session's own measurements).
    hook_set(std::shared_ptr<spdlog::logger> logger, std::function<void(const session_event&)> observer);

    void add(event_listener l);
    void add(before_compact_hook h);
    void add(async_before_compact_hook h);
    void add(compacted_hook h);
    void add(async_compacted_hook h);
    void add(compact_failed_hook h);
    void add(async_compact_failed_hook h);
    /// before_branch and branched hooks (Pi 1.6's tree hooks).
    branch_hook_runner& branch() noexcept { return branch_; }
    const branch_hook_runner& branch() const noexcept { return branch_; }

    /// The observer, then each listener.
    void emit(const session_event& e) const;
    /// The before_compact hooks in order: the compaction awaits each and checks its cancellation
    /// between them.
    const std::vector<async_before_compact_hook>& before_compact() const noexcept { return before_; }
    /// Awaits each compacted hook in order.
    boost::asio::awaitable<void> run_compacted(const compacted_event& e) const;
    /// Awaits each compact_failed hook in order (after compaction_end, as Pi 1.6).
    boost::asio::awaitable<void> run_failed(const compact_failed_event& e) const;
    spdlog::logger& logger() const noexcept { return *logger_; }

private:
    std::shared_ptr<spdlog::logger> logger_;
    std::function<void(const session_event&)> observer_;
    std::vector<event_listener> listeners_;
    std::vector<async_before_compact_hook> before_;
    std::vector<async_compacted_hook> compacted_;
    std::vector<async_compact_failed_hook> failed_;
    branch_hook_runner branch_;
};

}  // namespace agentctx::runtime::detail
