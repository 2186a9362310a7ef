// Reading the settings layers from disk: the global file and a trusted project's file.
#pragma once

#include <agentctx/compaction/jobs.hpp>
#include <agentctx/compaction/pinned.hpp>
#include <agentctx/compaction/required.hpp>
#include <agentctx/compaction/redaction.hpp>
#include <agentctx/compaction/settings.hpp>

#include <boost/json/object.hpp>

#include <filesystem>
#include <optional>
#include <string>

namespace agentctx::runtime {

using compaction::diagnostics;
using compaction::result;

/// `$PI_CODING_AGENT_DIR/settings.json`, else `$HOME/.pi/agent/settings.json`.
std::filesystem::path default_global_settings_path();

/// Where a program's settings come from (the CLI's and the agent server's flags map onto it).
struct settings_sources
{
    /// The global file (`--settings FILE`, else default_global_settings_path()); an absent file
    /// is no layer. nullopt = no global layer at all.
    std::optional<std::filesystem::path> global;
    /// `project_dir/.pi/settings.json`, read only when `project_trusted` (an untrusted project's
    /// file is not even opened).
    std::optional<std::filesystem::path> project_dir;
    bool project_trusted = false;
    /// Programmatic overrides (`{"compaction": {...}}`), highest precedence.
    boost::json::object overrides;
    /// The model whose `compaction.modelOverrides` entry applies (compaction::override_key).
    std::optional<std::string> model_key;
    /// `global` was named by the host (`--settings FILE`): a missing file is `not_found`.
    bool global_named = false;
};

/// The sources a host's flags name, the same for the CLI and the agent server: `settings_file`
/// (`--settings FILE`) as the global file, else default_global_settings_path(); `project_dir`
/// (`--project-dir DIR`), read only when `project_trusted` (`--trust-project`); `overrides` (the
/// flags' `{"compaction": {...}}`) over both.
settings_sources host_settings_sources(
    const std::optional<std::filesystem::path>& settings_file,
    std::optional<std::filesystem::path> project_dir,
    bool project_trusted,
    boost::json::object overrides = {}
);

/// Everything a session's configuration reads from the layered files, read once.
struct loaded_settings
{
    compaction::settings_layers layers;          ///< as read (re-resolve for another model with them)
    compaction::compaction_settings compaction;  ///< resolved for `settings_sources::model_key`
    boost::json::object provider;                ///< the merged `"provider"` section; empty = none
    compaction::redaction_settings redaction;    ///< the merged `"redaction"` section
    compaction::pin_policy pins;                 ///< the merged `"pinned"` section
    compaction::required_policy required;        ///< the merged `"required"` section
    compaction::job_rules jobs;  ///< the merged `"jobs"` section (compaction::parse_job_settings)
};

/// Reads the layers and resolves them: the compaction settings (compaction::resolve_settings),
/// and the `provider`, `redaction` and `pinned` sections of global < trusted project <
/// overrides, deep-merged (compaction::merge_layers). A file that is not a JSON object, or a
/// section of the wrong type, is `invalid_settings` naming the file or field; a named global file
/// that does not exist is runtime's `not_found`.
result<loaded_settings> load_settings_files(const settings_sources& sources, diagnostics& diag);

/// The compaction settings alone (load_settings_files(...).compaction).
result<compaction::compaction_settings> load_settings(
    const std::optional<std::filesystem::path>& global,
    const std::optional<std::filesystem::path>& project_dir,
    bool project_trusted,
    const boost::json::object& overrides,
    diagnostics& diag,
    const std::optional<std::string>& model_key = std::nullopt
);

}  // namespace agentctx::runtime
