// The HTTP model provider: a summarizer that calls OpenAI-style or Anthropic-style APIs.
#pragma once

#include <agentctx/providers/error.hpp>
#include <agentctx/providers/http_client.hpp>
#include <agentctx/providers/summarizer.hpp>
#include <agentctx/providers/provider_config.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/strand.hpp>
#include <boost/json/object.hpp>

#include <functional>
#include <map>
#include <memory>
#include <optional>

namespace spdlog {
class logger;
}

namespace agentctx::providers {

/**
 * @brief Summaries from a hosted or self-hosted model over HTTP (streaming by default).
 *
 * Failures complete with a providers errc: `context_overflow` (never retried), `rate_limited` and
 * `transient` (retried up to `max_retries` with exponential backoff and jitter, honouring
 * `Retry-After` up to `max_retry_wait`; a longer one fails at once with `rate_limited`), `auth`,
 * `invalid_request` (also a 3xx: redirects are never followed), `malformed_response`,
 * `response_too_large` (over `max_response_bytes`, decoded). A reply that stopped at the output
 * cap arrives as a summary_output with stop reason `length`, which the runtime rejects as
 * `summary_truncated`.
 *
 * @par Per-operation cancellation
 * `terminal`: the HTTP transfer, or a backoff sleep, stops at once; completes with
 * `boost::asio::error::operation_aborted` (as the summarizer interface promises).
 *
 * Optional capabilities (summarizer_capabilities), from the configuration: exact counting
 * (`countTokens`: async_count_tokens through `count_tokens` / `responses/input_tokens`) and
 * native compaction (`nativeCompaction`: async_compact_native through Anthropic's
 * `compact_20260112` edit or OpenAI's `responses/compact`; `auto` asks Anthropic's models API
 * once per model). Both use the same retry policy and error classification as summaries.
 *
 * The API key goes only into the request header. Logs (debug) show header names with the
 * `authorization` / `x-api-key` values redacted, never bodies.
 */
class http_summarizer final : public summarizer
{
public:
    /// `client`: the HTTP client to send with, shared with other summarizers (a server's
    /// http_client_pool); nullptr = a client of its own on this summarizer's strand. With a
    /// shared client, on_progress runs on the client's strand.
    http_summarizer(
        boost::asio::any_io_executor ex,
        provider_config cfg,
        std::shared_ptr<spdlog::logger> logger = nullptr,
        std::shared_ptr<http_client> client = nullptr
    );
    ~http_summarizer() override;

    std::string name() const override { return cfg_.name + ":" + cfg_.model; }
    /// `countTokens` and `nativeCompaction` from the configuration.
    summarizer_capabilities capabilities() const override;
    const provider_config& config() const noexcept { return cfg_; }

    /// Detail of the most recent failure (safe to show).
    diagnostics last_failure() const { return last_failure_; }
    /// Usage reported by the most recent successful reply.
    compaction::usage last_usage() const { return last_usage_; }

    /// Called on the provider's strand with the characters received so far while a reply streams.
    void on_progress(std::function<void(std::size_t)> f) { progress_ = std::move(f); }

    http_client& client() noexcept { return *client_; }

protected:
    void summarize_impl(
        compaction::summary_prompt prompt, boost::asio::any_completion_handler<summarize_signature> handler
    ) override;
    void count_impl(
        compaction::summary_prompt prompt, boost::asio::any_completion_handler<count_signature> handler
    ) override;
    void native_impl(native_request request, boost::asio::any_completion_handler<native_signature> handler)
        override;
    void count_native_impl(
        native_request request, boost::asio::any_completion_handler<count_signature> handler
    ) override;

private:
    struct state;
    boost::asio::strand<boost::asio::any_io_executor> strand_;
    provider_config cfg_;
    std::shared_ptr<spdlog::logger> logger_;
    std::shared_ptr<http_client> client_;
    diagnostics last_failure_;
    compaction::usage last_usage_;
    std::function<void(std::size_t)> progress_;
    std::uint64_t calls_ = 0;
    std::map<std::string, bool> native_probed_;  ///< models API answers, by model (strand only)
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace agentctx::providers
