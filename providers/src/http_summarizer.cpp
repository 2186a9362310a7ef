// The HTTP provider: request, stream, classify, retry with backoff; the only coroutine TU here.
#include <agentctx/providers/http_summarizer.hpp>

#include <agentctx/compaction/cancelled.hpp>

#include <boost/asio/append.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <spdlog/spdlog.h>

namespace agentctx::providers {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

std::string redacted_headers(const http_request& r)
{
    std::string s;
    for (const auto& [k, v] : r.headers)
    {
        if (!s.empty())
            s += ", ";
        s += k + ": " + (k == "authorization" || k == "x-api-key" ? std::string("<redacted>") : v);
    }
    return s;
}

using run_result = std::pair<error_code, compaction::summary_output>;

asio::awaitable<run_result> run(
    http_summarizer& self,
    std::shared_ptr<bool> alive,
    compaction::summary_prompt prompt,
    std::uint64_t seed,
    std::function<void(std::size_t)> progress,
    std::shared_ptr<spdlog::logger> log,
    diagnostics& last_failure,
    compaction::usage& last_usage
)
{
    const provider_config& cfg = self.config();
    // Cancellation is checked explicitly after every wait: a cancelled coroutine must complete
    // with operation_aborted, never throw at its next co_await.
    co_await asio::this_coro::throw_if_cancelled(false);
    auto cancelled = [&](const asio::cancellation_state& cs) {
        return !*alive || cs.cancelled() != asio::cancellation_type::none;
    };
    const run_result aborted{asio::error::operation_aborted, {}};
    diagnostics diag;
    for (int attempt = 1;; ++attempt)
    {
        diag = {};
        diag.attempts = attempt;
        http_request req = build_request(cfg, prompt);
        auto acc = std::make_shared<stream_accumulator>(cfg.format);
        if (cfg.stream)
            req.on_data = [acc, progress](std::string_view chunk) {
                acc->feed(chunk);
                if (progress)
                    progress(acc->received_chars());
            };
        log->debug("model request provider={} model={} url={} headers=[{}] attempt={}", cfg.name, cfg.model, req.url,
                   redacted_headers(req), attempt);
        auto [ec, resp] = co_await self.client().async_request(std::move(req), asio::as_tuple(asio::use_awaitable));
        if (ec == asio::error::operation_aborted || cancelled(co_await asio::this_coro::cancellation_state))
            co_return aborted;
        error_code failure;
        model_reply reply;
        const bool event_stream = resp.header("content-type").find("text/event-stream") != std::string_view::npos;
        if (ec == make_error_code(errc::response_too_large))
        {
            failure = ec;
            diag.message = "the response exceeded the cap of " + std::to_string(cfg.max_response_bytes) + " bytes";
        }
        else if (ec)
        {
            failure = ec;
            diag.message = "the connection failed or stalled";
        }
        else if (resp.status >= 300 && resp.status < 400)
        {
            // Redirects are not followed (the key must not travel elsewhere): a 3xx is a misconfiguration.
            failure = make_error_code(errc::invalid_request);
            diag.message = "the provider answered with a redirect (HTTP " + std::to_string(resp.status) +
                           "), which is not followed; check the base URL";
        }
        else if (resp.status >= 400)
            failure = classify_error(resp.status, resp.body, diag);
        else if (event_stream)
        {
            if (acc->failed())
            {
                failure = acc->error();
                diag = acc->error_detail();
                diag.attempts = attempt;
            }
            else if (!acc->complete())
            {
                failure = make_error_code(errc::transient);
                diag.message = "the event stream ended before the reply was complete";
            }
            else
                reply = acc->reply();
        }
        else
        {
            auto r = parse_response(cfg.format, resp.body, diag);
            if (!r)
                failure = r.error();
            else
                reply = std::move(*r);
        }
        diag.http_status = resp.status;
        if (!failure)
        {
            last_usage = reply.usage;
            log->debug("model reply provider={} status={} stop={} output_tokens={} attempt={}", cfg.name, resp.status,
                       static_cast<int>(reply.output.stop), reply.usage.output, attempt);
            co_return run_result{error_code{}, std::move(reply.output)};
        }
        const bool retryable = failure == make_error_code(errc::rate_limited) || failure == make_error_code(errc::transient);
        const auto advised = retryable ? parse_retry_after(resp.header("retry-after")) : std::nullopt;
        const bool wait_too_long = advised && *advised > cfg.max_retry_wait;
        if (wait_too_long)
        {
            failure = make_error_code(errc::rate_limited);
            diag.message = "the provider asked to wait " + std::to_string(advised->count() / 1000) +
                           " s before retrying (Retry-After), more than the maximum of " +
                           std::to_string(cfg.max_retry_wait.count() / 1000) + " s; not retried";
        }
        last_failure = diag;
        if (!retryable || wait_too_long || attempt > cfg.max_retries)
        {
            log->warn("model request failed provider={} code={} status={} attempts={}: {}", cfg.name, failure.message(),
                      diag.http_status, attempt, diag.message);
            compaction::summary_output failed;
            failed.failure_detail = diag.message + ", " + std::to_string(attempt) + " attempt(s)";
            co_return run_result{failure, std::move(failed)};
        }
        const auto delay = advised.value_or(backoff_delay(cfg, attempt, seed));
        log->info("model request retry provider={} code={} status={} in {} ms (attempt {} of {})", cfg.name,
                  failure.message(), diag.http_status, delay.count(), attempt, cfg.max_retries + 1);
        asio::steady_timer timer(co_await asio::this_coro::executor, delay);
        auto [tec] = co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
        if (tec || cancelled(co_await asio::this_coro::cancellation_state))
            co_return aborted;  // cancellation interrupts the sleep
    }
}

// A coroutine that still threw: a system_error keeps its code (cancellation stays
// operation_aborted); anything else is reported as a malformed response.
error_code from_exception(std::exception_ptr ep)
{
    try
    {
        std::rethrow_exception(ep);
    }
    catch (const boost::system::system_error& e)
    {
        return is_cancelled(e.code()) ? error_code(asio::error::operation_aborted) : e.code();
    }
    catch (...)
    {
        return make_error_code(errc::malformed_response);
    }
}

}  // namespace

