// What the accept loop decides: after a failed accept, and whether a new connection is admitted (no I/O).
#pragma once

#include <boost/asio/error.hpp>
#include <boost/system/error_code.hpp>

#include <cerrno>
#include <chrono>
#include <cstddef>

namespace agentctx::server {

enum class accept_action
{
    retry,     ///< a transient failure of one connection (aborted by the peer, interrupted): accept again
    back_off,  ///< out of descriptors or memory: wait a little, then accept again
    stop,      ///< the acceptor was closed (the server is stopping)
};

/// Classifies an accept error. Only a closed acceptor ends the loop: EMFILE/ENFILE (and
/// ENOBUFS/ENOMEM) back off so the process can close descriptors; everything else is retried.
inline accept_action classify_accept_error(const boost::system::error_code& ec, bool acceptor_open)
{
    if (!acceptor_open || ec == boost::asio::error::operation_aborted ||
        ec == boost::asio::error::bad_descriptor)
        return accept_action::stop;
    if (ec.category() == boost::system::system_category())
    {
        switch (ec.value())
        {
        case EMFILE:
        case ENFILE:
        case ENOBUFS:
        case ENOMEM:
            return accept_action::back_off;
        default:
            break;
        }
    }
    return accept_action::retry;
}

/// How long the loop waits after a back_off (descriptors are freed as connections time out).
inline constexpr std::chrono::milliseconds accept_back_off{100};

enum class admission
{
    accept,             ///< under the connection cap
    accept_after_idle,  ///< at the cap: close the longest-idle keep-alive connection, then accept
    refuse,             ///< at the cap and every connection is busy: 503 and close
};

/// Whether a new connection is admitted with `open` connections open (`idle` of them waiting for
/// their next request) under a cap of `limit` (0 = none). An idle connection costs nothing to
/// close (its client reconnects), so it makes room before a new client is refused.
inline admission admit_connection(std::size_t open, std::size_t limit, std::size_t idle)
{
    if (limit == 0 || open < limit)
        return admission::accept;
    return idle > 0 ? admission::accept_after_idle : admission::refuse;
}

}  // namespace agentctx::server
