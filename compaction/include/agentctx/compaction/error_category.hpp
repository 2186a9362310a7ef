// The error_category every module's `errc` uses: one template instead of one copy per module.
#pragma once

#include <agentctx/compaction/cancelled.hpp>

#include <boost/system/error_category.hpp>
#include <boost/system/error_condition.hpp>

#include <optional>
#include <string>

namespace agentctx::detail {

/**
 * @brief The category of a module's `enum class Errc`: its name (`"agentctx.runtime"`), each
 * code's message from the module's `to_string`, and, when the module has one, the code that is
 * the shared `errc_condition::cancelled` condition (as Asio's `operation_aborted` is).
 *
 * Each module defines one instance in its `error_category()` (a function-local static), so codes
 * compare by the category's address as before.
 */
template <class Errc>
class module_category final : public boost::system::error_category
{
public:
    using to_string_fn = const char* (*)(Errc) noexcept;

    constexpr module_category(
        const char* name, to_string_fn to_string, std::optional<Errc> cancelled = std::nullopt
    ) noexcept
        : name_(name), to_string_(to_string), cancelled_(cancelled)
    {}

    const char* name() const noexcept override { return name_; }

    std::string message(int ev) const override { return to_string_(static_cast<Errc>(ev)); }

    boost::system::error_condition default_error_condition(int ev) const noexcept override
    {
        if (cancelled_ && static_cast<Errc>(ev) == *cancelled_)
            return make_error_condition(errc_condition::cancelled);
        return {ev, *this};
    }

private:
    const char* name_;
    to_string_fn to_string_;
    std::optional<Errc> cancelled_;
};

}  // namespace agentctx::detail
