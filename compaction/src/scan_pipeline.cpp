// The load's two-thread scan: regions cut into batches, taken by either thread from one cursor.
#include "scan_pipeline.hpp"

#include <algorithm>
#include <cstring>
#include <new>

namespace agentctx::compaction::detail {

namespace {

// Batches of about this many bytes of whole lines: small enough that the two threads share a
// region evenly and a wait for the other's batch is short, large enough that taking one costs
// nothing measurable (a 2 MiB region has about 32).
constexpr std::size_t batch_bytes = 64 * 1024;
// Regions the worker reads before the consumer has taken them.
constexpr std::size_t read_ahead = 2;
// Spare buffers kept (each a chunk of the input).
constexpr std::size_t max_spare_buffers = 4;

}  // namespace

scan_pipeline::scan_pipeline(std::size_t max_depth) : max_depth_(max_depth), thread_([this] { run(); }) {}

scan_pipeline::~scan_pipeline()
{
    cancel();
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    worker_wake_.notify_all();
    thread_.join();
}

void scan_pipeline::cancel()
{
    cancelled_.store(true, std::memory_order_relaxed);
    // A consumer waiting for the next region wakes and gets null.
    std::lock_guard lock(mutex_);
    consumer_wake_.notify_all();
}

void scan_pipeline::read_from(const byte_source& source, std::size_t chunk_bytes, std::uint64_t offset, bool starts_line)
{
    {
        std::lock_guard lock(mutex_);
        source_ = &source;
        chunk_bytes_ = std::max<std::size_t>(chunk_bytes, 1);
        read_offset_ = 0;
        base_offset_ = offset;
        read_starts_line_ = starts_line;
        read_error_.clear();
        reading_ = true;
    }
    worker_wake_.notify_one();
}

scan_region* scan_pipeline::next()
{
    std::unique_lock lock(mutex_);
    for (;;)
    {
        if (cancelled_.load(std::memory_order_relaxed))
            return nullptr;
        if (handed_out_ < regions_.size())
        {
            scan_region* r = regions_[handed_out_++].get();
            worker_wake_.notify_one();  // room to read one more ahead
            return r;
        }
        if (!reading_)
            return nullptr;
        consumer_wake_.wait(lock);
    }
}

scan_region* scan_pipeline::add_borrowed(std::string_view bytes, std::uint64_t offset, bool starts_line)
{
    std::unique_ptr<scan_region> r;
    {
        std::lock_guard lock(mutex_);
        r = take_region();
    }
    r->bytes = bytes;
    r->offset = offset;
    return add(std::move(r), starts_line);
}

scan_region* scan_pipeline::add_owned(std::string owned, std::uint64_t offset, bool starts_line)
{
    std::unique_ptr<scan_region> r;
    {
        std::lock_guard lock(mutex_);
        r = take_region();
    }
    r->buffer = std::move(owned);
    r->bytes = r->buffer;
    r->offset = offset;
    return add(std::move(r), starts_line);
}

scan_region* scan_pipeline::add(std::unique_ptr<scan_region> r, bool starts_line)
{
    cut(*r, starts_line);
    scan_region* p = r.get();
    {
        std::lock_guard lock(mutex_);
        regions_.push_back(std::move(r));
        ++handed_out_;
    }
    worker_wake_.notify_one();
    return p;
}

void scan_pipeline::release(scan_region* r)
{
    std::lock_guard lock(mutex_);
    if (regions_.empty() || regions_.front().get() != r || handed_out_ == 0)
        return;  // not the oldest handed out: a misuse, and nothing to free
    // A consumer that stopped early (a fatal line) leaves batches behind: none may be taken any
    // more, and those the worker took must be finished before the bytes go (it only takes them
    // under the lock, and marks them scanned before it takes the lock again).
    const std::size_t taken = std::min(r->next_free.exchange(r->batch_count, std::memory_order_relaxed), r->batch_count);
    for (std::size_t b = 0; b < taken; ++b)
        r->batches[b].scanned.wait(false, std::memory_order_acquire);
    std::unique_ptr<scan_region> done = std::move(regions_.front());
    regions_.pop_front();
    --handed_out_;
    if (!done->buffer.empty() && spare_buffers_.size() < max_spare_buffers)
        spare_buffers_.push_back(std::move(done->buffer));
    done->buffer.clear();
    done->bytes = {};
    spare_regions_.push_back(std::move(done));
}

std::string scan_pipeline::spare_buffer()
{
    std::lock_guard lock(mutex_);
    if (spare_buffers_.empty())
        return {};
    std::string b = std::move(spare_buffers_.back());
    spare_buffers_.pop_back();
    return b;
}

std::unique_ptr<scan_region> scan_pipeline::take_region()
{
    if (spare_regions_.empty())
        return std::make_unique<scan_region>();
    auto r = std::move(spare_regions_.back());
    spare_regions_.pop_back();
    return r;
}

// Whole lines from the first line start to just past the last '\n', in batches that end at a
// newline.
void scan_pipeline::cut(scan_region& r, bool starts_line)
{
    const char* const data = r.bytes.data();
    const std::size_t size = r.bytes.size();
    std::size_t first = 0;
    if (!starts_line)
    {
        const void* nl = std::memchr(data, '\n', size);
        first = nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - data) + 1 : size;
    }
    const void* last = first < size ? ::memrchr(data + first, '\n', size - first) : nullptr;
    const std::size_t end = last ? static_cast<std::size_t>(static_cast<const char*>(last) - data) + 1 : first;
    r.whole_begin = first;
    r.whole_end = end;
    r.batch_count = 0;
    r.next_free.store(0, std::memory_order_relaxed);
    for (std::size_t b = first; b < end;)
    {
        std::size_t e = end;
        if (end - b > batch_bytes)
            e = static_cast<std::size_t>(static_cast<const char*>(std::memchr(data + b + batch_bytes, '\n', end - b - batch_bytes)) -
                                         data) +
                1;  // found: bytes[end - 1] is a '\n'
        if (r.batch_count == r.batches.size())
            r.batches.emplace_back();
        scan_region::batch& x = r.batches[r.batch_count++];
        x.begin = b;
        x.end = e;
        x.count = 0;
        x.worker_failed = false;
        x.scanned.store(false, std::memory_order_relaxed);
        b = e;
    }
}

