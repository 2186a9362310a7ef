// Portable checkpoints inside the session: the fields every compaction records, export, restore.
#pragma once

#include <agentctx/runtime/session.hpp>

#include <boost/json/object.hpp>

#include <string_view>

namespace agentctx::runtime {

/// A friend of session, as transaction is; everything runs on the session's strand.
struct checkpoint_ops
{
    /// Adds `sourceRevision`, `identity` and `configDigest` to a compaction's `details.agentctx`,
    /// for a compaction keeping from `first_kept` (an entry of the log).
    static compaction::result<void> add_fields(const session& s, boost::json::object& agentctx, std::string_view first_kept,
                                               bool from_hook, compaction::diagnostics& diag);

    static checkpoint_outcome export_latest(const session& s, boost::system::error_code& ec);
    static checkpoint_outcome restore(session& s, const boost::json::value& record, boost::system::error_code& ec);
};

}  // namespace agentctx::runtime
