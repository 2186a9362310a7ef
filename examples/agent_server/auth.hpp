// Bearer-token check for the agent server: constant-time, so timing reveals nothing of the token.
#pragma once

#include <cstddef>
#include <string_view>

namespace agentctx::server {

/// Whether `a` equals `b`, in time that depends only on their lengths.
inline bool constant_time_equal(std::string_view a, std::string_view b) noexcept
{
    unsigned char diff = a.size() == b.size() ? 0 : 1;
    const std::size_t n = a.size() > b.size() ? a.size() : b.size();
    for (std::size_t i = 0; i < n; ++i)
    {
        const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
        const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
        diff |= static_cast<unsigned char>(x ^ y);
    }
    return diff == 0;
}

/// Whether an `Authorization` header value carries `token` as `Bearer <token>` (the scheme is
/// case-insensitive, RFC 7235).
inline bool bearer_matches(std::string_view header, std::string_view token) noexcept
{
    constexpr std::string_view scheme = "bearer ";
    if (header.size() < scheme.size())
        return false;
    for (std::size_t i = 0; i < scheme.size(); ++i)
        if ((header[i] | 0x20) != scheme[i])
            return false;
    return constant_time_equal(header.substr(scheme.size()), token);
}

}  // namespace agentctx::server
