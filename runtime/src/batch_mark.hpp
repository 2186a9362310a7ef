// The mark on each entry of a multi-entry batch, by which a load finds a batch that a crash cut short.
#pragma once

#include <agentctx/compaction/session_log.hpp>

#include <boost/json/object.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace agentctx::runtime::detail {

/// The top-level field of a batch entry: `{"index": i, "size": n, "first": id}`, `first` the id
/// the runtime gave the batch's first entry. Pi ignores it; a batch of one entry carries none.
/// Clients cannot write it (compaction::check_client_entry refuses every `agentctx*` field).
inline constexpr std::string_view batch_mark_key = "agentctxBatch";

/// Marks `raw`, entry `index` of a batch of `size` whose first entry has the id `first` (nothing
/// when `size` < 2).
void mark_batch_entry(
    boost::json::object& raw, std::size_t index, std::size_t size, const std::string& first
);

/// The position of the first entry of a batch the log ends inside: its last entry carries a mark
/// whose index is not the batch's last, and the marked entries before it run back to index 0,
/// each a child of the one before, every mark naming as `first` the id of the entry at index 0.
/// nullopt when the log ends with a whole batch, an unmarked entry, or marks that do not chain:
/// a mark without `first` (a client's, before clients were refused; or an older runtime's) or
/// one whose `first` is not that entry's id is not the runtime's, and never sets a line aside.
std::optional<std::size_t> incomplete_trailing_batch(const compaction::session_log& log);

}  // namespace agentctx::runtime::detail
