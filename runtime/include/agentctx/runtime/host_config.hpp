// One host configuration for every front end: settings files + environment + flags → provider →
// session_config. The CLI and the agent server build their sessions through make_session_config.
#pragma once

#include <agentctx/compaction/projection.hpp>
#include <agentctx/providers/provider_config.hpp>
#include <agentctx/runtime/session.hpp>
#include <agentctx/runtime/settings_files.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/json/object.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

namespace agentctx::runtime {

/// The budget flags of a command line (`--keep-recent`, `--reserve`, `--max-source-chars`,
/// `--max-calls`), typed. Each given one wins over every settings layer, a model's
/// `compaction.modelOverrides` entry included, and applies to every model of the `models` section:
/// what a person types for one run means that run.
struct budget_flags
{
    std::optional<std::int64_t> keep_recent_tokens;
    std::optional<std::int64_t> reserve_tokens;
    std::optional<std::int64_t> summary_max_source_chars;
    std::optional<std::int64_t> summary_max_calls;
};

/// What a host reads besides the environment: its settings sources and its command-line flags.
struct host_inputs
{
    /// The settings files and programmatic `overrides`. `model_key` is not read: the key is the
    /// resolved model's (compaction::override_key).
    settings_sources sources;
    /// The budget flags, applied once the settings are resolved for the model.
    budget_flags flags;
    /// Flags over the settings' `"provider"` section, key by key (`name`, `model`, `baseUrl`).
    boost::json::object provider_flags;
    /// A model named without a provider (a dry run such as `agentctx plan --model PROVIDER/ID`):
    /// it is the model, its key selects the overrides, and no provider is read.
    std::optional<compaction::model_ref> model;
    /// A context window given on the command line: wins over the provider's.
    std::optional<std::int64_t> context_window;
    /// The environment (provider_from_environment, AGENTCTX_OFFLINE_DELAY_MS); empty = std::getenv.
    std::function<const char*(const char*)> getenv;
};

/// Makes one session's summarizer on the executor the session runs on.
using summarizer_factory =
    std::function<std::shared_ptr<providers::summarizer>(boost::asio::any_io_executor)>;

/// The window a model has when neither the provider nor a flag names one.
inline constexpr std::int64_t default_context_window = 200000;

/// What a host serves with: the settings as read and resolved, the provider, the model.
struct host_config
{
    /// `compaction` is resolved for `model`'s `compaction.modelOverrides` entry.
    loaded_settings settings;
    /// nullopt: no provider is configured (the offline summarizer).
    std::optional<providers::provider_config> provider;
    /// The provider's name, model, context window (200000 when it names none) and output cap;
    /// `offline`/`offline` without a provider.
    model_identity model{"offline", "offline", default_context_window, 0};
    /// The settings' `models` section (merged like the others): the models a session may be
    /// switched to, `{"<provider>/<modelId>": {"contextWindow": N, "maxOutputTokens": M}}`.
    std::vector<model_identity> models;
    /// `AGENTCTX_OFFLINE_DELAY_MS`: the offline summarizer answers after this long (a slow model,
    /// to watch the progress and try an interruption).
    std::chrono::milliseconds offline_delay{0};
    /// The summarizer choice: empty = an http_summarizer of its own per session for `provider`,
    /// else the offline summarizer after `offline_delay` (summarizer_for). A host sets it to share
    /// HTTP clients between sessions; a test, to script the summaries.
    summarizer_factory make_summarizer;
};

/// Reads the settings layers, resolves the provider from the merged `"provider"` section, the
/// flags and the environment, then resolves the compaction settings for that model's
/// `modelOverrides` key and applies the budget flags over them. Errors: `invalid_settings` (a file or field,
/// named in `diag`, e.g. `models.openai/gpt-4.1.contextWindow`), the providers' `not_configured` (an unknown
/// provider, a hosted one without its key).
result<host_config> load_host_config(const host_inputs& in, diagnostics& diag);

/// The default summarizer choice of `h` on `ex`: an http_summarizer for `h.provider` (logging to
/// `logger`), else the offline summarizer after `h.offline_delay`.
std::shared_ptr<providers::summarizer> summarizer_for(
    const host_config& h, boost::asio::any_io_executor ex, std::shared_ptr<spdlog::logger> logger = nullptr
);

/// One session's configuration, the same for every host: the compaction settings, the model and
/// the models it may switch to, redaction, pins, required entries, jobs, `logger`, and the
/// summarizer made on `ex` by `h.make_summarizer` (else summarizer_for).
session_config make_session_config(
    const host_config& h, boost::asio::any_io_executor ex, std::shared_ptr<spdlog::logger> logger = nullptr
);

}  // namespace agentctx::runtime
