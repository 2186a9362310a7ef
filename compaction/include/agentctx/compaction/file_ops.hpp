// File-operation tracking for summaries: read/write/edit tool calls with a string path.
#pragma once

#include <agentctx/compaction/limits.hpp>
#include <agentctx/compaction/message.hpp>

#include <boost/json/value.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace agentctx::compaction {

struct file_operations
{
    std::set<std::string> read, written, edited;
    /// When each path was last touched (a larger number is more recent): bounded lists keep
    /// the newest paths. Seeded paths are older than every path the summarized part touched.
    std::map<std::string, std::uint64_t> last_touched;
    std::uint64_t clock = 0;
};

struct file_lists
{
    std::vector<std::string> read_files;      ///< read and never modified
    std::vector<std::string> modified_files;  ///< written or edited
    /// Paths left out of each list by the bounds (0 when unbounded).
    std::size_t read_omitted = 0, modified_omitted = 0;
    bool bounded = false;  ///< newest first, modified before read (agentctx mode)
};

/// How many paths a summary names (agentctx mode; Pi 1.6 lists every path). A list stops at
/// whichever bound it reaches first and says how many it left out, so that a session touching
/// thousands of files does not grow its summary with every compaction.
struct file_list_bounds
{
    std::size_t summary_paths = 50;                     ///< paths per list in the summary text
    std::size_t summary_chars = 4000;                   ///< characters per list in the summary text
    std::size_t details_paths = max_file_list_entries;  ///< paths per list carried in `details`
};

/// Adds the paths of `read`, `write` and `edit` tool calls of an assistant message.
void extract_file_ops(const message& m, file_operations& ops);

/// Seeds from a previous compaction's `details` (`readFiles` -> read, `modifiedFiles` -> edited).
/// A list's first path counts as the most recent (bounded lists are written newest first).
void seed_file_ops(const boost::json::value& details, file_operations& ops);

/// modified = written ∪ edited; read = read \ modified. Unbounded (Pi 1.6): both sorted by UTF-16
/// code units. Bounded: newest first, each list cut to `bounds.details_paths`.
file_lists compute_file_lists(
    const file_operations& ops, const std::optional<file_list_bounds>& bounds = std::nullopt
);

/// `\n\n<read-files>\n…\n</read-files>` and/or `<modified-files>` blocks, or "". Bounded lists put
/// `<modified-files>` first and end a cut list with a line `…and N more`.
std::string format_file_operations(const file_lists& lists, const file_list_bounds& bounds = {});

/// `{"readFiles": [...], "modifiedFiles": [...]}`.
boost::json::value file_lists_details(const file_lists& lists);

}  // namespace agentctx::compaction