http_summarizer::http_summarizer(asio::any_io_executor ex, provider_config cfg, std::shared_ptr<spdlog::logger> logger,
                                 std::shared_ptr<http_client> client)
    : strand_(asio::make_strand(ex)), cfg_(std::move(cfg)), logger_(logger ? std::move(logger) : spdlog::default_logger()),
      client_(client ? std::move(client) : std::make_shared<http_client>(strand_))
{
}

http_summarizer::~http_summarizer()
{
    *alive_ = false;
}

void http_summarizer::summarize_impl(
    compaction::summary_prompt prompt,
    asio::any_completion_handler<summarize_signature> handler
)
{
    auto slot = asio::get_associated_cancellation_slot(handler);
    auto done = [h = std::move(handler), ex = strand_](std::exception_ptr ep, run_result r) mutable {
        if (ep)
            r = {from_exception(ep), {}};
        asio::post(ex, asio::append(std::move(h), r.first, std::move(r.second)));
    };
    asio::co_spawn(
        strand_,
        run(*this, alive_, std::move(prompt), ++calls_, progress_, logger_, last_failure_, last_usage_),
        asio::bind_cancellation_slot(slot, std::move(done))
    );
}

compaction::result<std::optional<provider_config>> provider_from_environment(
    const boost::json::object* section,
    const std::function<const char*(const char*)>& getenv,
    diagnostics& diag
)
{
    auto env = [&](const char* n) -> std::string {
        const char* v = getenv(n);
        return v ? std::string(v) : std::string();
    };
    auto setting = [&](const char* key) -> std::string {
        if (!section)
            return {};
        const auto* v = section->if_contains(key);
        return v && v->is_string() ? std::string(v->get_string()) : std::string();
    };
    std::string name = setting("name");
    if (name.empty())
        name = env("AGENTCTX_PROVIDER");
    if (name.empty())
    {
        if (!env("ANTHROPIC_API_KEY").empty())
            name = "anthropic";
        else if (!env("OPENAI_API_KEY").empty() || !env("OPENAI_BASE_URL").empty())
            name = "openai";
        else
            return std::optional<provider_config>{};
    }
    if (name == "offline")
        return std::optional<provider_config>{};
    provider_config c;
    c.name = name;
    const bool anthropic = name == "anthropic";
    const bool compatible = !anthropic && name != "openai";  // vllm, ollama, llamacpp, openai-compatible
    if (!anthropic && name != "openai" && name != "openai-compatible" && name != "vllm" && name != "ollama" && name != "llamacpp")
    {
        diag.message = "unknown provider '" + name + "' (offline, openai, anthropic, openai-compatible, vllm, ollama, llamacpp)";
        return make_error_code(errc::not_configured);
    }
    c.format = anthropic ? wire_format::anthropic : wire_format::openai;
    c.base_url = setting("baseUrl");
    if (c.base_url.empty())
        c.base_url = env(anthropic ? "ANTHROPIC_BASE_URL" : "OPENAI_BASE_URL");
    if (c.base_url.empty())
    {
        if (anthropic)
            c.base_url = "https://api.anthropic.com";
        else if (name == "openai")
            c.base_url = "https://api.openai.com/v1";
        else if (name == "ollama")
            c.base_url = "http://localhost:11434/v1";
        else if (name == "llamacpp")
            c.base_url = "http://localhost:8080/v1";
        else
            c.base_url = "http://localhost:8000/v1";
    }
    const std::string key_env = setting("apiKeyEnv").empty() ? (anthropic ? "ANTHROPIC_API_KEY" : "OPENAI_API_KEY") : setting("apiKeyEnv");
    c.api_key = env(key_env.c_str());
    c.model = setting("model");
    if (c.model.empty())
        c.model = env("AGENTCTX_MODEL");
    if (c.model.empty())
        c.model = env(anthropic ? "ANTHROPIC_MODEL" : "OPENAI_MODEL");
    if (c.model.empty())
        c.model = anthropic ? "claude-sonnet-4-5" : (name == "openai" ? "gpt-4.1-mini" : "default");
    if (section)
    {
        auto num = [&](const char* key, std::int64_t& out) {
            if (const auto* v = section->if_contains(key); v && v->is_number())
                out = v->to_number<std::int64_t>();
        };
        num("contextWindow", c.context_window);
        std::int64_t wait_ms = c.max_retry_wait.count();
        num("maxRetryWaitMs", wait_ms);
        c.max_retry_wait = std::chrono::milliseconds(std::max<std::int64_t>(wait_ms, 0));
        auto cap = static_cast<std::int64_t>(c.max_response_bytes);
        num("maxResponseBytes", cap);
        if (cap > 0)
            c.max_response_bytes = static_cast<std::size_t>(cap);
        num("maxOutputTokens", c.max_output_tokens);
        std::int64_t retries = c.max_retries;
        num("maxRetries", retries);
        c.max_retries = static_cast<int>(retries);
        if (const auto* v = section->if_contains("stream"); v && v->is_bool())
            c.stream = v->get_bool();
    }
    if (c.api_key.empty() && !compatible)
    {
        diag.message = "provider '" + name + "' needs an API key in $" + key_env;
        return make_error_code(errc::not_configured);
    }
    return std::optional<provider_config>(std::move(c));
}

}  // namespace agentctx::providers
