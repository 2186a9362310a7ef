// Portable checkpoints inside the session: the fields every compaction records, export, restore.
#pragma once

#include "session_core.hpp"

#include <boost/json/object.hpp>

#include <string_view>

namespace agentctx::runtime {

using detail::session_core;

/// Checkpoint steps over the session's core; everything runs on the session's strand.
struct checkpoint_ops
{
    /// Adds `sourceRevision`, `identity` and `configDigest` to a compaction's `details.agentctx`,
    /// for a compaction keeping from `first_kept` (an entry of the log).
    static compaction::result<void> add_fields(
        const session_core& s,
        boost::json::object& agentctx,
        std::string_view first_kept,
        bool from_hook,
        compaction::diagnostics& diag
    );

    static checkpoint_outcome export_latest(const session_core& s, boost::system::error_code& ec);
    static checkpoint_outcome restore(
        session_core& s, const boost::json::value& record, boost::system::error_code& ec
    );
};

}  // namespace agentctx::runtime
