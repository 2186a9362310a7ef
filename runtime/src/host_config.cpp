// One host configuration: settings files + environment + flags → provider → model → resolved settings.
#include <agentctx/runtime/host_config.hpp>

#include <agentctx/compaction/projection.hpp>
#include <agentctx/compaction/settings.hpp>

#include <cstdlib>

namespace agentctx::runtime {

namespace {

model_identity model_of(const std::optional<providers::provider_config>& p, std::optional<std::int64_t> window_flag)
{
    model_identity m{"offline", "offline", default_context_window, 0};
    if (p)
        m = {p->name, p->model, p->context_window > 0 ? p->context_window : default_context_window, p->max_output_tokens};
    if (window_flag)
        m.context_window = *window_flag;
    return m;
}

// Pi 1.6: compaction.modelOverrides["<provider>/<modelId>"] of the serving model applies.
result<host_config> resolve_for_model(host_config h, diagnostics& diag)
{
    auto resolved = compaction::resolve_settings(h.settings.layers, diag,
                                                 compaction::override_key({h.model.provider, h.model.model_id}));
    if (!resolved)
        return resolved.error();
    h.settings.compaction = *resolved;
    return h;
}

}  // namespace

result<host_config> load_host_config(const host_inputs& in, diagnostics& diag)
{
    settings_sources sources = in.sources;
    sources.model_key.reset();  // resolved below, for the model the provider names
    auto loaded = load_settings_files(sources, diag);
    if (!loaded)
        return loaded.error();
    boost::json::object section = loaded->provider;
    for (const auto& kv : in.provider_flags)
        section[kv.key()] = kv.value();
    if (in.model)
    {
        host_config out{std::move(*loaded), std::nullopt, {in.model->provider, in.model->model_id,
                                                           in.context_window.value_or(default_context_window), 0}};
        return resolve_for_model(std::move(out), diag);
    }
    const std::function<const char*(const char*)> getenv =
        in.getenv ? in.getenv : [](const char* n) { return static_cast<const char*>(std::getenv(n)); };
    providers::diagnostics pdiag;
    auto provider = providers::provider_from_environment(section.empty() ? nullptr : &section, getenv, pdiag);
    if (!provider)
    {
        diag.message = pdiag.message;
        return provider.error();
    }
    host_config out{std::move(*loaded), std::move(*provider), {}};
    out.model = model_of(out.provider, in.context_window);
    return resolve_for_model(std::move(out), diag);
}

session_config session_config_of(const host_config& h)
{
    session_config c;
    c.settings = h.settings.compaction;
    c.model = h.model;
    c.redaction = h.settings.redaction;
    c.pins = h.settings.pins;
    c.required = h.settings.required;
    return c;
}

}  // namespace agentctx::runtime
