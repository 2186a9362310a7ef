// Validation of an entry before it is appended: everything checked before any byte is written.
#pragma once

#include <agentctx/compaction/entry.hpp>
#include <agentctx/compaction/error.hpp>
#include <agentctx/compaction/session_log.hpp>

#include <string>

namespace agentctx::runtime::detail {

/// Checks that `log.append(e)` would succeed and that `e` may follow a header at all: not a
/// second `session` header and not a `compaction` (those come only from the compaction
/// transaction). The store is written only after this passes, so file and tree never diverge.
/// Errors: wrong_type (type not appendable), migration_required, missing_field/duplicate_id (id),
/// dangling_parent, entry_not_found (label target).
inline compaction::result<void> check_appendable(
    const compaction::session_log& log, const compaction::entry& e, compaction::diagnostics& diag
)
{
    using compaction::errc;
    if (e.type_name == "session" || e.type == compaction::entry_type::compaction)
    {
        diag.field = "type";
        diag.message = "entries of type '" + e.type_name + "' cannot be appended";
        return errc::wrong_type;
    }
    if (log.source_version() < compaction::current_session_version)
    {
        diag.message = "the session file is version " + std::to_string(log.source_version()) +
                       "; run migrate before appending to it";
        return errc::migration_required;
    }
    if (e.id.empty() || log.contains(e.id))
    {
        diag.field = "id";
        diag.message = e.id.empty() ? "entry id is empty" : "duplicate id '" + e.id + "'";
        return e.id.empty() ? errc::missing_field : errc::duplicate_id;
    }
    if (e.parent_id && !log.contains(*e.parent_id))
    {
        diag.field = "parentId";
        diag.message = "parentId '" + *e.parent_id + "' names no entry";
        return errc::dangling_parent;
    }
    if (e.type == compaction::entry_type::label && !log.contains(e.target_id))
    {
        diag.field = "targetId";
        diag.message = "label target '" + e.target_id + "' names no entry";
        return errc::entry_not_found;
    }
    return {};
}

}  // namespace agentctx::runtime::detail
