// The load's two-thread scan: units taken in order by either thread, each read and scanned whole.
#include "scan_pipeline.hpp"

#include <algorithm>
#include <cstring>
#include <new>

namespace agentctx::compaction::detail {

namespace {

// How many units the worker may take beyond those the consumer has released. Enough that it is
// never short of work while the consumer goes through one; few, so the buffers stay in cache.
constexpr std::uint64_t ahead = 4;

}  // namespace

result<std::size_t> read_up_to(const byte_source& source, std::uint64_t offset, char* into, std::size_t size)
{
    std::size_t got = 0;
    while (got < size)
    {
        const auto n = source.read(offset + got, into + got, size - got);
        if (!n)
            return n.error();
        if (*n == 0)
            break;
        got += std::min(*n, size - got);
    }
    return got;
}

scan_pipeline::scan_pipeline(
    const byte_source& source,
    std::size_t unit_bytes,
    std::uint64_t offset,
    bool starts_line,
    std::size_t max_depth
)
    : scan_pipeline(input{&source, {}, std::max<std::size_t>(unit_bytes, 1), offset, starts_line, max_depth})
{}

scan_pipeline::scan_pipeline(
    std::string_view bytes,
    std::size_t unit_bytes,
    std::uint64_t offset,
    bool starts_line,
    std::size_t max_depth
)
    : scan_pipeline(input{
          nullptr, bytes, std::max<std::size_t>(unit_bytes, 1), offset, starts_line, max_depth})
{}

scan_pipeline::scan_pipeline(const input& in)
    : in_(in), slots_([] {
          // A unit's slot is reused only once the consumer released the unit `size` before it:
          // the worker stays within `ahead` of what was released.
          std::vector<std::unique_ptr<scan_unit>> s(ahead + 2);
          for (auto& u : s)
              u = std::make_unique<scan_unit>();
          return s;
      }()),
      thread_([this] { run(); })
{}

scan_pipeline::~scan_pipeline()
{
    stop_.store(true, std::memory_order_relaxed);
    cancel();
    thread_.join();
}

void scan_pipeline::cancel()
{
    cancelled_.store(true, std::memory_order_relaxed);
    wake_.fetch_add(1, std::memory_order_release);
    wake_.notify_all();
}

void scan_pipeline::release()
{
    consumed_.fetch_add(1, std::memory_order_release);
    wake_.fetch_add(1, std::memory_order_release);
    wake_.notify_all();
}

void scan_pipeline::lower_end(std::uint64_t index)
{
    std::uint64_t cur = end_index_.load(std::memory_order_relaxed);
    while (index < cur && !end_index_.compare_exchange_weak(cur, index, std::memory_order_acq_rel))
    {}
}

// Takes the next unit if it is within reach of what was released and part of the input.
bool scan_pipeline::take(std::uint64_t& index)
{
    std::uint64_t i = next_index_.load(std::memory_order_relaxed);
    for (;;)
    {
        if (cancelled_.load(std::memory_order_relaxed) ||
            i >= consumed_.load(std::memory_order_acquire) + ahead ||
            i >= end_index_.load(std::memory_order_acquire))
            return false;
        if (next_index_.compare_exchange_weak(i, i + 1, std::memory_order_acq_rel))
        {
            index = i;
            return true;
        }
    }
}

scan_unit* scan_pipeline::next()
{
    const std::uint64_t h = handed_out_;
    if (cancelled_.load(std::memory_order_relaxed) || h >= end_index_.load(std::memory_order_acquire))
        return nullptr;
    scan_unit& u = slot(h);
    for (;;)
    {
        const std::uint64_t done = u.done.load(std::memory_order_acquire);
        if (done == h + 1)
            break;
        std::uint64_t i = 0;
        if (take(i))
        {
            process(i);  // the one needed, or a later one while the worker finishes it
            continue;
        }
        u.done.wait(done, std::memory_order_acquire);  // the worker is on it
    }
    if (h >= end_index_.load(std::memory_order_acquire))
        return nullptr;  // the input ended before it
    if (u.worker_failed)
    {
        u.worker_failed = false;
        process(h);  // the worker ran out of memory on it; an exception here is the caller's
    }
    if (u.read_error)
    {
        read_error_ = u.read_error;
        lower_end(h);  // nothing from here on is handed out
        return nullptr;
    }
    ++handed_out_;
    return &u;
}

void scan_pipeline::run()
{
    for (;;)
    {
        const std::uint64_t w = wake_.load(std::memory_order_acquire);
        if (stop_.load(std::memory_order_relaxed))
            return;
        std::uint64_t i = 0;
        if (!take(i))
        {
            wake_.wait(w, std::memory_order_acquire);  // until a release, a cancel or the stop
            continue;
        }
        try
        {
            process(i);
        }
        catch (const std::bad_alloc&)
        {
            scan_unit& u = slot(i);
            u.worker_failed = true;
            u.done.store(i + 1, std::memory_order_release);
            u.done.notify_all();
        }
    }
}

// Reads (or slices) unit `index` into its slot; false when the input ended before it. Whether
// its first byte starts a line comes from the byte before it.
bool scan_pipeline::fill(scan_unit& u, std::uint64_t index, bool& starts_line)
{
    const std::uint64_t at = index * in_.unit_bytes;
    u.read_error.clear();
    if (!in_.source)
    {
        if (index > 0 && at >= in_.bytes.size())
            return false;
        const auto begin = static_cast<std::size_t>(at);
        u.bytes = in_.bytes.substr(begin, in_.unit_bytes);
        starts_line = index == 0 ? in_.starts_line : in_.bytes[begin - 1] == '\n';
        return true;
    }
    const std::size_t before = index > 0 ? 1 : 0;
    const std::size_t want = in_.unit_bytes + before;
    u.buffer.resize(want);  // a reused slot has this size already: no fill
    const auto n = read_up_to(*in_.source, at - before, u.buffer.data(), want);
    if (!n)
    {
        u.read_error = n.error();
        return true;  // handed out as an error, in its place
    }
    const std::size_t got = *n;
    u.buffer.resize(got);
    if (got <= before)
        return false;
    u.bytes = std::string_view(u.buffer).substr(before);
    starts_line = before ? u.buffer[0] == '\n' : in_.starts_line;
    return true;
}

void scan_pipeline::process(std::uint64_t index)
{
    scan_unit& u = slot(index);
    u.count = 0;
    u.bytes = {};
    u.offset = in_.offset + index * in_.unit_bytes;
    u.whole_begin = u.whole_end = 0;
    bool starts_line = true;
    const bool has_bytes = fill(u, index, starts_line);
    if (!has_bytes)
        lower_end(index);  // the input ended before this unit
    else if (u.read_error || u.bytes.size() < in_.unit_bytes)
        lower_end(index + 1);  // the input ends in it (or at its read error)
    if (has_bytes && !u.read_error)
        scan_whole_lines(u, starts_line);
    u.done.store(index + 1, std::memory_order_release);
    u.done.notify_all();
}

// The lines from the first line start (after the first '\n' when the unit starts inside a
// line) to just past the last '\n'.
void scan_pipeline::scan_whole_lines(scan_unit& u, bool starts_line)
{
    const char* const data = u.bytes.data();
    const std::size_t size = u.bytes.size();
    std::size_t first = 0;
    if (!starts_line)
    {
        const void* nl = std::memchr(data, '\n', size);
        first = nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - data) + 1 : size;
    }
    const void* last = first < size ? ::memrchr(data + first, '\n', size - first) : nullptr;
    const std::size_t end =
        last ? static_cast<std::size_t>(static_cast<const char*>(last) - data) + 1 : first;
    u.whole_begin = first;
    u.whole_end = end;
    std::size_t n = 0;
    for (std::size_t i = first; i < end && !cancelled_.load(std::memory_order_relaxed); ++n)
    {
        if (n == u.scans.size())
            u.scans.emplace_back();
        line_scan& s = u.scans[n];
        s.message.clear();
        s.code =
            line_indexer::scan_line(u.bytes.substr(i, end - i), in_.max_depth, s.fields, s.message, s.size);
        s.id_hash = id_index::hash(s.fields.id);
        i += s.size + 1;  // every whole line ends with a '\n'
    }
    u.count = n;
}

}  // namespace agentctx::compaction::detail
