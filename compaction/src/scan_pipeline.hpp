// Scans a session file's lines on two threads: a worker reads ahead, both threads scan batches.
#pragma once

#include "line_indexer.hpp"

#include <agentctx/compaction/session_log.hpp>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace agentctx::compaction::detail {

/// One line's scan (line_indexer::scan), done by whichever thread took its batch. The consumer
/// may move the captured fields out.
struct line_scan
{
    std::size_t size = 0;  ///< the line's length, without its '\n'
    errc code{};
    std::string message;
    line_fields fields;
};

/// A piece of the input, cut where its lines are. The lines that lie wholly inside it, from
/// `whole_begin` to `whole_end` (just past its last '\n'), are scanned in batches; the bytes
/// before them (the end of a line begun in an earlier region) and after them (the start of one
/// that continues in the next) are the consumer's to join.
class scan_region
{
public:
    std::string_view bytes;       ///< in the region's own buffer, or the caller's memory
    std::uint64_t offset = 0;     ///< of bytes[0] in the input
    std::size_t whole_begin = 0;  ///< the bytes before it end a line that began earlier
    std::size_t whole_end = 0;

private:
    friend class scan_pipeline;

    struct batch
    {
        std::size_t begin = 0, end = 0;  // whole lines, in `bytes`
        std::vector<line_scan> scans;    // kept when the region is reused: strings keep their capacity
        std::size_t count = 0;
        bool worker_failed = false;  // out of memory on the worker: the consumer scans it
        std::atomic<bool> scanned{false};
    };

    std::string buffer;
    std::deque<batch> batches;  // a deque: batches hold atomics and never move
    std::size_t batch_count = 0;
    std::atomic<std::size_t> next_free{0};  // the next batch nobody has taken (may run past the end)
};

/// Schedules a load's scanning; it does no I/O of its own (reads go through a byte_source). The
/// consumer (the builder's thread) takes regions in input order and goes through their lines in
/// order. Both threads take batches of about 64 KiB of whole lines from a shared cursor, so
/// neither waits while there is work: the worker reads a few regions ahead and scans; the
/// consumer scans the batch it needs next itself when nobody has taken it yet, and otherwise
/// helps with later ones before it waits.
class scan_pipeline
{
public:
    /// Starts the worker thread; throws std::system_error when there is none to be had.
    explicit scan_pipeline(std::size_t max_depth);
    ~scan_pipeline();
    scan_pipeline(const scan_pipeline&) = delete;
    scan_pipeline& operator=(const scan_pipeline&) = delete;

    /// The worker reads `source` from its offset 0 in chunks of `chunk_bytes`, a few regions
    /// ahead of the consumer; region offsets start at `offset`. `starts_line`: whether the
    /// input before ended with a newline (or there was none). `source` must stay alive until
    /// next() returns null or the pipeline is destroyed.
    void read_from(const byte_source& source, std::size_t chunk_bytes, std::uint64_t offset, bool starts_line);

    /// The next region read from the source, waiting for the worker; null at the end, after a
    /// read error (read_error() says which) or once cancelled.
    scan_region* next();
    boost::system::error_code read_error() const { return read_error_; }

    /// A region of the caller's bytes, which must stay alive until it is released, or (with
    /// `owned`) of a buffer the region keeps. Returned at once, to go through and release.
    scan_region* add_borrowed(std::string_view bytes, std::uint64_t offset, bool starts_line);
    scan_region* add_owned(std::string owned, std::uint64_t offset, bool starts_line);

    /// Calls `f(line, scan)` for each whole line of `r` in order until `f` returns false (then
    /// returns false); scans what nobody has taken yet, and waits for what the worker is scanning.
    template <class F>
    bool for_each_line(scan_region& r, F&& f)
    {
        for (std::size_t b = 0; b < r.batch_count; ++b)
        {
            scan_region::batch& batch = await(r, b);
            std::size_t at = batch.begin;
            for (std::size_t i = 0; i < batch.count; ++i)
            {
                line_scan& s = batch.scans[i];
                if (!f(r.bytes.substr(at, s.size), s))
                    return false;
                at += s.size + 1;
            }
        }
        return true;
    }

    /// Done with `r`, the oldest region handed out: its buffer becomes a spare one.
    void release(scan_region* r);

    /// The load failed: the worker stops reading and scanning. Releasing stays safe.
    void cancel();

    /// A buffer of a released region (contents unspecified), or an empty string.
    std::string spare_buffer();

private:
    void run();
    void read_one(std::unique_lock<std::mutex>& lock);
    bool scan_one_for_worker(std::unique_lock<std::mutex>& lock);
    scan_region::batch& await(scan_region& r, std::size_t b);
    void scan(scan_region& r, scan_region::batch& b);
    static void cut(scan_region& r, bool starts_line);
    std::unique_ptr<scan_region> take_region();
    scan_region* add(std::unique_ptr<scan_region> r, bool starts_line);

    std::size_t max_depth_;
    std::mutex mutex_;
    std::condition_variable worker_wake_, consumer_wake_;
    std::deque<std::unique_ptr<scan_region>> regions_;  // not yet released, in input order
    std::size_t handed_out_ = 0;                        // how many of regions_ the consumer has
    std::vector<std::unique_ptr<scan_region>> spare_regions_;
    std::vector<std::string> spare_buffers_;
    // The worker's reading: the source, where it is, whether the last chunk ended a line.
    const byte_source* source_ = nullptr;
    std::size_t chunk_bytes_ = 0;
    std::uint64_t read_offset_ = 0, base_offset_ = 0;
    bool read_starts_line_ = true;
    bool reading_ = false;
    boost::system::error_code read_error_;
    bool stop_ = false;
    std::atomic<bool> cancelled_{false};
    std::thread thread_;  // last: starts once the members above exist
};

}  // namespace agentctx::compaction::detail
