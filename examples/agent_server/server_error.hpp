// The agent server's own error codes (the runtime's and the stores' keep their categories).
#pragma once

#include <boost/system/error_code.hpp>

#include <string>
#include <type_traits>

namespace agentctx::server {

enum class errc
{
    too_many_open_sessions = 1,  ///< a session must be opened and every open one is in use
    out_of_descriptors,          ///< the process ran out of descriptors opening a session
};

namespace detail {

class server_category final : public boost::system::error_category
{
public:
    const char* name() const noexcept override { return "agentctx.server"; }
    std::string message(int ev) const override
    {
        switch (static_cast<errc>(ev))
        {
        case errc::too_many_open_sessions:
            return "too_many_open_sessions";
        case errc::out_of_descriptors:
            return "out_of_descriptors";
        }
        return "unknown";
    }
};

}  // namespace detail

inline const boost::system::error_category& error_category() noexcept
{
    static const detail::server_category c;
    return c;
}

inline boost::system::error_code make_error_code(errc e) noexcept
{
    return {static_cast<int>(e), error_category()};
}

}  // namespace agentctx::server

template <>
struct boost::system::is_error_code_enum<agentctx::server::errc> : std::true_type
{};
