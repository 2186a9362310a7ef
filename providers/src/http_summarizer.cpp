// The HTTP provider: request, stream, classify, retry with backoff; the only coroutine TU here.
#include <agentctx/providers/http_summarizer.hpp>

#include "native_compaction.hpp"
#include "wire_format.hpp"

#include <agentctx/compaction/cancelled.hpp>
#include <agentctx/providers/provider_url.hpp>

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

#include <map>

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

// What the exchanges of one call share: the provider, whether it still exists, the call's
// backoff seed, the log, and where the last failure is kept for last_failure().
struct call_context
{
    http_summarizer& self;
    std::shared_ptr<bool> alive;
    std::uint64_t seed;
    std::shared_ptr<spdlog::logger> log;
    diagnostics& last_failure;
};

// One request/response exchange under the provider's retry policy (rate_limited and transient
// retried with backoff, honouring Retry-After up to max_retry_wait). `build` makes each attempt's
// request; `accept` turns a 2xx response into success or a failure code, filling `diag`.
struct exchange_result
{
    error_code ec;  ///< operation_aborted when cancelled
    diagnostics diag;
};

using accept_fn = std::function<error_code(const http_response&, diagnostics&)>;

std::string failure_detail(const diagnostics& d)
{
    return d.message + ", " + std::to_string(d.attempts) + " attempt(s)";
}

// What one attempt came to: the transport's error, a redirect, an HTTP error, or what `accept`
// makes of a 2xx response (empty: success).
error_code attempt_failure(
    const provider_config& cfg,
    error_code ec,
    const http_response& resp,
    const accept_fn& accept,
    int attempt,
    diagnostics& diag
)
{
    if (ec == make_error_code(errc::response_too_large))
    {
        diag.message =
            "the response exceeded the cap of " + std::to_string(cfg.max_response_bytes) + " bytes";
        return ec;
    }
    if (ec)
    {
        diag.message = "the connection failed or stalled";
        return ec;
    }
    if (resp.status >= 300 && resp.status < 400)
    {
        // Redirects are not followed (the key must not travel elsewhere): a 3xx is a misconfiguration.
        diag.message = "the provider answered with a redirect (HTTP " + std::to_string(resp.status) +
                       "), which is not followed; check the base URL";
        return make_error_code(errc::invalid_request);
    }
    if (resp.status >= 400)
        return classify_error(resp.status, resp.body, diag);
    const error_code failure = accept(resp, diag);
    diag.attempts = attempt;
    return failure;
}

// Whether a failed attempt is tried again, and after how long.
struct retry_plan
{
    bool retry = false;
    std::chrono::milliseconds delay{0};
};

// The retry policy for `failure`: a Retry-After over max_retry_wait turns it into a final
// rate_limited (rewriting `failure` and `diag`).
retry_plan plan_retry(
    const provider_config& cfg,
    const http_response& resp,
    int attempt,
    std::uint64_t seed,
    error_code& failure,
    diagnostics& diag
)
{
    const bool retryable =
        failure == make_error_code(errc::rate_limited) || failure == make_error_code(errc::transient);
    const auto advised = retryable ? parse_retry_after(resp.header("retry-after")) : std::nullopt;
    const bool wait_too_long = advised && *advised > cfg.max_retry_wait;
    if (wait_too_long)
    {
        failure = make_error_code(errc::rate_limited);
        diag.message = "the provider asked to wait " + std::to_string(advised->count() / 1000) +
                       " s before retrying (Retry-After), more than the maximum of " +
                       std::to_string(cfg.max_retry_wait.count() / 1000) + " s; not retried";
    }
    if (!retryable || wait_too_long || attempt > cfg.max_retries)
        return {};
    return {true, advised.value_or(backoff_delay(cfg, attempt, seed))};
}

