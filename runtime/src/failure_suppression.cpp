// The pause of automatic compaction after a failure (see failure_suppression.hpp).
#include "failure_suppression.hpp"

#include <agentctx/compaction/cancelled.hpp>
#include <agentctx/compaction/error.hpp>
#include <agentctx/providers/error.hpp>
#include <agentctx/runtime/error.hpp>

namespace agentctx::runtime::detail {

failure_kind classify_failure(const boost::system::error_code& ec) noexcept
{
    if (agentctx::is_cancelled(ec) || ec == make_error_code(errc::hook_cancelled) ||
        ec == make_error_code(errc::session_closed))
        return failure_kind::aborted;
    using ce = compaction::errc;
    for (const auto c :
         {ce::summary_truncated,
          ce::summary_empty,
          ce::summary_too_long,
          ce::insufficient_reduction,
          ce::summary_tool_call,
          ce::budget_exceeded,
          ce::over_limit,
          ce::transcript_invalid})
        if (ec == compaction::make_error_code(c))
            return failure_kind::deterministic;
    using pe = providers::errc;
    for (const auto c :
         {pe::context_overflow,
          pe::invalid_request,
          pe::truncated,
          pe::native_invalid,
          pe::response_too_large})
        if (ec == providers::make_error_code(c))
            return failure_kind::deterministic;
    return failure_kind::transient;
}

void failure_suppression::failed(
    compaction_reason reason, failure_kind kind, const std::optional<prefix_key>& key, std::size_t log_size
)
{
    if (reason == compaction_reason::manual || kind == failure_kind::aborted)
        return;
    if (kind == failure_kind::deterministic && key)
    {
        failed_key_ = key;
        failed_at_.reset();
        return;
    }
    failed_at_ = log_size;
}

void failure_suppression::reset() noexcept
{
    failed_at_.reset();
    failed_key_.reset();
    refused_clearing_.clear();
}

void failure_suppression::clearing_refused(const std::vector<std::string>& entry_ids)
{
    refused_clearing_.insert(entry_ids.begin(), entry_ids.end());
}

bool failure_suppression::paused(std::size_t log_size) const noexcept
{
    return failed_at_ && *failed_at_ == log_size;
}

bool failure_suppression::paused(compaction_reason reason, const prefix_key& key) const noexcept
{
    return reason != compaction_reason::manual && failed_key_ && *failed_key_ == key;
}

}  // namespace agentctx::runtime::detail