void scan_pipeline::scan(scan_region& r, scan_region::batch& b)
{
    std::size_t n = 0;
    for (std::size_t i = b.begin; i < b.end && !cancelled_.load(std::memory_order_relaxed); ++n)
    {
        const std::size_t end =
            static_cast<std::size_t>(static_cast<const char*>(std::memchr(r.bytes.data() + i, '\n', b.end - i)) - r.bytes.data());
        if (n == b.scans.size())
            b.scans.emplace_back();
        line_scan& s = b.scans[n];
        s.size = end - i;
        s.message.clear();
        s.code = line_indexer::scan(r.bytes.substr(i, s.size), max_depth_, s.fields, s.message);
        i = end + 1;
    }
    b.count = n;
}

scan_region::batch& scan_pipeline::await(scan_region& r, std::size_t b)
{
    scan_region::batch& batch = r.batches[b];
    while (!batch.scanned.load(std::memory_order_acquire))
    {
        // Nobody has it (or a later one) yet: scan it here rather than wait.
        const std::size_t free = r.next_free.fetch_add(1, std::memory_order_relaxed);
        if (free < r.batch_count)
        {
            scan_region::batch& mine = r.batches[free];
            scan(r, mine);
            mine.scanned.store(true, std::memory_order_release);
            continue;
        }
        batch.scanned.wait(false, std::memory_order_acquire);  // the worker is on it
    }
    if (batch.worker_failed)
    {
        batch.worker_failed = false;
        scan(r, batch);  // the worker ran out of memory on it; an exception here is the caller's
    }
    return batch;
}

void scan_pipeline::run()
{
    std::unique_lock lock(mutex_);
    while (!stop_)
    {
        if (cancelled_.load(std::memory_order_relaxed))
        {
            worker_wake_.wait(lock);
            continue;
        }
        if (reading_ && regions_.size() - handed_out_ < read_ahead)
            read_one(lock);
        else if (!scan_one_for_worker(lock))
            worker_wake_.wait(lock);
    }
}

// Reads the next chunk into a region and publishes it. Called and returns with `lock` held.
void scan_pipeline::read_one(std::unique_lock<std::mutex>& lock)
{
    std::unique_ptr<scan_region> r = take_region();
    if (!spare_buffers_.empty())
    {
        r->buffer = std::move(spare_buffers_.back());
        spare_buffers_.pop_back();
    }
    const std::uint64_t at = read_offset_;
    const bool starts_line = read_starts_line_;
    lock.unlock();
    result<std::size_t> n = std::size_t{0};
    try
    {
        r->buffer.resize(chunk_bytes_);  // a spare buffer has this size already: no fill
        n = source_->read(at, r->buffer.data(), chunk_bytes_);
        if (n && *n > 0)
        {
            r->buffer.resize(std::min(*n, chunk_bytes_));
            r->bytes = r->buffer;
            r->offset = base_offset_ + at;
            cut(*r, starts_line);
        }
    }
    catch (const std::bad_alloc&)
    {
        n = boost::system::errc::make_error_code(boost::system::errc::not_enough_memory);
    }
    lock.lock();
    if (!n || *n == 0)
    {
        if (!n)
            read_error_ = n.error();
        reading_ = false;  // the end, or the first error: nothing after it is read
        spare_regions_.push_back(std::move(r));
    }
    else
    {
        read_offset_ += r->bytes.size();
        read_starts_line_ = r->bytes.back() == '\n';
        regions_.push_back(std::move(r));
    }
    consumer_wake_.notify_all();
}

// Scans one batch nobody has taken, of the oldest region that has one. Called and returns with
// `lock` held; false when there is none.
bool scan_pipeline::scan_one_for_worker(std::unique_lock<std::mutex>& lock)
{
    // Released regions are gone from regions_; those still there stay until the consumer has
    // gone through every batch, which includes the one taken here.
    for (const auto& region : regions_)
    {
        scan_region& r = *region;
        if (r.next_free.load(std::memory_order_relaxed) >= r.batch_count)
            continue;
        const std::size_t free = r.next_free.fetch_add(1, std::memory_order_relaxed);
        if (free >= r.batch_count)
            continue;
        scan_region::batch& b = r.batches[free];
        lock.unlock();
        try
        {
            scan(r, b);
        }
        catch (const std::bad_alloc&)
        {
            b.worker_failed = true;
        }
        b.scanned.store(true, std::memory_order_release);
        b.scanned.notify_all();
        lock.lock();
        return true;
    }
    return false;
}

}  // namespace agentctx::compaction::detail
