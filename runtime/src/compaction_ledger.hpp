// What a session remembers between its compactions: failures, growth, source revisions, a prepared result.
#pragma once

#include "background_policy.hpp"
#include "failure_suppression.hpp"

#include <agentctx/compaction/checkpoint.hpp>

#include <memory>
#include <utility>

namespace agentctx::runtime::detail {

class prepared_result;  // compaction_run.hpp

/**
 * @brief The compaction memory of one session: what the next automatic check or compaction asks.
 *
 * Failures pause an automatic compaction of the same prefix (failure_suppression); the growth
 * meter says when a background compaction should start; the source-revision cache reads a covered
 * prefix once; a background compaction's prepared result waits here for its commit or discard;
 * and an overflow recovery is tried once per attempt. On the strand.
 */
class compaction_ledger
{
public:
    failure_suppression& suppression() noexcept { return suppression_; }
    const failure_suppression& suppression() const noexcept { return suppression_; }
    growth_meter& growth() noexcept { return growth_; }
    compaction::source_revision_cache& revisions() noexcept { return revisions_; }

    /// The held background result, if any.
    const std::shared_ptr<prepared_result>& prepared() const noexcept { return prepared_; }
    void hold(std::shared_ptr<prepared_result> p) noexcept { prepared_ = std::move(p); }
    /// The held result, taken: from here it is committed or discarded, never used again.
    std::shared_ptr<prepared_result> take_prepared() noexcept { return std::exchange(prepared_, nullptr); }

    /// An overflow or early-`length` recovery compacted for the current attempt (Pi 1.6: once).
    bool overflow_attempted() const noexcept { return overflow_attempted_; }
    void set_overflow_attempted(bool v) noexcept { overflow_attempted_ = v; }

private:
    failure_suppression suppression_;
    growth_meter growth_;
    compaction::source_revision_cache revisions_;
    std::shared_ptr<prepared_result> prepared_;
    bool overflow_attempted_ = false;
};

}  // namespace agentctx::runtime::detail
