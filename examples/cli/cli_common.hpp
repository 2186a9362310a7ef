// Shared pieces of the agentctx CLI: exit codes, argument scanning, opening a session file.
#pragma once

#include <agentctx/compaction/projection.hpp>
#include <agentctx/compaction/settings.hpp>
#include <agentctx/compaction/session_log.hpp>
#include <agentctx/runtime/host_config.hpp>
#include <agentctx/runtime/settings_files.hpp>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace agentctx::cli {

/// Documented exit codes (see `agentctx --help`).
enum exit_code : int
{
    exit_ok = 0,
    exit_failed = 1,       ///< the operation ran and failed (e.g. a compaction was rejected)
    exit_usage = 2,        ///< bad command line
    exit_bad_session = 3,  ///< the session file is invalid (error code and line printed)
    exit_io = 4,           ///< missing or unreadable file
    exit_locked = 5,       ///< another writer holds the session's lock
};

struct args
{
    std::vector<std::string> positional;
    std::vector<std::pair<std::string, std::string>> options;  ///< --name value / --flag ""
    bool has(std::string_view name) const;
    std::optional<std::string> get(std::string_view name) const;
};

/// Splits argv after the subcommand. `valued` lists options that take a value.
std::optional<args> parse_args(
    int argc,
    char** argv,
    int first,
    const std::vector<std::string_view>& valued,
    const std::vector<std::string_view>& flags,
    std::string& error
);

struct opened_session
{
    compaction::session_log log;
    compaction::load_report report;
};

/// Opens a session file read-only. On failure prints the error (with its code) to stderr, or as
/// `{"error": {...}}` on stdout with --json, and returns the exit code in `code`.
std::optional<opened_session> open_session(const std::string& path, bool json, int& code);

/// A session opened read-only, with the context of its active leaf.
struct opened_context : opened_session
{
    compaction::session_context context;
};

/// open_session, then build_session_context of the active leaf; on failure prints the error as
/// open_session does (`exit_bad_session` for a context that cannot be built).
std::optional<opened_context> open_session_context(const std::string& path, bool json, int& code);

/// Ends a read-only command that has printed its output: flushes stdout and stderr and leaves
/// without destroying what the command built. Freeing a 100k-entry session index entry by entry
/// takes longer than the kernel takes to drop the whole address space. Only for commands that
/// hold nothing but memory (no lock, no open store that writes, no database connection).
[[noreturn]] void exit_read_command(int code);

/// Prints `{"error": {"code", "message"}}` (json) or `agentctx: CODE: message` (stderr).
void print_error(bool json, std::string_view code, std::string_view message);

/// Writes a JSON value as JSON.stringify would, plus a newline.
void print_json(const boost::json::value& v);

/// `[{"role", "entryId", "tokens"}]` for projected messages (tokens = estimate_tokens).
boost::json::array messages_json(const std::vector<compaction::context_message>& messages);

/// The common preamble of a subcommand: parses arguments after the subcommand name, prints
/// `usage` for --help (exit 0) or on a usage error (exit 2, set in `code`), and requires exactly
/// one positional argument (the session file). nullopt means: return `code`.
std::optional<args> command_args(
    int argc,
    char** argv,
    const char* name,
    const char* usage,
    const std::vector<std::string_view>& valued,
    std::vector<std::string_view> flags,
    int& code
);

/// Parses a non-negative integer option; prints a usage error and returns nullopt when invalid.
std::optional<std::int64_t> count_option(
    const args& a, std::string_view name, std::int64_t fallback, bool& ok
);

/// The host configuration, as the agent server reads it (runtime::load_host_config): settings
/// from `--settings FILE` (else the global file) and `--project-dir DIR` with `--trust-project`,
/// the flag overrides `--keep-recent`, `--reserve`, `--max-source-chars`, `--max-calls`; the
/// provider from the settings' `provider` section under `--provider`/`--model`/`--base-url`, else
/// the environment; `--context-window` over the provider's window. With `model_is_key`, `--model
/// PROVIDER/ID` names the model alone and no provider is read (plan). The compaction settings are
/// resolved for the model's `modelOverrides` key. Prints the error and sets `code` on failure.
std::optional<runtime::host_config> cli_host_config(
    const args& a, bool json, int& code, bool model_is_key = false
);

/// cli_host_config's settings.
std::optional<runtime::loaded_settings> cli_settings(const args& a, bool json, int& code);

/// A text bar of `fraction` (0..1) of `width` cells.
std::string bar(double fraction, int width = 40);

}  // namespace agentctx::cli
