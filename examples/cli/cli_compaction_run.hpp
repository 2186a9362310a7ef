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

/// The stderr line `announce` writes once the compaction is under way and a signal aborts it
/// (docs/cli.md): a script may wait for it before it sends SIGINT.
inline constexpr const char* started_line = "compaction started";

/// Compacts `session` (with `instructions`) and runs `ioc` until the compaction completes.
/// SIGINT and SIGTERM abort the compaction. With `tty`, `draw` is called at once and then every
/// `period` while the compaction runs, and the line it drew on stderr is cleared at the end.
/// With `announce`, `started_line` is written to stderr when the session announces the
/// compaction (compaction_start_event), which is after the signal handlers are installed.
compaction_run run_compaction(
    boost::asio::io_context& ioc,
    runtime::session& session,
    std::optional<std::string> instructions,
    bool tty,
    bool announce,
    std::chrono::milliseconds period,
    std::function<void()> draw
);

}  // namespace agentctx::cli
