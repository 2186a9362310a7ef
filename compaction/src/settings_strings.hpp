// A settings section's list of non-empty strings, read strictly (the pinned and required sections).
#pragma once

#include <agentctx/compaction/error.hpp>

#include <boost/json/object.hpp>

#include <string>
#include <vector>

namespace agentctx::compaction::detail {

/// `section.<key>` as strings into `out`; absent is fine. Errors name `<prefix>.<key>[i]`.
inline result<void> read_settings_strings(
    const boost::json::object& section,
    const char* prefix,
    const char* key,
    std::vector<std::string>& out,
    diagnostics& diag
)
{
    const auto* v = section.if_contains(key);
    if (!v)
        return {};
    const std::string field = std::string(prefix) + "." + key;
    if (!v->is_array())
    {
        diag.field = field;
        diag.message = "settings: field '" + field + "': expected an array of strings";
        return errc::invalid_settings;
    }
    for (std::size_t i = 0; i < v->get_array().size(); ++i)
    {
        const auto& item = v->get_array()[i];
        if (!item.is_string() || item.get_string().empty())
        {
            diag.field = field + "[" + std::to_string(i) + "]";
            diag.message = "settings: field '" + diag.field + "': expected a non-empty string";
            return errc::invalid_settings;
        }
        out.emplace_back(item.get_string());
    }
    return {};
}

}  // namespace agentctx::compaction::detail
