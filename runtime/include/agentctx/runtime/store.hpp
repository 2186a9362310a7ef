// The persistence interface of a session: load the log, append entries as JSONL lines.
#pragma once

#include <agentctx/compaction/entry.hpp>
#include <agentctx/compaction/error.hpp>
#include <agentctx/compaction/session_log.hpp>

#include <string>

namespace agentctx::runtime {

using compaction::diagnostics;
using compaction::result;

/// How often appended lines are forced to stable storage.
enum class fsync_policy
{
    never,          ///< leave it to the OS
    always,         ///< fdatasync after every append
    on_compaction,  ///< fdatasync after appends of compaction entries (the default)
};

/// A session's persistent form. Every store holds exactly what a JSONL file would hold, so
/// loading from any store reopens the session identically.
class store
{
public:
    virtual ~store() = default;

    /// Writes the header line of a new session. Fails if the store already has content.
    virtual result<void> write_header(const compaction::session_header& h, diagnostics& diag) = 0;

    /// Appends one entry as one complete line. Durable (per policy) when it returns.
    virtual result<void> append(const compaction::entry& e, diagnostics& diag) = 0;

    /// Reads the whole session. The log materializes entries from this store on demand.
    virtual result<compaction::session_log> load(
        const compaction::load_options& opts,
        compaction::load_report& report,
        diagnostics& diag
    ) = 0;
};

/// `JSON.stringify(raw) + "\n"`: exactly the line Pi writes for an entry or header.
std::string to_jsonl_line(const boost::json::object& raw);

}  // namespace agentctx::runtime
