// File-operation tracking for summaries: read/write/edit tool calls with a string path.
#pragma once

#include <agentctx/compaction/message.hpp>

#include <boost/json/value.hpp>

#include <set>
#include <string>
#include <vector>

namespace agentctx::compaction {

struct file_operations
{
    std::set<std::string> read, written, edited;
};

struct file_lists
{
    std::vector<std::string> read_files;      ///< read and never modified
    std::vector<std::string> modified_files;  ///< written or edited
};

/// Adds the paths of `read`, `write` and `edit` tool calls of an assistant message.
void extract_file_ops(const message& m, file_operations& ops);

/// Seeds from a previous compaction's `details` (`readFiles` -> read, `modifiedFiles` -> edited).
void seed_file_ops(const boost::json::value& details, file_operations& ops);

/// modified = written ∪ edited; read = read \ modified; both sorted by UTF-16 code units.
file_lists compute_file_lists(const file_operations& ops);

/// `\n\n<read-files>\n…\n</read-files>` and/or `<modified-files>` blocks, or "".
std::string format_file_operations(const file_lists& lists);

/// `{"readFiles": [...], "modifiedFiles": [...]}`.
boost::json::value file_lists_details(const file_lists& lists);

}  // namespace agentctx::compaction
