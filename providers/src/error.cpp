// The providers module's error_category.
#include <agentctx/providers/error.hpp>

#include <agentctx/compaction/cancelled.hpp>

namespace agentctx::providers {

const char* to_string(errc e) noexcept
{
    switch (e)
    {
    case errc::context_overflow: return "context_overflow";
    case errc::rate_limited: return "rate_limited";
    case errc::transient: return "transient";
    case errc::auth: return "auth";
    case errc::invalid_request: return "invalid_request";
    case errc::truncated: return "truncated";
    case errc::malformed_response: return "malformed_response";
    case errc::cancelled: return "cancelled";
    case errc::not_configured: return "not_configured";
    case errc::response_too_large: return "response_too_large";
    }
    return "unknown";
}

namespace {

class category final : public boost::system::error_category
{
public:
    const char* name() const noexcept override { return "agentctx.providers"; }
    std::string message(int ev) const override { return to_string(static_cast<errc>(ev)); }

    // `cancelled` is the shared cancellation condition, as Asio's operation_aborted is.
    boost::system::error_condition default_error_condition(int ev) const noexcept override
    {
        if (static_cast<errc>(ev) == errc::cancelled)
            return make_error_condition(errc_condition::cancelled);
        return {ev, *this};
    }
};

}  // namespace

const boost::system::error_category& error_category() noexcept
{
    static const category instance;
    return instance;
}

}  // namespace agentctx::providers
