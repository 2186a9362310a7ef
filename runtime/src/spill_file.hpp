// spill_file: a node-local scratch file that holds loaded session text out of the heap.
#pragma once

#include <agentctx/compaction/session_log.hpp>
#include <agentctx/runtime/error.hpp>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace agentctx::runtime {

using compaction::diagnostics;
using compaction::result;

/// What a spill file holds now and has held.
struct spill_stats
{
    std::uint64_t live_bytes = 0;     ///< text of the readers alive now
    std::uint64_t live_extents = 0;   ///< readers alive now
    std::uint64_t bytes_written = 0;  ///< since the file was made
};

/**
 * @brief Text that a log reads back rarely, and that a database keeps anyway, kept on local
 * disk instead of the heap.
 *
 * A log loaded from a database materializes the entries of its active path once; its other
 * lines are read back only for a branch, an export or a plan. Holding the whole text in memory
 * for that costs as much as the log itself. The file is unlinked from the start (nothing is
 * left behind by a crash), one per pool, so it costs one descriptor for every session. Each
 * kept text is one extent, read with pread, and its blocks are given back to the file system
 * when the last reader goes. Nothing here is durable and nothing needs to be: the database is
 * the record. Thread-safe.
 */
class spill_file : public std::enable_shared_from_this<spill_file>
{
public:
    /// An unlinked file in `directory`; io_error with the errno when it cannot be made.
    static result<std::shared_ptr<spill_file>> open(const std::string& directory, diagnostics& diag);

    spill_file(const spill_file&) = delete;
    spill_file& operator=(const spill_file&) = delete;
    ~spill_file();

    /// Writes `text` and returns a reader over exactly those bytes that frees them when it is
    /// destroyed; io_error (disk full, ...) leaves nothing behind.
    result<std::shared_ptr<const compaction::line_reader>> keep(std::string_view text, diagnostics& diag);

    spill_stats stats() const;
    /// Blocks the file holds on disk now (st_blocks * 512): freed extents give theirs back.
    std::uint64_t allocated_bytes() const;

private:
    class reader;
    struct token
    {};

public:
    spill_file(token, int fd);

private:
    result<std::string> read(std::uint64_t offset, std::size_t length) const;
    void release(std::uint64_t offset, std::uint64_t length);

    const int fd_;
    mutable std::mutex mutex_;
    std::uint64_t end_ = 0;  ///< where the next extent goes; back to 0 when none is alive
    spill_stats stats_;
};

}  // namespace agentctx::runtime
