// Reading the settings layers from disk: the global file and a trusted project's file.
#pragma once

#include <agentctx/compaction/settings.hpp>

#include <filesystem>
#include <optional>

namespace agentctx::runtime {

using compaction::diagnostics;
using compaction::result;

/// `$PI_CODING_AGENT_DIR/settings.json`, else `$HOME/.pi/agent/settings.json`.
std::filesystem::path default_global_settings_path();

/// Reads the layers: `global` (absent file = no layer), `project_dir/.pi/settings.json` (read only
/// when `project_trusted`), and the programmatic `overrides`; then resolves them for the model
/// whose override key is `model_key` (compaction::override_key; nullopt = overrides ignored), see
/// compaction::resolve_settings. A file that is not a JSON object is `invalid_settings` naming
/// the file.
result<compaction::compaction_settings> load_settings(
    const std::optional<std::filesystem::path>& global,
    const std::optional<std::filesystem::path>& project_dir,
    bool project_trusted,
    const boost::json::object& overrides,
    diagnostics& diag,
    const std::optional<std::string>& model_key = std::nullopt
);

}  // namespace agentctx::runtime
