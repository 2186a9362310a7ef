// One host configuration for every front end: settings files + environment + flags → provider →
// session_config.
#pragma once

#include <agentctx/compaction/projection.hpp>
#include <agentctx/providers/provider_config.hpp>
#include <agentctx/runtime/session.hpp>
#include <agentctx/runtime/settings_files.hpp>

#include <boost/json/object.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace agentctx::runtime {

/// What a host reads besides the environment: its settings sources and its command-line flags.
struct host_inputs
{
    /// The settings files and the flags' `{"compaction": {...}}` overrides. `model_key` is not
    /// read: the key is the resolved model's (compaction::override_key).
    settings_sources sources;
    /// Flags over the settings' `"provider"` section, key by key (`name`, `model`, `baseUrl`).
    boost::json::object provider_flags;
    /// A model named without a provider (a dry run such as `agentctx plan --model PROVIDER/ID`):
    /// it is the model, its key selects the overrides, and no provider is read.
    std::optional<compaction::model_ref> model;
    /// A context window given on the command line: wins over the provider's.
    std::optional<std::int64_t> context_window;
    /// The environment (provider_from_environment); empty = std::getenv.
    std::function<const char*(const char*)> getenv;
};

/// What a host serves with: the settings as read and resolved, the provider, the model.
struct host_config
{
    /// `compaction` is resolved for `model`'s `compaction.modelOverrides` entry.
    loaded_settings settings;
    /// nullopt: no provider is configured (the offline summarizer).
    std::optional<providers::provider_config> provider;
    /// The provider's name, model, context window (200000 when it names none) and output cap;
    /// `offline`/`offline` without a provider.
    model_identity model;
    /// The settings' `models` section (merged like the others): the models a session may be
    /// switched to, `{"<provider>/<modelId>": {"contextWindow": N, "maxOutputTokens": M}}`.
    std::vector<model_identity> models;
};

/// The window a model has when neither the provider nor a flag names one.
inline constexpr std::int64_t default_context_window = 200000;

/// Reads the settings layers, resolves the provider from the merged `"provider"` section, the
/// flags and the environment, then resolves the compaction settings for that model's
/// `modelOverrides` key. Errors: `invalid_settings` (a file or field, named in `diag`, e.g.
/// `models.openai/gpt-4.1.contextWindow`), the providers' `not_configured` (an unknown
/// provider, a hosted one without its key).
result<host_config> load_host_config(const host_inputs& in, diagnostics& diag);

/// A session configuration from it: compaction settings, model, redaction and pins. The
/// summarizer and the logger are the host's to set.
session_config session_config_of(const host_config& h);

}  // namespace agentctx::runtime
