// The runtime module's error_category.
#include <agentctx/runtime/error.hpp>

#include <agentctx/compaction/error_category.hpp>

namespace agentctx::runtime {

const char* to_string(errc e) noexcept
{
    switch (e)
    {
    case errc::session_locked:
        return "session_locked";
    case errc::io_error:
        return "io_error";
    case errc::already_exists:
        return "already_exists";
    case errc::not_found:
        return "not_found";
    case errc::read_only:
        return "read_only";
    case errc::no_header:
        return "no_header";
    case errc::cancelled:
        return "cancelled";
    case errc::stale_plan:
        return "stale_plan";
    case errc::overflow_recovery_failed:
        return "overflow_recovery_failed";
    case errc::not_overflow:
        return "not_overflow";
    case errc::no_summarizer:
        return "no_summarizer";
    case errc::session_closed:
        return "session_closed";
    case errc::hook_cancelled:
        return "hook_cancelled";
    case errc::auto_compaction_paused:
        return "auto_compaction_paused";
    case errc::compaction_running:
        return "compaction_running";
    case errc::stale_leaf:
        return "stale_leaf";
    case errc::compaction_in_progress:
        return "compaction_in_progress";
    case errc::database_error:
        return "database_error";
    case errc::checkpoint_persist_failed:
        return "checkpoint_persist_failed";
    case errc::summary_call_limit:
        return "summary_call_limit";
    case errc::evidence_refused:
        return "evidence_refused";
    case errc::model_window_exceeded:
        return "model_window_exceeded";
    case errc::hook_invalid_cut:
        return "hook_invalid_cut";
    case errc::summarized_history:
        return "summarized_history";
    case errc::adoption_invalid_cut:
        return "adoption_invalid_cut";
    }
    return "unknown";
}

const boost::system::error_category& error_category() noexcept
{
    static const agentctx::detail::module_category<errc> instance{
        "agentctx.runtime", &to_string, errc::cancelled};
    return instance;
}

}  // namespace agentctx::runtime
