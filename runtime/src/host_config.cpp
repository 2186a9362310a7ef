// One host configuration: settings files + environment + flags → provider → model → resolved settings.
#include <agentctx/runtime/host_config.hpp>

#include <agentctx/compaction/projection.hpp>
#include <agentctx/compaction/settings.hpp>
#include <agentctx/providers/http_summarizer.hpp>
#include <agentctx/providers/offline_summarizer.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace agentctx::runtime {

namespace {

model_identity model_of(
    const std::optional<providers::provider_config>& p, std::optional<std::int64_t> window_flag
)
{
    model_identity m{"offline", "offline", default_context_window, 0};
    if (p)
        m = {
            p->name,
            p->model,
            p->context_window > 0 ? p->context_window : default_context_window,
            p->max_output_tokens};
    if (window_flag)
        m.context_window = *window_flag;
    return m;
}

result<std::vector<model_identity>> parse_models(
    const compaction::settings_layers& layers, diagnostics& diag
);

// The compaction settings resolved for `m`: its modelOverrides entry over the ordinary ones. The
// model keeps its reserveTokens and keepRecentTokens, which a session applies while serving it.
result<compaction::compaction_settings> resolve_overrides(
    const compaction::settings_layers& layers, model_identity& m, diagnostics& diag
)
{
    auto resolved =
        compaction::resolve_settings(layers, diag, compaction::override_key({m.provider, m.model_id}));
    if (!resolved)
        return resolved.error();
    m.reserve_tokens = resolved->reserve_tokens;
    m.keep_recent_tokens = resolved->keep_recent_tokens;
    return resolved;
}

// Pi 1.6: compaction.modelOverrides["<provider>/<modelId>"] of the serving model applies; each
// model of the `models` section gets its own, for the session to apply when it switches.
result<host_config> resolve_for_model(host_config h, diagnostics& diag)
{
    auto resolved = resolve_overrides(h.settings.layers, h.model, diag);
    if (!resolved)
        return resolved.error();
    h.settings.compaction = *resolved;
    auto models = parse_models(h.settings.layers, diag);
    if (!models)
        return models.error();
    for (auto& m : *models)
        if (auto r = resolve_overrides(h.settings.layers, m, diag); !r)
            return r.error();
    h.models = std::move(*models);
    return h;
}

result<void> bad_models(diagnostics& diag, std::string field, std::string why)
{
    diag.message = "settings field '" + field + "': " + why;
    diag.field = std::move(field);
    return compaction::errc::invalid_settings;
}

// A count field of a `models` entry: absent = nullopt; else an integer of at least `min`.
result<std::optional<std::int64_t>> count_field(
    const boost::json::object& o,
    std::string_view key,
    std::int64_t min,
    const std::string& path,
    diagnostics& diag
)
{
    const auto* v = o.if_contains(key);
    if (!v)
        return std::optional<std::int64_t>{};
    const bool integer = v->is_int64() || (v->is_uint64() && v->get_uint64() <= INT64_MAX);
    const std::int64_t n = v->is_int64()    ? v->get_int64()
                           : v->is_uint64() ? static_cast<std::int64_t>(v->get_uint64())
                                            : 0;
    if (!integer || n < min)
        return bad_models(
                   diag,
                   path + "." + std::string(key),
                   min > 0 ? "must be a positive integer" : "must be a non-negative integer"
        )
            .error();
    return std::optional<std::int64_t>(n);
}

// The merged `models` section: `"<provider>/<modelId>"` → {contextWindow, maxOutputTokens}.
result<std::vector<model_identity>> parse_models(const compaction::settings_layers& layers, diagnostics& diag)
{
    const boost::json::object merged = compaction::merge_layers(layers);
    std::vector<model_identity> out;
    const auto* section = merged.if_contains("models");
    if (!section)
        return out;
    if (!section->is_object())
        return bad_models(diag, "models", "must be an object keyed by \"<provider>/<modelId>\"").error();
    for (const auto& kv : section->get_object())
    {
        const std::string key(kv.key());
        const std::string path = "models." + key;
        const auto slash = key.find('/');
        if (slash == std::string::npos || slash == 0 || slash + 1 == key.size())
            return bad_models(diag, path, "the key must be \"<provider>/<modelId>\"").error();
        if (!kv.value().is_object())
            return bad_models(diag, path, "must be an object").error();
        const auto& o = kv.value().get_object();
        auto window = count_field(o, "contextWindow", 1, path, diag);
        if (!window)
            return window.error();
        if (!*window)
            return bad_models(diag, path + ".contextWindow", "is required").error();
        auto output = count_field(o, "maxOutputTokens", 0, path, diag);
        if (!output)
            return output.error();
        out.push_back({key.substr(0, slash), key.substr(slash + 1), **window, output->value_or(0)});
    }
    return out;
}

// AGENTCTX_OFFLINE_DELAY_MS, in milliseconds; absent or not a number = none.
std::chrono::milliseconds offline_delay_of(const std::function<const char*(const char*)>& getenv)
{
    const char* v = getenv("AGENTCTX_OFFLINE_DELAY_MS");
    return std::chrono::milliseconds(v ? std::max(0LL, std::strtoll(v, nullptr, 10)) : 0);
}

// The provider and the model `in` names: a model named without a provider (a dry run), else
// the merged `"provider"` section under the flags and the environment (none = offline).
result<void> choose_model(const host_inputs& in, host_config& out, diagnostics& diag)
{
    const std::function<const char*(const char*)> getenv =
        in.getenv ? in.getenv : [](const char* n) { return static_cast<const char*>(std::getenv(n)); };
    out.offline_delay = offline_delay_of(getenv);
    if (in.model)
    {
        out.model = {
            in.model->provider, in.model->model_id, in.context_window.value_or(default_context_window), 0};
        return {};
    }
    boost::json::object section = out.settings.provider;
    for (const auto& kv : in.provider_flags)
        section[kv.key()] = kv.value();
    providers::diagnostics pdiag;
    auto provider = providers::provider_from_environment(section.empty() ? nullptr : &section, getenv, pdiag);
    if (!provider)
    {
        diag.message = pdiag.message;
        return provider.error();
    }
    out.provider = std::move(*provider);
    out.model = model_of(out.provider, in.context_window);
    return {};
}

// The serving model and every model of the `models` section: each carries its own budgets.
std::vector<model_identity*> models_of(host_config& h)
{
    std::vector<model_identity*> out{&h.model};
    for (auto& m : h.models)
        out.push_back(&m);
    return out;
}

// A model of the `models` section whose window is at or below its reserveTokens could never hold
// a request (its threshold would be negative): refused, naming its contextWindow.
result<void> check_model_windows(const host_config& h, diagnostics& diag)
{
    for (const auto& m : h.models)
    {
        const std::int64_t reserve = m.reserve_tokens.value_or(h.settings.compaction.reserve_tokens);
        if (m.context_window <= reserve)
            return bad_models(
                diag,
                "models." + m.provider + "/" + m.model_id + ".contextWindow",
                std::to_string(m.context_window) + " must be larger than reserveTokens (" +
                    std::to_string(reserve) + ")"
            );
    }
    return {};
}

}  // namespace

