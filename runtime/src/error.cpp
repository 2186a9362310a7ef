// The runtime module's error_category.
#include <agentctx/runtime/error.hpp>

#include <string>

namespace agentctx::runtime {

const char* to_string(errc e) noexcept
{
    switch (e)
    {
    case errc::session_locked: return "session_locked";
    case errc::io_error: return "io_error";
    case errc::already_exists: return "already_exists";
    case errc::not_found: return "not_found";
    case errc::read_only: return "read_only";
    case errc::no_header: return "no_header";
    }
    return "unknown";
}

namespace {

class category final : public boost::system::error_category
{
public:
    const char* name() const noexcept override { return "agentctx.runtime"; }
    std::string message(int ev) const override { return to_string(static_cast<errc>(ev)); }
};

}  // namespace

const boost::system::error_category& error_category() noexcept
{
    static const category instance;
    return instance;
}

}  // namespace agentctx::runtime
