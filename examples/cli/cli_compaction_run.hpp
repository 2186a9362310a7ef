// One compaction of a writable session run to its end by the CLI: Ctrl-C aborts it, and a
// progress line redraws on a terminal while it runs.
#pragma once

#include <agentctx/runtime/session.hpp>

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <functional>
#include <optional>
#include <string>

namespace agentctx::cli {

struct compaction_run
{
    boost::system::error_code ec;
    runtime::compaction_outcome outcome;
    bool interrupted = false;  ///< SIGINT or SIGTERM aborted it
};

/// Compacts `session` (with `instructions`) and runs `ioc` until the compaction completes.
/// SIGINT and SIGTERM abort the compaction. With `tty`, `draw` is called at once and then every
/// `period` while the compaction runs, and the line it drew on stderr is cleared at the end.
compaction_run run_compaction(
    boost::asio::io_context& ioc,
    runtime::session& session,
    std::optional<std::string> instructions,
    bool tty,
    std::chrono::milliseconds period,
    std::function<void()> draw
);

}  // namespace agentctx::cli
