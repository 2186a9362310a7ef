// Checkpoint export over the session's log: the latest compaction as a portable record.
#pragma once

#include <agentctx/runtime/checkpoint.hpp>

#include <boost/system/error_code.hpp>

namespace agentctx::runtime {

namespace detail {
class session_core;
}

/// The latest compaction on the active path as a portable record, redacted; on the strand.
checkpoint_outcome export_latest_checkpoint(const detail::session_core& s, boost::system::error_code& ec);

}  // namespace agentctx::runtime
