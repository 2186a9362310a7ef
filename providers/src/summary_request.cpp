// Provider-neutral summary request/response helpers.
#include <agentctx/providers/summary_request.hpp>

namespace agentctx::providers {

const char* to_string(compaction::stop_reason r) noexcept
{
    switch (r)
    {
    case compaction::stop_reason::none: return "none";
    case compaction::stop_reason::stop: return "stop";
    case compaction::stop_reason::length: return "length";
    case compaction::stop_reason::tool_use: return "toolUse";
    case compaction::stop_reason::error: return "error";
    case compaction::stop_reason::aborted: return "aborted";
    case compaction::stop_reason::other: return "other";
    }
    return "other";
}

}  // namespace agentctx::providers