asio::awaitable<exchange_result> exchange(
    const call_context& call,
    std::string_view what,
    const std::function<http_request()>& build,
    const accept_fn& accept
)
{
    const provider_config& cfg = call.self.config();
    const auto& log = call.log;
    // Cancellation is checked explicitly after every wait: a cancelled coroutine must complete
    // with operation_aborted, never throw at its next co_await.
    co_await asio::this_coro::throw_if_cancelled(false);
    auto cancelled = [&](const asio::cancellation_state& cs) {
        return !*call.alive || cs.cancelled() != asio::cancellation_type::none;
    };
    const exchange_result aborted{asio::error::operation_aborted, {}};
    diagnostics diag;
    for (int attempt = 1;; ++attempt)
    {
        diag = {};
        diag.attempts = attempt;
        http_request req = build();
        log->debug(
            "model request ({}) provider={} model={} url={} headers=[{}] attempt={}",
            what,
            cfg.name,
            cfg.model,
            mask_url(req.url),
            redacted_headers(req),
            attempt
        );
        auto [ec, resp] =
            co_await call.self.client().async_request(std::move(req), asio::as_tuple(asio::use_awaitable));
        if (ec == asio::error::operation_aborted || cancelled(co_await asio::this_coro::cancellation_state))
            co_return aborted;
        error_code failure = attempt_failure(cfg, ec, resp, accept, attempt, diag);
        diag.http_status = resp.status;
        if (!failure)
            co_return exchange_result{error_code{}, diag};
        const retry_plan next = plan_retry(cfg, resp, attempt, call.seed, failure, diag);
        call.last_failure = diag;
        if (!next.retry)
        {
            log->warn(
                "model request ({}) failed provider={} code={} status={} attempts={}: {}",
                what,
                cfg.name,
                failure.message(),
                diag.http_status,
                attempt,
                diag.message
            );
            co_return exchange_result{failure, diag};
        }
        log->info(
            "model request ({}) retry provider={} code={} status={} in {} ms (attempt {} of {})",
            what,
            cfg.name,
            failure.message(),
            diag.http_status,
            next.delay.count(),
            attempt,
            cfg.max_retries + 1
        );
        asio::steady_timer timer(co_await asio::this_coro::executor, next.delay);
        auto [tec] = co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
        if (tec || cancelled(co_await asio::this_coro::cancellation_state))
            co_return aborted;  // cancellation interrupts the sleep
    }
}

bool is_event_stream(const http_response& resp)
{
    return resp.header("content-type").find("text/event-stream") != std::string_view::npos;
}

// A finished event stream: its error event, an early end (transient: retried), or success.
template <class Accumulator>
error_code stream_outcome(const Accumulator& acc, diagnostics& diag, std::string_view what)
{
    if (acc.failed())
    {
        diag = acc.error_detail();
        return acc.error();
    }
    if (!acc.complete())
    {
        diag.message = "the event stream ended before the " + std::string(what) + " was complete";
        return make_error_code(errc::transient);
    }
    return {};
}

using run_result = std::pair<error_code, compaction::summary_output>;

asio::awaitable<run_result> run(
    call_context call,
    compaction::summary_prompt prompt,
    std::function<void(std::size_t)> progress,
    compaction::usage& last_usage
)
{
    const provider_config& cfg = call.self.config();
    std::shared_ptr<stream_accumulator> acc;
    model_reply reply;
    const auto build = [&] {
        http_request req = build_request(cfg, prompt);
        acc = std::make_shared<stream_accumulator>(cfg.format);
        if (cfg.stream)
            req.on_data = [acc = acc, progress](std::string_view chunk) {
                acc->feed(chunk);
                if (progress)
                    progress(acc->received_chars());
            };
        return req;
    };
    const auto accept = [&](const http_response& resp, diagnostics& diag) -> error_code {
        if (is_event_stream(resp))
        {
            if (auto ec = stream_outcome(*acc, diag, "reply"))
                return ec;
            reply = acc->reply();
            return {};
        }
        auto r = parse_response(cfg.format, resp.body, diag);
        if (!r)
            return r.error();
        reply = std::move(*r);
        return {};
    };
    auto r = co_await exchange(call, "summary", build, accept);
    if (r.ec)
    {
        compaction::summary_output failed;
        if (r.ec != asio::error::operation_aborted)
            failed.failure_detail = failure_detail(r.diag);
        co_return run_result{r.ec, std::move(failed)};
    }
    last_usage = reply.usage;
    call.log->debug(
        "model reply provider={} status={} stop={} output_tokens={} attempt={}",
        cfg.name,
        r.diag.http_status,
        static_cast<int>(reply.output.stop),
        reply.usage.output,
        r.diag.attempts
    );
    co_return run_result{error_code{}, std::move(reply.output)};
}

