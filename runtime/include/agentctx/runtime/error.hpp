// Error codes of the runtime module (stores, sessions).
#pragma once

#include <boost/system/error_code.hpp>

#include <type_traits>

namespace agentctx::runtime {

enum class errc
{
    session_locked = 1,        ///< another writer holds the session file's lock
    io_error,                  ///< a read, write, sync or rename failed (errno in the message)
    already_exists,            ///< create() on a path that exists
    not_found,                 ///< open() on a path that does not exist
    read_only,                 ///< append() on a store opened read-only
    no_header,                 ///< append() before the header was written
    cancelled,                 ///< the operation was cancelled (abort_compaction, slot, close)
    stale_plan,                ///< the path changed under the compaction: its cut is gone
    overflow_recovery_failed,  ///< a second overflow after one compact-and-retry
    not_overflow,              ///< recover_overflow() with an error that is not an overflow
    no_summarizer,             ///< no summarizer configured
    session_closed,            ///< the session was closed
    hook_cancelled,            ///< a before_compact hook cancelled the compaction
    auto_compaction_paused,    ///< the last automatic attempt failed on this very path
    compaction_running,        ///< a checkpoint restore while a compaction runs (refused, nothing written)
    stale_leaf,                ///< another node appended first: the session reloaded, retry the append
    compaction_in_progress,    ///< another node holds the session's compaction lease
    database_error,  ///< a PostgreSQL connection or statement failed (server message in diagnostics)
    checkpoint_persist_failed,  ///< the host's persist_checkpoint refused or threw: the piece was not
                                ///< accepted
    summary_call_limit,  ///< summaryMaxCalls reached with pieces left: progress kept, a later pass continues
    evidence_refused,    ///< the host's preserve_evidence refused or threw: nothing was summarized or written
    model_window_exceeded,  ///< after a model downshift's compaction the context still does not fit the new
                            ///< window
    hook_invalid_cut,  ///< a before_compact hook's firstKeptEntryId is not a valid cut (the message names it
                       ///< and why)
    summarized_history,    ///< a history replacement would change what the latest compaction summarized
                           ///< (nothing written)
    adoption_invalid_cut,  ///< an adopted compaction's covered prefix does not end at a valid cut (nothing
                           ///< written; the message says why)
};

const boost::system::error_category& error_category() noexcept;
const char* to_string(errc e) noexcept;

inline boost::system::error_code make_error_code(errc e) noexcept
{
    return {static_cast<int>(e), error_category()};
}

}  // namespace agentctx::runtime

template <>
struct boost::system::is_error_code_enum<agentctx::runtime::errc> : std::true_type
{};
