// load_settings: the global and project settings files, layered under programmatic overrides.
#include <agentctx/runtime/settings_files.hpp>

#include <agentctx/runtime/error.hpp>

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

settings_sources host_settings_sources(
    const std::optional<fs::path>& settings_file,
    std::optional<fs::path> project_dir,
    bool project_trusted,
    boost::json::object overrides
)
{
    settings_sources s;
    s.global = settings_file ? *settings_file : default_global_settings_path();
    s.global_named = settings_file.has_value();  // a named file must exist; the default need not
    s.project_dir = std::move(project_dir);
    s.project_trusted = project_trusted;
    s.overrides = std::move(overrides);
    return s;
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

// The file layers of `sources` (with its overrides), each file read once.
result<compaction::settings_layers> read_layers(const settings_sources& sources, diagnostics& diag)
{
    compaction::settings_layers layers;
    layers.project_trusted = sources.project_trusted;
    layers.overrides = sources.overrides;
    if (sources.global && sources.global_named && !fs::exists(*sources.global))
    {
        diag.field.clear();
        diag.message = "cannot read the settings file '" + sources.global->string() + "'";
        return make_error_code(errc::not_found);
    }
    if (sources.global)
    {
        auto g = read_layer(*sources.global, diag);
        if (!g)
            return g.error();
        layers.global = std::move(*g);
    }
    if (sources.project_dir && sources.project_trusted)  // an untrusted project's file is not even read
    {
        auto p = read_layer(*sources.project_dir / ".pi" / "settings.json", diag);
        if (!p)
            return p.error();
        layers.project = std::move(*p);
    }
    return layers;
}

}  // namespace

result<loaded_settings> load_settings_files(const settings_sources& sources, diagnostics& diag)
{
    auto read = read_layers(sources, diag);
    if (!read)
        return read.error();
    loaded_settings out;
    out.layers = std::move(*read);
    const auto& layers = out.layers;
    auto resolved = compaction::resolve_settings(layers, diag, sources.model_key);
    if (!resolved)
        return resolved.error();
    out.compaction = *resolved;

    // The other sections layer like the compaction section: project over global, overrides last.
    const boost::json::object merged = compaction::merge_layers(layers);
    if (const auto* p = merged.if_contains("provider"))
    {
        if (!p->is_object())
        {
            diag.field = "provider";
            diag.message = "the settings' \"provider\" section is not an object";
            return compaction::errc::invalid_settings;
        }
        out.provider = p->get_object();
    }
    auto redaction = compaction::parse_redaction_settings(merged, diag);
    if (!redaction)
        return redaction.error();
    out.redaction = std::move(*redaction);
    auto pins = compaction::parse_pin_settings(merged, diag);
    if (!pins)
        return pins.error();
    out.pins = std::move(*pins);
    auto required = compaction::parse_required_settings(merged, diag);
    if (!required)
        return required.error();
    out.required = std::move(*required);
    auto jobs = compaction::parse_job_settings(merged, diag);
    if (!jobs)
        return jobs.error();
    out.jobs = std::move(*jobs);
    return out;
}

result<compaction::compaction_settings> load_settings(
    const std::optional<fs::path>& global,
    const std::optional<fs::path>& project_dir,
    bool project_trusted,
    const boost::json::object& overrides,
    diagnostics& diag,
    const std::optional<std::string>& model_key
)
{
    auto layers = read_layers({global, project_dir, project_trusted, overrides, model_key}, diag);
    if (!layers)
        return layers.error();
    return compaction::resolve_settings(*layers, diag, model_key);
}

}  // namespace agentctx::runtime