using count_result = std::pair<error_code, std::int64_t>;

// `build` makes the count request (of a summary prompt, or of a native compaction request).
asio::awaitable<count_result> count(call_context call, std::function<http_request()> build)
{
    const provider_config& cfg = call.self.config();
    std::int64_t tokens = 0;
    const auto accept = [&](const http_response& resp, diagnostics& diag) -> error_code {
        auto n = parse_count_response(cfg.format, resp.body, diag);
        if (!n)
            return n.error();
        tokens = *n;
        return {};
    };
    auto r = co_await exchange(call, "count", build, accept);
    co_return count_result{r.ec, tokens};
}

using native_result = std::pair<error_code, native_reply>;

native_result native_failure(error_code ec, std::string detail)
{
    native_reply r;
    r.failure_detail = std::move(detail);
    return {ec, std::move(r)};
}

// Anthropic `auto`: whether the models API says `model` supports compact_20260112 (asked once).
asio::awaitable<std::pair<error_code, std::string>> probe_support(
    const call_context& call, const std::string& model, std::map<std::string, bool>& probed
)
{
    const provider_config& cfg = call.self.config();
    if (cfg.format != wire_format::anthropic)
        co_return std::pair{error_code{}, std::string()};  // OpenAI has no capability endpoint: as configured
    if (!probed.contains(model))
    {
        bool supported = false;
        const auto accept = [&](const http_response& resp, diagnostics& diag) -> error_code {
            auto s = parse_model_compaction_support(resp.body, diag);
            if (!s)
                return s.error();
            supported = *s;
            return {};
        };
        auto r = co_await exchange(
            call, "models", [&] { return build_model_request(cfg, model); }, accept
        );
        if (r.ec)
            co_return std::pair{r.ec, "the models API did not answer: " + failure_detail(r.diag)};
        probed[model] = supported;
    }
    if (!probed[model])
        co_return std::pair{
            make_error_code(errc::not_supported),
            "the models API says " + model + " does not support compact_20260112"};
    co_return std::pair{error_code{}, std::string()};
}

