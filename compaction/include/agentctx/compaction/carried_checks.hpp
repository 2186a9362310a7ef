// The checks on a compaction's carried entries (`details.agentctx.pinned`): each one must be a
// covered entry byte for byte, within bounds, before it is projected beside the summary.
#pragma once

#include <agentctx/compaction/entry.hpp>
#include <agentctx/compaction/error.hpp>

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace agentctx::compaction {

/// Whether `carried` is `covered` as JSON text, byte for byte (same members in the same order,
/// same values), except that inside a string a redaction marker (`[REDACTED:<rule>]`) may stand
/// for a non-empty part of the covered string: a carried copy can only hide text, never add it.
bool matches_covered(const boost::json::value& carried, const boost::json::value& covered);

/// The covered prefix of a compaction as the check sees it: its length, the id at each
/// position, and the entry at a position (materialized on demand; only the carried ones are).
struct covered_prefix
{
    std::size_t size = 0;
    std::function<std::string_view(std::size_t)> id_at;
    std::function<result<entry_ptr>(std::size_t)> entry_at;
};

/// Checks `pinned` against `covered`: at most max_carried_entries items and max_carried_bytes
/// of JSON, each an object whose `id` names a covered entry (no id twice) and which
/// matches_covered that entry's JSON. Empty on success, else the first problem in a sentence.
std::string check_carried(const boost::json::array& pinned, const covered_prefix& covered);

}  // namespace agentctx::compaction
