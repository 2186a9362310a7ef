// The compaction callers: which job runs, and its end.
#include "compaction_callers.hpp"

#include "compaction_run.hpp"

namespace agentctx::runtime::detail {

compaction_job* compaction_callers::running(std::optional<operation_id> operation) const noexcept
{
    if (!job_ || (operation && job_->id != *operation))
        return nullptr;
    return job_.get();
}

void compaction_callers::ended(operation_id operation) noexcept
{
    if (job_ && job_->id == operation)
        job_.reset();
}

}  // namespace agentctx::runtime::detail
