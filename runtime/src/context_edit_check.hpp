// Pi 1.6's writer rules for a context_edit, checked in Pi's order before anything is written.
#pragma once

#include <agentctx/compaction/entry.hpp>
#include <agentctx/compaction/error.hpp>
#include <agentctx/compaction/session_log.hpp>

#include <boost/json/object.hpp>

#include <algorithm>
#include <string>

namespace agentctx::runtime::detail {

/// For a `context_edit`: the replacement is null or `{content: string|array}` (wrong_type), the
/// target exists (entry_not_found), lies on the active branch (entry_not_found) and contributes
/// editable content — a custom_message or a user/assistant/toolResult message (wrong_type).
/// A string replacement of an assistant or toolResult target is stored as one text block.
/// Other entry types pass unchanged.
inline compaction::result<void> check_context_edit(
    const compaction::session_log& log, boost::json::object& raw, compaction::diagnostics& diag
)
{
    using compaction::errc;
    const auto* type = raw.if_contains("type");
    if (!type || !type->is_string() || type->get_string() != "context_edit")
        return {};
    auto* replacement = raw.if_contains("replacement");
    const boost::json::value* content = nullptr;
    if (replacement && replacement->is_object())
        content = replacement->get_object().if_contains("content");
    if (!replacement ||
        !(replacement->is_null() || (content && (content->is_string() || content->is_array()))))
    {
        diag.field = "replacement";
        diag.message = "Context edit replacement must be null or contain string/array content";
        return errc::wrong_type;
    }
    const auto* target = raw.if_contains("targetId");
    const std::string id = target && target->is_string() ? std::string(target->get_string()) : std::string();
    const auto index = log.find(id);
    if (!index)
    {
        diag.field = "targetId";
        diag.message = "Entry " + id + " not found";
        return errc::entry_not_found;
    }
    const auto path = log.active_path();
    if (std::find(path.begin(), path.end(), static_cast<std::uint32_t>(*index)) == path.end())
    {
        diag.field = "targetId";
        diag.message = "Entry " + id + " is not on the active branch";
        return errc::entry_not_found;
    }
    const auto& meta = log.meta(*index);
    using compaction::role;
    const bool message = meta.type == compaction::entry_type::message;
    const bool editable =
        meta.type == compaction::entry_type::custom_message ||
        (message && (meta.message_role == role::user || meta.message_role == role::assistant ||
                     meta.message_role == role::tool_result));
    if (!editable)
    {
        diag.field = "targetId";
        diag.message = "Entry " + id + " does not contribute editable model content";
        return errc::wrong_type;
    }
    if (content && content->is_string() && message &&
        (meta.message_role == role::assistant || meta.message_role == role::tool_result))
    {
        boost::json::array blocks{boost::json::object{{"type", "text"}, {"text", content->get_string()}}};
        replacement->get_object()["content"] = std::move(blocks);
    }
    return {};
}

}  // namespace agentctx::runtime::detail
