// load_settings: the global and project settings files, layered under programmatic overrides.
#include <agentctx/runtime/settings_files.hpp>

#include <boost/json/parse.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace agentctx::runtime {

namespace fs = std::filesystem;

fs::path default_global_settings_path()
{
    if (const char* dir = std::getenv("PI_CODING_AGENT_DIR"); dir && *dir)
        return fs::path(dir) / "settings.json";
    const char* home = std::getenv("HOME");
    return fs::path(home ? home : ".") / ".pi" / "agent" / "settings.json";
}

namespace {

// nullopt layer for a missing file; an error for an unreadable or non-object file.
result<std::optional<boost::json::object>> read_layer(const fs::path& path, diagnostics& diag)
{
    std::error_code ec;
    if (!fs::exists(path, ec))
        return std::optional<boost::json::object>{};
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    boost::system::error_code jec;
    auto v = boost::json::parse(ss.str(), jec);
    if (!in || jec || !v.is_object())
    {
        diag.field.clear();
        diag.message = "settings file '" + path.string() + "' is not a JSON object";
        return compaction::errc::invalid_settings;
    }
    return std::optional<boost::json::object>(std::move(v.get_object()));
}

}  // namespace

result<compaction::compaction_settings> load_settings(
    const std::optional<fs::path>& global,
    const std::optional<fs::path>& project_dir,
    bool project_trusted,
    const boost::json::object& overrides,
    diagnostics& diag,
    const std::optional<std::string>& model_key
)
{
    compaction::settings_layers layers;
    layers.project_trusted = project_trusted;
    layers.overrides = overrides;
    if (global)
    {
        auto g = read_layer(*global, diag);
        if (!g)
            return g.error();
        layers.global = std::move(*g);
    }
    if (project_dir && project_trusted)  // an untrusted project's file is not even read
    {
        auto p = read_layer(*project_dir / ".pi" / "settings.json", diag);
        if (!p)
            return p.error();
        layers.project = std::move(*p);
    }
    return compaction::resolve_settings(layers, diag, model_key);
}

}  // namespace agentctx::runtime
