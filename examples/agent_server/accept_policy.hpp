// What the accept loop does after a failed accept: the decision, without any I/O (testable).
#pragma once

#include <boost/asio/error.hpp>
#include <boost/system/error_code.hpp>

#include <cerrno>
#include <chrono>

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
    if (!acceptor_open || ec == boost::asio::error::operation_aborted || ec == boost::asio::error::bad_descriptor)
        return accept_action::stop;
    if (ec.category() == boost::system::system_category())
    {
        switch (ec.value())
        {
        case EMFILE:
        case ENFILE:
        case ENOBUFS:
        case ENOMEM: return accept_action::back_off;
        default: break;
        }
    }
    return accept_action::retry;
}

/// How long the loop waits after a back_off (descriptors are freed as connections time out).
inline constexpr std::chrono::milliseconds accept_back_off{100};

}  // namespace agentctx::server
