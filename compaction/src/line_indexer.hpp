// Validates one JSONL line and captures the fields the index needs, without building a DOM.
#pragma once

#include <agentctx/compaction/error.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace agentctx::compaction::detail {

/// The JSON kind seen for a captured top-level field.
enum class seen : std::uint8_t
{
    absent,
    string,
    null,
    object,
    other,
};

/// Fields captured from one line.
struct line_fields
{
    bool is_object = false;
    seen type_kind = seen::absent, id_kind = seen::absent, parent_kind = seen::absent, message_kind = seen::absent;
    std::string type, id, parent_id;
    std::string thinking_level, provider, model_id, first_kept_entry_id;  // depth 1
    std::string target_id, label;                                         // label entries
    seen label_kind = seen::absent;
    std::string role, message_provider, message_model;                    // depth 2 inside "message"
    std::optional<std::int64_t> first_kept_entry_index;                   // v1 compactions

    void clear();
};

/// A strict JSON validator (RFC 8259, UTF-8, no comments or trailing commas, lone surrogate
/// escapes rejected) that accepts exactly what Boost.JSON's parser accepts, so an indexed line
/// always materializes. Plain runs inside strings are skipped 16 bytes at a time (SSE2):
/// session lines are mostly long tool outputs.
class line_indexer
{
public:
    explicit line_indexer(std::size_t max_depth) : max_depth_(max_depth) {}

    /// On failure returns invalid_json, invalid_utf8 or nesting_too_deep, with a message
    /// (byte position, no line number) in `diag`.
    result<const line_fields*> index(std::string_view line, diagnostics& diag);

private:
    std::size_t max_depth_;
    line_fields fields_;
};

}  // namespace agentctx::compaction::detail
