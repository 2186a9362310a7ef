// The checkpoint fields every compaction records in details.agentctx: what it covers, who wrote it, under
// which settings.
#pragma once

#include <agentctx/compaction/checkpoint.hpp>
#include <agentctx/compaction/session_log.hpp>
#include <agentctx/runtime/session.hpp>

#include <boost/json/object.hpp>

#include <string_view>

namespace agentctx::runtime {

/// Adds `sourceRevision`, `identity` and `configDigest` to a compaction's `details.agentctx`, for
/// a compaction keeping from `first_kept` (an entry of `log`); `revisions` reads the covered
/// prefix once across compactions.
compaction::result<void> add_checkpoint_fields(
    const compaction::session_log& log,
    const session_config& config,
    compaction::source_revision_cache& revisions,
    boost::json::object& agentctx,
    std::string_view first_kept,
    bool from_hook,
    compaction::diagnostics& diag
);

}  // namespace agentctx::runtime
