// What stops a session's work in flight: the close flag, the running turn's abort, a clearing's wait.
#pragma once

#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/cancellation_type.hpp>

namespace agentctx::runtime::detail {

/**
 * @brief The session's interrupts: closed for good, the host's running turn aborted (a manual
 * compaction interrupts it), and a clearing waiting for the host's evidence store. On the strand.
 */
class interrupts
{
public:
    bool closed() const noexcept { return closed_; }
    /// Closed: every later operation is refused (the session then aborts what runs).
    void close() noexcept { closed_ = true; }
    /// The slot the host's turn binds (session::turn_abort_slot).
    boost::asio::cancellation_slot turn_slot() { return turn_.slot(); }
    void abort_turn() { turn_.emit(boost::asio::cancellation_type::terminal); }

    /// A clearing waits for the host's evidence store: no second one starts meanwhile.
    bool clearing_asking() const noexcept { return clearing_asking_; }
    void set_clearing_asking(bool v) noexcept { clearing_asking_ = v; }
    boost::asio::cancellation_slot clearing_slot() { return clearing_.slot(); }
    void abort_clearing() { clearing_.emit(boost::asio::cancellation_type::terminal); }

    /// Read by a compaction run (run_context) while it runs.
    const bool& closed_flag() const noexcept { return closed_; }

private:
    bool closed_ = false;
    bool clearing_asking_ = false;
    boost::asio::cancellation_signal turn_;
    boost::asio::cancellation_signal clearing_;
};

}  // namespace agentctx::runtime::detail
