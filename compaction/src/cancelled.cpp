// The shared error-condition category: which codes of any module mean "cancelled".
#include <agentctx/compaction/cancelled.hpp>

#include <boost/system/errc.hpp>

#include <string>

namespace agentctx {

namespace {

class condition_category_impl final : public boost::system::error_category
{
public:
    const char* name() const noexcept override { return "agentctx.condition"; }

    std::string message(int ev) const override
    {
        return static_cast<errc_condition>(ev) == errc_condition::cancelled ? "cancelled" : "unknown";
    }

    // The modules' categories map their own codes here through default_error_condition; this
    // adds the system ones: Asio's operation_aborted is ECANCELED in the system category.
    bool equivalent(const boost::system::error_code& code, int condition) const noexcept override
    {
        if (static_cast<errc_condition>(condition) != errc_condition::cancelled)
            return false;
        const auto generic = code.default_error_condition();
        return generic == boost::system::errc::operation_canceled;
    }
};

}  // namespace

const boost::system::error_category& condition_category() noexcept
{
    static const condition_category_impl instance;
    return instance;
}

}  // namespace agentctx