result<host_config> load_host_config(const host_inputs& in, diagnostics& diag)
{
    settings_sources sources = in.sources;
    sources.model_key.reset();  // resolved below, for the model the provider names
    auto loaded = load_settings_files(sources, diag);
    if (!loaded)
        return loaded.error();
    host_config out;
    out.settings = std::move(*loaded);
    if (auto served = choose_model(in, out, diag); !served)
        return served.error();
    auto h = resolve_for_model(std::move(out), diag);
    if (!h)
        return h;
    // The flags last, over modelOverrides too: the command line means this run, on every model.
    const budget_flags& f = in.flags;
    auto& s = h->settings.compaction;
    s.keep_recent_tokens = f.keep_recent_tokens.value_or(s.keep_recent_tokens);
    s.reserve_tokens = f.reserve_tokens.value_or(s.reserve_tokens);
    s.summary_max_source_chars = f.summary_max_source_chars.value_or(s.summary_max_source_chars);
    s.summary_max_calls = f.summary_max_calls.value_or(s.summary_max_calls);
    for (model_identity* m : models_of(*h))
    {
        m->keep_recent_tokens = f.keep_recent_tokens ? f.keep_recent_tokens : m->keep_recent_tokens;
        m->reserve_tokens = f.reserve_tokens ? f.reserve_tokens : m->reserve_tokens;
    }
    if (auto ok = check_model_windows(*h, diag); !ok)
        return ok.error();
    return h;
}

std::shared_ptr<providers::summarizer> summarizer_for(
    const host_config& h, boost::asio::any_io_executor ex, std::shared_ptr<spdlog::logger> logger
)
{
    if (h.provider)
        return std::make_shared<providers::http_summarizer>(std::move(ex), *h.provider, std::move(logger));
    return std::make_shared<providers::offline_summarizer>(std::move(ex), h.offline_delay);
}

session_config make_session_config(
    const host_config& h, boost::asio::any_io_executor ex, std::shared_ptr<spdlog::logger> logger
)
{
    session_config c;
    c.settings = h.settings.compaction;
    c.model = h.model;
    c.redaction = h.settings.redaction;
    c.pins = h.settings.pins;
    c.required = h.settings.required;
    c.jobs = h.settings.jobs;
    c.models = h.models;
    c.logger = logger;
    c.summarizer =
        h.make_summarizer ? h.make_summarizer(std::move(ex)) : summarizer_for(h, std::move(ex), logger);
    return c;
}

}  // namespace agentctx::runtime
