// The compaction lifecycle of a session: the coordinator's decisions, the running job, the callers waiting.
#pragma once

#include "compaction_coordinator.hpp"

#include <agentctx/runtime/session.hpp>

#include <boost/asio/any_completion_handler.hpp>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>

namespace agentctx::runtime::detail {

struct compaction_job;  // compaction_run.hpp

/**
 * @brief Who waits for which compaction: the sans-io coordinator, the job it launched, and the
 * handlers of the linked callers.
 *
 * On the strand, except next_caller() (any thread: ids are allocated in initiating functions).
 */
class compaction_callers
{
public:
    using handler = boost::asio::any_completion_handler<outcome_signature>;

    compaction_coordinator& coordinator() noexcept { return coordinator_; }
    const compaction_coordinator& coordinator() const noexcept { return coordinator_; }

    std::uint64_t next_caller() noexcept { return next_caller_++; }
    /// `h` waits for the operation its caller is linked to.
    void wait(std::uint64_t caller, handler h) { waiting_.emplace(caller, std::move(h)); }
    /// The caller's handler, taken (nullopt: already completed).
    std::optional<handler> take(std::uint64_t caller)
    {
        auto node = waiting_.extract(caller);
        if (node.empty())
            return std::nullopt;
        return std::optional<handler>(std::move(node.mapped()));
    }

    /// The running operation's job, if `operation` is it (or any running one when nullopt).
    compaction_job* running(std::optional<operation_id> operation = std::nullopt) const noexcept;
    void set_running(std::shared_ptr<compaction_job> j) noexcept { job_ = std::move(j); }
    /// `operation` ended: no job runs.
    void ended(operation_id operation) noexcept;

private:
    compaction_coordinator coordinator_;
    std::shared_ptr<compaction_job> job_;
    /// Linked callers' handlers. A map: handlers are never move-assigned (Asio 1.26 bug).
    std::map<std::uint64_t, handler> waiting_;
    std::atomic<std::uint64_t> next_caller_{1};
};

}  // namespace agentctx::runtime::detail
