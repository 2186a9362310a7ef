// Scans a session file's lines on two threads: each takes the next unit, reads it and scans it.
#pragma once

#include "json/line_indexer.hpp"

#include <agentctx/compaction/session_log.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace agentctx::compaction::detail {

/// Reads `size` bytes at `offset` into `into`, or fewer only where the source ends (a short read
/// is followed by another): how many.
result<std::size_t> read_up_to(const byte_source& source, std::uint64_t offset, char* into, std::size_t size);

/// One line's scan (line_indexer::scan). The consumer may move the captured fields out.
struct line_scan
{
    std::size_t size = 0;  ///< the line's length, without its '\n'
    errc code{};
    std::string message;
    line_fields fields;
    std::uint64_t id_hash = 0;  ///< id_index::hash(fields.id), done on the scanning thread
};

/// A unit of the input, cut where its lines are. The lines that lie wholly inside it, from
/// `whole_begin` to `whole_end` (just past its last '\n'), were scanned by the thread that took
/// the unit (`scans`, in order); the bytes before them (the end of a line begun in an earlier
/// unit) and after them (the start of one that continues in the next) are the consumer's to join.
class scan_unit
{
public:
    std::string_view bytes;       ///< in the unit's own buffer, or the caller's memory
    std::uint64_t offset = 0;     ///< of bytes[0] in the input
    std::size_t whole_begin = 0;  ///< the bytes before it end a line that began earlier
    std::size_t whole_end = 0;
    std::vector<line_scan> scans;  ///< kept when the slot is reused: strings keep their capacity
    std::size_t count = 0;         ///< how many of `scans` are this unit's

private:
    friend class scan_pipeline;
    std::string buffer;
    boost::system::error_code read_error;
    bool worker_failed = false;          // out of memory on the worker: the consumer redoes it
    std::atomic<std::uint64_t> done{0};  // index + 1 of the unit this slot last finished
};

/// Schedules one input's reading and scanning; reads go through a byte_source (no I/O here). The
/// input is cut into units (chunks of the source, or slices of the caller's bytes). A worker
/// thread takes units up to a few ahead of the consumer; the consumer (the builder's thread)
/// takes units in order and goes through their lines, and does a unit itself when nobody has
/// taken it yet. Whoever takes a unit reads it and scans it, so its bytes are scanned while they
/// are still in that core's cache, and neither thread waits while there is work.
class scan_pipeline
{
public:
    /// Units of `unit_bytes` read from `source` (its offsets from 0; a short read is followed by
    /// another, the source ends at a read of nothing), or slices of `bytes` (which must stay
    /// alive as long as the pipeline). Unit offsets start at `offset`; `starts_line`: whether
    /// the input before this one ended with a newline (or there was none). Starts the worker
    /// thread; throws std::system_error when there is none to be had.
    scan_pipeline(
        const byte_source& source,
        std::size_t unit_bytes,
        std::uint64_t offset,
        bool starts_line,
        std::size_t max_depth
    );
    scan_pipeline(
        std::string_view bytes,
        std::size_t unit_bytes,
        std::uint64_t offset,
        bool starts_line,
        std::size_t max_depth
    );
    ~scan_pipeline();
    scan_pipeline(const scan_pipeline&) = delete;
    scan_pipeline& operator=(const scan_pipeline&) = delete;

    /// The next unit in input order, read and scanned; null at the end, after a read error
    /// (read_error() says which; nothing after it is handed out) or once cancelled. Valid until
    /// release().
    scan_unit* next();
    boost::system::error_code read_error() const { return read_error_; }

    /// Done with the unit next() returned last.
    void release();

    /// The load failed: the worker takes no more units.
    void cancel();

private:
    struct input
    {
        const byte_source* source = nullptr;
        std::string_view bytes;
        std::size_t unit_bytes = 1;
        std::uint64_t offset = 0;
        bool starts_line = true;
        std::size_t max_depth = 64;
    };

    explicit scan_pipeline(const input& in);
    void run();
    bool take(std::uint64_t& index);
    void process(std::uint64_t index);
    bool fill(scan_unit& u, std::uint64_t index, bool& starts_line);
    void scan_whole_lines(scan_unit& u, bool starts_line);
    void lower_end(std::uint64_t index);
    scan_unit& slot(std::uint64_t index) { return *slots_[index % slots_.size()]; }

    const input in_;
    std::vector<std::unique_ptr<scan_unit>> slots_;            // unit i lives in slot i % size
    std::atomic<std::uint64_t> next_index_{0};                 // the next unit nobody has taken
    std::atomic<std::uint64_t> consumed_{0};                   // units released by the consumer
    std::atomic<std::uint64_t> end_index_{~std::uint64_t{0}};  // no unit at or past it is part of the input
    std::atomic<std::uint64_t> wake_{0};  // bumped by release(), cancel() and stop: wakes the worker
    std::atomic<bool> cancelled_{false};
    std::atomic<bool> stop_{false};
    std::uint64_t handed_out_ = 0;  // the consumer's: units next() returned
    boost::system::error_code read_error_;
    std::thread thread_;  // last: starts once the members above exist
};

}  // namespace agentctx::compaction::detail
