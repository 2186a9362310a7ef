// The providers module's error_category.
#include <agentctx/providers/error.hpp>

#include <agentctx/compaction/error_category.hpp>

namespace agentctx::providers {

const char* to_string(errc e) noexcept
{
    switch (e)
    {
    case errc::context_overflow:
        return "context_overflow";
    case errc::rate_limited:
        return "rate_limited";
    case errc::transient:
        return "transient";
    case errc::auth:
        return "auth";
    case errc::invalid_request:
        return "invalid_request";
    case errc::truncated:
        return "truncated";
    case errc::malformed_response:
        return "malformed_response";
    case errc::cancelled:
        return "cancelled";
    case errc::not_configured:
        return "not_configured";
    case errc::response_too_large:
        return "response_too_large";
    case errc::native_invalid:
        return "native_invalid";
    case errc::not_supported:
        return "not_supported";
    case errc::invalid_wire_message:
        return "invalid_wire_message";
    }
    return "unknown";
}

const boost::system::error_category& error_category() noexcept
{
    static const agentctx::detail::module_category<errc> instance{
        "agentctx.providers", &to_string, errc::cancelled};
    return instance;
}

}  // namespace agentctx::providers
