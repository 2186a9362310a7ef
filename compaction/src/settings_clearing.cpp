// Reading `compaction.clearToolResults` and `compaction.workingBudget` strictly, naming the field and the
// layer.
#include "settings_clearing.hpp"

#include "json/field_reader.hpp"

#include <agentctx/compaction/json_text.hpp>

#include <cmath>

namespace agentctx::compaction::detail {

namespace {

constexpr double max_safe_integer = 9007199254740991.0;

bool is_count(const boost::json::value& v) noexcept
{
    if (!v.is_number())
        return false;
    const double d = v.to_number<double>();
    return std::isfinite(d) && d == std::trunc(d) && d >= 0 && d <= max_safe_integer;
}

// A token amount: a number in (0, 1] is a fraction, 0 or a larger whole number is tokens.
bool is_amount(const boost::json::value& v) noexcept
{
    if (!v.is_number())
        return false;
    const double d = v.to_number<double>();
    return (std::isfinite(d) && d > 0 && d <= 1) || (is_count(v) && (d > 1 || d == 0));
}

token_amount amount_of(const boost::json::value& v) noexcept
{
    const double d = v.to_number<double>();
    return d > 0 && d <= 1 ? token_amount{0, d} : token_amount{static_cast<std::int64_t>(d), 0};
}

struct refusal
{
    const char* layer;
    diagnostics& diag;
    result<void> operator()(std::string field, const char* expected, const boost::json::value& got) const
    {
        diag.field = std::move(field);
        std::string shown;
        if (got.is_string())
            quote_to(shown, got.get_string());
        else
            shown = got.is_number() ? js_string(got) : kind_name(got.kind());
        diag.message = std::string(layer) + " settings: field '" + diag.field + "': expected " + expected +
                       ", got " + shown;
        return errc::invalid_settings;
    }
};

bool is_string_list(const boost::json::value& v) noexcept
{
    if (!v.is_array())
        return false;
    for (const auto& item : v.get_array())
        if (!item.is_string() || item.get_string().empty())
            return false;
    return true;
}

std::vector<std::string> strings_of(const boost::json::value& v)
{
    std::vector<std::string> out;
    for (const auto& item : v.get_array())
        out.emplace_back(item.get_string());
    return out;
}

result<void> check_clear_section(const boost::json::value& section, const refusal& refuse)
{
    const std::string at = "compaction.clearToolResults";
    if (!section.is_object())
        return refuse(at, "object", section);
    const auto& o = section.get_object();
    if (const auto* v = o.if_contains("enabled"); v && !v->is_bool())
        return refuse(at + ".enabled", "boolean", *v);
    if (const auto* v = o.if_contains("trigger"); v && !is_amount(*v))
        return refuse(at + ".trigger", "a fraction in (0, 1] or a token count", *v);
    for (const char* key : {"keep", "clearAtLeast"})
        if (const auto* v = o.if_contains(key); v && !is_count(*v))
            return refuse(at + "." + key, "a non-negative integer", *v);
    if (const auto* v = o.if_contains("excludeTools"); v && !is_string_list(*v))
        return refuse(at + ".excludeTools", "an array of tool names", *v);
    if (const auto* v = o.if_contains("clearToolInputs"); v && !v->is_bool() && !is_string_list(*v))
        return refuse(at + ".clearToolInputs", "a boolean or an array of tool names", *v);
    return {};
}

}  // namespace

result<void> check_clearing_layer(const boost::json::object& layer, const char* name, diagnostics& diag)
{
    const auto* comp = layer.if_contains("compaction");
    if (!comp || !comp->is_object())
        return {};
    const refusal refuse{name, diag};
    if (const auto* v = comp->get_object().if_contains("clearToolResults"))
        if (auto r = check_clear_section(*v, refuse); !r)
            return r;
    if (const auto* v = comp->get_object().if_contains("workingBudget"); v && !is_amount(*v))
        return refuse("compaction.workingBudget", "a fraction in (0, 1] or a token count", *v);
    return {};
}

void read_clearing(const boost::json::object* compaction, compaction_settings& s)
{
    if (!compaction)
        return;
    if (const auto* v = compaction->if_contains("workingBudget"))
        s.working_budget = amount_of(*v);
    const auto* section = compaction->if_contains("clearToolResults");
    if (!section)
        return;
    auto& c = s.clear_tool_results;
    const auto& o = section->get_object();
    if (const auto* v = o.if_contains("enabled"))
        c.enabled = v->get_bool();
    if (const auto* v = o.if_contains("trigger"))
        c.trigger = amount_of(*v);
    if (const auto* v = o.if_contains("keep"))
        c.keep = v->to_number<std::int64_t>();
    if (const auto* v = o.if_contains("clearAtLeast"))
        c.clear_at_least = v->to_number<std::int64_t>();
    if (const auto* v = o.if_contains("excludeTools"))
        c.exclude_tools = strings_of(*v);
    if (const auto* v = o.if_contains("clearToolInputs"))
    {
        c.clear_all_inputs = v->is_bool() && v->get_bool();
        c.clear_input_tools = v->is_array() ? strings_of(*v) : std::vector<std::string>{};
    }
}

}  // namespace agentctx::compaction::detail