asio::awaitable<native_result> native(
    call_context call, native_request request, std::map<std::string, bool>& probed
)
{
    const provider_config& cfg = call.self.config();
    const std::string model = request.model.empty() ? cfg.model : request.model;
    if (cfg.native == native_mode::probe)
    {
        auto [ec, why] = co_await probe_support(call, model, probed);
        if (ec)
            co_return native_failure(ec, std::move(why));
    }
    std::shared_ptr<native_stream_accumulator> acc;
    native_reply reply;
    provider_config form = cfg;  // OpenAI "auto": inline, then the compact endpoint once if refused
    const auto build = [&] {
        http_request req = build_native_request(form, request);
        acc = std::make_shared<native_stream_accumulator>();
        if (cfg.stream && cfg.format == wire_format::anthropic)
            req.on_data = [acc = acc](std::string_view chunk) { acc->feed(chunk); };
        return req;
    };
    const auto accept = [&](const http_response& resp, diagnostics& diag) -> error_code {
        std::string streamed;
        if (is_event_stream(resp))
        {
            if (auto ec = stream_outcome(*acc, diag, "compaction"))
                return ec;
            streamed = acc->body();
        }
        const std::string_view body =
            streamed.empty() ? std::string_view(resp.body) : std::string_view(streamed);
        auto r = parse_native_response(cfg.format, body, model, diag);
        if (!r)
        {
            reply.usage = native_response_usage(cfg.format, body);  // billed though rejected
            return r.error();
        }
        reply = std::move(*r);
        return {};
    };
    auto r = co_await exchange(call, "native compaction", build, accept);
    if (r.ec == make_error_code(errc::invalid_request) && cfg.format == wire_format::openai &&
        cfg.openai_form == openai_native_form::automatic)
    {
        call.log->info("inline compaction refused ({}); asking the compact endpoint", failure_detail(r.diag));
        form.openai_form = openai_native_form::compact_endpoint;
        r = co_await exchange(call, "native compaction", build, accept);
    }
    if (r.ec)
    {
        auto failed = native_failure(
            r.ec, r.ec == asio::error::operation_aborted ? std::string() : failure_detail(r.diag)
        );
        failed.second.usage = reply.usage;
        co_return failed;
    }
    co_return native_result{error_code{}, std::move(reply)};
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

http_summarizer::http_summarizer(
    asio::any_io_executor ex,
    provider_config cfg,
    std::shared_ptr<spdlog::logger> logger,
    std::shared_ptr<http_client> client
)
    : strand_(asio::make_strand(ex)), cfg_(std::move(cfg)),
      logger_(logger ? std::move(logger) : spdlog::default_logger()),
      client_(client ? std::move(client) : std::make_shared<http_client>(strand_))
{}

http_summarizer::~http_summarizer()
{
    *alive_ = false;
}

namespace {

// Runs `op` on the strand; its result goes to the handler through the strand, never inline.
template <class Signature, class Result, class Handler>
void spawn_on(asio::strand<asio::any_io_executor> strand, asio::awaitable<Result> op, Handler handler)
{
    auto slot = asio::get_associated_cancellation_slot(handler);
    auto done = [h = std::move(handler), ex = strand](std::exception_ptr ep, Result r) mutable {
        if (ep)
            r = Result{from_exception(ep), {}};
        asio::post(ex, asio::append(std::move(h), r.first, std::move(r.second)));
    };
    asio::co_spawn(strand, std::move(op), asio::bind_cancellation_slot(slot, std::move(done)));
}

}  // namespace

void http_summarizer::summarize_impl(
    compaction::summary_prompt prompt, asio::any_completion_handler<summarize_signature> handler
)
{
    spawn_on<summarize_signature>(
        strand_,
        run(call_context{*this, alive_, ++calls_, logger_, last_failure_},
            std::move(prompt),
            progress_,
            last_usage_),
        std::move(handler)
    );
}

summarizer_capabilities http_summarizer::capabilities() const
{
    return {
        cfg_.exact_counting,
        cfg_.native != native_mode::off,
        cfg_.format == wire_format::anthropic ? anthropic_min_compaction_trigger : 0,
        cfg_.format,
        cfg_.name,
        cfg_.model,
        false,
        cfg_.format == wire_format::openai && cfg_.native != native_mode::off &&
            cfg_.openai_form != openai_native_form::compact_endpoint};
}

void http_summarizer::count_impl(
    compaction::summary_prompt prompt, asio::any_completion_handler<count_signature> handler
)
{
    if (!cfg_.exact_counting)
        return summarizer::count_impl(std::move(prompt), std::move(handler));
    auto build = [cfg = &cfg_, prompt = std::move(prompt)] { return build_count_request(*cfg, prompt); };
    spawn_on<count_signature>(
        strand_,
        count(call_context{*this, alive_, ++calls_, logger_, last_failure_}, std::move(build)),
        std::move(handler)
    );
}

void http_summarizer::count_native_impl(
    native_request request, asio::any_completion_handler<count_signature> handler
)
{
    if (!cfg_.exact_counting)
        return summarizer::count_native_impl(std::move(request), std::move(handler));
    auto build = [cfg = &cfg_, request = std::move(request)] {
        return build_native_count_request(*cfg, request);
    };
    spawn_on<count_signature>(
        strand_,
        count(call_context{*this, alive_, ++calls_, logger_, last_failure_}, std::move(build)),
        std::move(handler)
    );
}

void http_summarizer::native_impl(
    native_request request, asio::any_completion_handler<native_signature> handler
)
{
    if (cfg_.native == native_mode::off)
        return summarizer::native_impl(std::move(request), std::move(handler));
    spawn_on<native_signature>(
        strand_,
        native(
            call_context{*this, alive_, ++calls_, logger_, last_failure_}, std::move(request), native_probed_
        ),
        std::move(handler)
    );
}

}  // namespace agentctx::providers
