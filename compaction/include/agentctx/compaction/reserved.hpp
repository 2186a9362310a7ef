// Entry types the runtime writes only for itself, and the check that keeps clients from writing them.
#pragma once

#include <agentctx/compaction/error.hpp>

#include <boost/json/object.hpp>

#include <string_view>

namespace agentctx::compaction {

/// The namespace of the runtime's own custom types (`agentctx.compaction_progress`, ...).
inline constexpr std::string_view reserved_custom_type_prefix = "agentctx.";

/// The prefix of the top-level entry fields the runtime writes for itself (`agentctxBatch`, the
/// mark a load finds a batch by).
inline constexpr std::string_view reserved_field_prefix = "agentctx";

/// Whether `custom_type` belongs to the runtime (starts with `agentctx.`).
bool is_reserved_custom_type(std::string_view custom_type) noexcept;

/// Whether a top-level entry field named `key` belongs to the runtime (starts with `agentctx`).
bool is_reserved_field(std::string_view key) noexcept;

/// The fields of an entry a client asks to append: a top-level field the runtime reserves is
/// refused with `reserved_field`, `diag.field` = its name; a `custom` or `custom_message` entry
/// whose `customType` is reserved is refused with `reserved_type`, `diag.field` = `customType`.
/// Every other entry passes (the entry's own validation follows).
result<void> check_client_entry(const boost::json::object& fields, diagnostics& diag);

}  // namespace agentctx::compaction
