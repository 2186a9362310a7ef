// Everything needed to call one model, and how it is read from a settings section and the environment.
#pragma once

#include <agentctx/providers/error.hpp>
#include <agentctx/providers/provider_types.hpp>

#include <boost/json/object.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace agentctx::providers {

/// Whether native compaction is used (setting `nativeCompaction`): `off` (false, the default),
/// `on` (true: the configuration says the provider and model offer it), `probe` ("auto": ask
/// Anthropic's models API for `capabilities.context_management.compact_20260112.supported`).
enum class native_mode
{
    off,
    on,
    probe,
};

/// Which of OpenAI's native forms compacts (setting `native.openai`): `compact_endpoint`
/// (`"compact-endpoint"`, the default: `POST /responses/compact`), `inline_request` (`"inline"`: an
/// ordinary `POST /responses` with `context_management` and a final `compaction_trigger` item) or
/// `automatic` (`"auto"`: inline, and the compact endpoint when the inline request is refused).
enum class openai_native_form
{
    compact_endpoint,
    inline_request,
    automatic,
};

/// Everything needed to call one model. The API key is only ever put in a request header.
struct provider_config
{
    wire_format format = wire_format::openai;
    std::string name = "openai";  ///< for logs and compaction details
    std::string base_url;         ///< `https://api.openai.com/v1`, `https://api.anthropic.com`, ...
    std::string model;
    std::string api_key;
    std::int64_t context_window = 0;
    std::int64_t max_output_tokens = 0;
    bool stream = true;
    /// The provider counts input exactly (setting `countTokens`): portable summaries preflight the
    /// whole prefix with `count_tokens` / `responses/input_tokens` instead of the estimate.
    bool exact_counting = false;
    native_mode native = native_mode::off;
    /// Anthropic: the model takes the on-demand `compaction: {"type": "summarize"}` request
    /// parameter (setting `compactionParameter`), which compacts the whole request and returns the
    /// signed compaction block alone; native compaction then asks with it instead of the
    /// `compact_20260112` context-management edit (the default).
    bool compaction_parameter = false;
    openai_native_form openai_form = openai_native_form::compact_endpoint;
    /// The provider advertises `completion:auto_continue:v1` (setting `autoContinue`): every
    /// summary, count and native-compaction call says `auto_continue: false`, so that the
    /// provider never continues a summary on its own; a host's normal chat is not touched.
    bool auto_continue = false;
    int max_retries = 3;
    std::chrono::milliseconds base_delay{2000};  ///< backoff 2 s, 4 s, 8 s (+ jitter)
    std::chrono::milliseconds max_delay{60000};
    std::chrono::milliseconds connect_timeout{10000};
    /// An explicit opt-in for streams only (setting `idleTimeoutMs`, rounded up to whole
    /// seconds; 0 = off): no bytes for this long = stalled. Default 0: no call (summary, count,
    /// native; streamed or not) has a read or elapsed deadline, since a silent prefill or a long
    /// silent generation may take minutes; TCP keep-alive probes every `keepalive_interval` find
    /// a dead peer, and the caller's cancellation ends a call it no longer wants.
    std::chrono::seconds idle_timeout{0};
    std::chrono::seconds keepalive_interval{30};  ///< setting `keepAliveSeconds`
    /// The longest `Retry-After` honoured; a longer one fails at once with `rate_limited`.
    std::chrono::milliseconds max_retry_wait{60000};
    /// Cap on one response (headers + decoded body, event streams included): a summary is at
    /// most the output budget, so this is generous even with a stream's per-token overhead.
    std::size_t max_response_bytes = std::size_t{16} << 20;
    std::string anthropic_version = "2023-06-01";
};

/// Reads the provider from a settings section (`{"name", "model", "baseUrl", "apiKeyEnv",
/// "contextWindow", "maxOutputTokens", "stream", "maxRetries", "maxRetryWaitMs", "maxResponseBytes",
/// "countTokens", "nativeCompaction", "compactionParameter", "autoContinue", "idleTimeoutMs",
/// "keepAliveSeconds"}`) and the environment
/// (`AGENTCTX_PROVIDER`, `AGENTCTX_MODEL`, `OPENAI_API_KEY`, `OPENAI_BASE_URL`, `OPENAI_MODEL`,
/// `ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`, `ANTHROPIC_MODEL`). nullopt = nothing configured
/// (use the offline summarizer). A hosted provider without a key is `not_configured`.
compaction::result<std::optional<provider_config>> provider_from_environment(
    const boost::json::object* section,
    const std::function<const char*(const char*)>& getenv,
    diagnostics& diag
);

}  // namespace agentctx::providers
