// One cancellation vocabulary for every module: the error condition `errc_condition::cancelled`.
#pragma once

#include <boost/system/error_code.hpp>
#include <boost/system/error_condition.hpp>

#include <type_traits>

namespace agentctx {

/**
 * @brief Error conditions shared by the compaction, providers and runtime modules.
 *
 * `cancelled` compares equal to every code that means "the caller (or a shutdown) stopped the
 * operation": `boost::asio::error::operation_aborted` (ECANCELED), `providers::errc::cancelled`
 * and `runtime::errc::cancelled`. Test cancellation with
 * `ec == agentctx::errc_condition::cancelled`, never with one exact code.
 */
enum class errc_condition
{
    cancelled = 1,
};

const boost::system::error_category& condition_category() noexcept;

inline boost::system::error_condition make_error_condition(errc_condition e) noexcept
{
    return {static_cast<int>(e), condition_category()};
}

/// True when `ec` means the operation was cancelled.
inline bool is_cancelled(const boost::system::error_code& ec) noexcept
{
    return ec == make_error_condition(errc_condition::cancelled);
}

}  // namespace agentctx

template <>
struct boost::system::is_error_condition_enum<agentctx::errc_condition> : std::true_type
{};
