// An HTTP client on Asio: libcurl's multi interface driven by socket waits and one timer.
#pragma once

#include <agentctx/providers/async_call.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace agentctx::providers {

struct http_request
{
    std::string method = "POST";
    std::string url;
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    /// The body, shared instead of owned: when set it is sent and `body` is ignored. The
    /// transfer keeps it alive; nothing copies it, so the same bytes can go out many times
    /// (retries, fan-out, benchmarks) without a copy per request.
    std::shared_ptr<const std::string> shared_body;
    /// Connect timeout. There is no total deadline: a healthy generation may take minutes.
    std::chrono::milliseconds connect_timeout{10'000};
    /// Low-speed (idle) timeout: fail when fewer than `low_speed_bytes` arrive in this long.
    /// Zero (the default): no read deadline; a silent generation or a long prefill may take
    /// minutes, and TCP keep-alive plus the caller's cancellation end a dead transfer.
    std::chrono::seconds idle_timeout{0};
    long low_speed_bytes = 1;
    /// TCP keep-alive: idle time before the first probe and between probes. It finds a dead
    /// peer on a silent connection without putting a deadline on a live one.
    std::chrono::seconds keepalive_interval{30};
    /// Cap on the response: header bytes plus the body *after* decompression. Exceeding it
    /// aborts the transfer with `response_too_large` (also when Content-Length announces more).
    std::size_t max_response_bytes = std::size_t{16} << 20;
    /// Called with each body chunk as it arrives (for server-sent events). Runs on the client's
    /// executor; must not block.
    std::function<void(std::string_view)> on_data;
};

/// The deadlines a transfer of `http_request` runs under, exactly as they are given to libcurl
/// (its option values: 0 = none). There is never a total deadline (`total_timeout_ms` is 0).
struct transfer_deadlines
{
    long connect_timeout_ms = 0;  ///< CURLOPT_CONNECTTIMEOUT_MS
    long total_timeout_ms = 0;    ///< CURLOPT_TIMEOUT_MS: always 0
    long low_speed_time = 0;      ///< CURLOPT_LOW_SPEED_TIME (seconds)
    long low_speed_limit = 0;     ///< CURLOPT_LOW_SPEED_LIMIT (bytes per second)
    long tcp_keepalive = 0;       ///< CURLOPT_TCP_KEEPALIVE: always 1
    long keepalive_idle = 0;      ///< CURLOPT_TCP_KEEPIDLE (seconds)
    long keepalive_interval = 0;  ///< CURLOPT_TCP_KEEPINTVL (seconds)
    friend bool operator==(const transfer_deadlines&, const transfer_deadlines&) = default;
};

transfer_deadlines deadlines_of(const http_request& r) noexcept;

struct http_response
{
    long status = 0;
    std::vector<std::pair<std::string, std::string>> headers;  ///< names lowercased
    std::string body;

    /// The first header with this (lowercase) name, or "".
    std::string_view header(std::string_view name) const;
};

using http_signature = void(boost::system::error_code, http_response);

/**
 * @brief HTTP/1.1 and HTTP/2 (when offered) with keep-alive, TLS through libcurl's OpenSSL,
 * proxies from the usual environment variables. One curl multi handle per client; all of its
 * work runs on the client's strand, with no extra thread and no polling loop. One client serves
 * any number of callers on any executors (each completion runs on its caller's associated
 * executor), so a server shares one per io thread (see http_client_pool) and its connection
 * pool with it.
 *
 * Transport failures complete with a providers errc: `transient` (connect, reset, timeout, TLS),
 * `invalid_request` (a malformed URL or a scheme other than http/https) or `response_too_large`
 * (see http_request::max_response_bytes). An HTTP error status is not a failure here: the
 * response carries it, and the caller classifies it. Redirects are never followed: a 3xx
 * arrives as the response.
 *
 * @par Object lifetimes
 * Destroy the client on its executor's thread, or once nothing runs on its executor; outstanding
 * requests complete with `operation_aborted`. Handlers never outlive what they refer to (weak
 * references only).
 *
 * `http_request::on_data` runs on the client's strand, not the caller's: a caller waiting for
 * the completion sees everything it did (the completion is posted after it).
 */
class http_client
{
public:
    explicit http_client(boost::asio::any_io_executor ex);
    ~http_client();
    http_client(const http_client&) = delete;
    http_client& operator=(const http_client&) = delete;

    /**
     * @brief Performs one request.
     * @par Per-operation cancellation
     * `terminal` and `partial`: the transfer is removed at once (its connection closed) and the
     * operation completes with `boost::asio::error::operation_aborted`; a body that is being
     * delivered stops at the next chunk, even within one long burst of socket reads. `total`: honoured only
     * before any byte of the request can have been sent; otherwise the request completes.
     */
    template <boost::asio::completion_token_for<http_signature> CompletionToken>
    auto async_request(http_request req, CompletionToken&& token)
    {
        return ::agentctx::detail::async_call<http_signature>(
            token, this, &http_client::request_impl, std::move(req)
        );
    }

    /// Counters for tests: transfers in flight, sockets open.
    std::size_t live_transfers() const;
    std::size_t live_sockets() const;
    /// curl multi handles alive in this process (one per client).
    static std::size_t live_multi_handles() noexcept;

    struct impl;

private:
    void request_impl(http_request req, boost::asio::any_completion_handler<http_signature> handler);
    std::shared_ptr<impl> impl_;
};

}  // namespace agentctx::providers
