// The mark on each entry of a multi-entry batch, by which a load finds a batch that a crash cut short.
#pragma once

#include <agentctx/compaction/session_log.hpp>

#include <boost/json/object.hpp>

#include <cstddef>
#include <optional>
#include <string_view>

namespace agentctx::runtime::detail {

/// The top-level field of a batch entry: `{"index": i, "size": n}`. Pi ignores it; a batch of one
/// entry carries none.
inline constexpr std::string_view batch_mark_key = "agentctxBatch";

/// Marks `raw`, entry `index` of a batch of `size` (nothing when `size` < 2).
void mark_batch_entry(boost::json::object& raw, std::size_t index, std::size_t size);

/// The position of the first entry of a batch the log ends inside: its last entry carries a mark
/// whose index is not the batch's last, and the marked entries before it run back to index 0.
/// nullopt when the log ends with a whole batch, an unmarked entry, or marks that do not chain.
std::optional<std::size_t> incomplete_trailing_batch(const compaction::session_log& log);

}  // namespace agentctx::runtime::detail
