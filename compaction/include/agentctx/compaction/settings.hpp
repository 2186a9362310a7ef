// Compaction settings (spec §4.3): defaults, global < trusted project < programmatic overrides.
#pragma once

#include <agentctx/compaction/error.hpp>

#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>

namespace agentctx::compaction {

struct retry_settings
{
    bool enabled = true;
    std::int64_t max_retries = 3;
    std::int64_t base_delay_ms = 2000;
};

struct compaction_settings
{
    bool enabled = true;
    std::int64_t reserve_tokens = 16384;
    std::int64_t keep_recent_tokens = 20000;
    retry_settings retry;
};

/// The layers settings come from, lowest precedence first. Each is the whole settings JSON
/// (`{"compaction": {...}, "retry": {...}}`), or absent.
struct settings_layers
{
    std::optional<boost::json::object> global;   ///< ~/.pi/agent/settings.json
    std::optional<boost::json::object> project;  ///< <cwd>/.pi/settings.json
    bool project_trusted = false;                ///< an untrusted project's file is ignored
    boost::json::object overrides;               ///< programmatic (SDK) overrides, highest
};

/// Deep-merges objects: keys of `over` replace those of `base`; nested objects merge recursively.
boost::json::object deep_merge(const boost::json::object& base, const boost::json::object& over);

/// Resolves the layers. Missing fields fall back one by one to the defaults; `0` is honoured;
/// a wrong type or a negative number is `invalid_settings` naming the field and its layer.
result<compaction_settings> resolve_settings(const settings_layers& layers, diagnostics& diag);

}  // namespace agentctx::compaction
