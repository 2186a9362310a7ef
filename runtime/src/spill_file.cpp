// spill_file: an unlinked scratch file; extents written once, read with pread, holes punched.
#include "spill_file.hpp"

#include "read_at.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace agentctx::runtime {

namespace {

std::string errno_text(int e)
{
    return std::strerror(e);
}

/// O_TMPFILE where the file system has it, else a named file unlinked at once.
int open_unlinked(const std::string& directory)
{
    const int fd = ::open(directory.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
        return fd;
    std::string name = directory + "/agentctx-spill-XXXXXX";
    const int named = ::mkostemp(name.data(), O_CLOEXEC);
    if (named >= 0)
        ::unlink(name.c_str());
    return named;
}

}  // namespace

/// One kept text: reads are relative to its first byte and never leave it.
class spill_file::reader final : public compaction::line_reader
{
public:
    reader(std::shared_ptr<const spill_file> file, std::uint64_t base, std::uint64_t size)
        : file_(std::move(file)), base_(base), size_(size)
    {}
    ~reader() override { std::const_pointer_cast<spill_file>(file_)->release(base_, size_); }

    result<std::string> read(std::uint64_t offset, std::size_t length) const override
    {
        if (offset > size_ || length > size_ - offset)
            return compaction::errc::entry_not_found;
        return file_->read(base_ + offset, length);
    }

private:
    std::shared_ptr<const spill_file> file_;
    std::uint64_t base_;
    std::uint64_t size_;
};

spill_file::spill_file(token, int fd) : fd_(fd) {}

spill_file::~spill_file()
{
    ::close(fd_);
}

result<std::shared_ptr<spill_file>> spill_file::open(const std::string& directory, diagnostics& diag)
{
    const int fd = open_unlinked(directory);
    if (fd < 0)
    {
        diag.message = "cannot make a spill file in '" + directory + "': " + errno_text(errno);
        return errc::io_error;
    }
    return std::make_shared<spill_file>(token{}, fd);
}

result<std::shared_ptr<const compaction::line_reader>> spill_file::keep(
    std::string_view text, diagnostics& diag
)
{
    std::uint64_t base = 0;
    {
        // The extent is counted alive before it is written, so the file is never cut back under
        // a write in flight.
        const std::lock_guard lock(mutex_);
        base = end_;
        end_ += text.size();
        stats_.live_bytes += text.size();
        ++stats_.live_extents;
    }
    std::size_t done = 0;
    while (done < text.size())
    {
        const ssize_t n =
            ::pwrite(fd_, text.data() + done, text.size() - done, static_cast<off_t>(base + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
        {
            diag.message = "writing the spill file failed: " + errno_text(n < 0 ? errno : ENOSPC);
            release(base, text.size());
            return errc::io_error;
        }
        done += static_cast<std::size_t>(n);
    }
    {
        const std::lock_guard lock(mutex_);
        stats_.bytes_written += text.size();
    }
    return std::shared_ptr<const compaction::line_reader>(
        std::make_shared<reader>(shared_from_this(), base, text.size())
    );
}

result<std::string> spill_file::read(std::uint64_t offset, std::size_t length) const
{
    return read_at(fd_, offset, length);
}

void spill_file::release(std::uint64_t offset, std::uint64_t length)
{
    const std::lock_guard lock(mutex_);
    stats_.live_bytes -= length;
    if (--stats_.live_extents == 0)
    {
        // Nothing alive: start over at the front, and give every block back.
        end_ = 0;
        (void)::ftruncate(fd_, 0);
        return;
    }
    if (length > 0)
        (void)::fallocate(
            fd_,
            FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
            static_cast<off_t>(offset),
            static_cast<off_t>(length)
        );
}

spill_stats spill_file::stats() const
{
    const std::lock_guard lock(mutex_);
    return stats_;
}

std::uint64_t spill_file::allocated_bytes() const
{
    struct stat st
    {};
    if (::fstat(fd_, &st) != 0)
        return 0;
    return static_cast<std::uint64_t>(st.st_blocks) * 512u;
}

}  // namespace agentctx::runtime
