// The CLI's PostgreSQL side: a session reference's text, export to a file, import from one.
#pragma once

#include <string>

namespace agentctx::cli {

/// The result of one PostgreSQL operation: the text (or session id) on success, else an error code name and
/// message.
struct pg_outcome
{
    bool ok = false;
    std::string value;    ///< the session's JSONL text (export) or its id (import)
    std::string code;     ///< error code name on failure
    std::string message;  ///< safe message on failure (no password)
};

/// The stored session's exact JSONL text. `conninfo` without the `#id` part.
pg_outcome pg_export_text(const std::string& conninfo, const std::string& session_id);

/// Stores a JSONL text as a new session (schema created or migrated first).
pg_outcome pg_import_text(const std::string& conninfo, std::string jsonl);

int cmd_export(int argc, char** argv);
int cmd_import(int argc, char** argv);

}  // namespace agentctx::cli
