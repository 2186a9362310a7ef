// jsonl_store: locked, append-only JSONL file with torn-tail repair and atomic migration.
#include <agentctx/runtime/jsonl_store.hpp>

#include "read_at.hpp"
#include "batch_mark.hpp"
#include "directory_sync.hpp"

#include <agentctx/runtime/error.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace agentctx::runtime {

namespace fs = std::filesystem;

struct jsonl_store::fd_holder
{
    int fd = -1;
    explicit fd_holder(int f) : fd(f) {}
    ~fd_holder()
    {
        if (fd >= 0)
            ::close(fd);
    }
};

namespace {

result<void> io_failure(diagnostics& diag, const std::string& what, const fs::path& path, int err)
{
    diag.message = what + " '" + path.string() + "': " + std::strerror(err);
    return errc::io_error;
}

bool write_all(int fd, const char* data, std::size_t size)
{
    while (size > 0)
    {
        const ssize_t n = ::write(fd, data, size);
        if (n < 0)
        {
            if (errno == EINTR)
                continue;
            return false;
        }
        data += n;
        size -= static_cast<std::size_t>(n);
    }
    return true;
}

// What load() reads at a time: a unit that one of the loader's two threads reads and then
// scans while it is still in that core's cache.
constexpr std::size_t load_chunk_bytes = std::size_t{256} << 10;

// The store's file as the loader reads it, from its second thread.
class fd_byte_source final : public compaction::byte_source
{
public:
    explicit fd_byte_source(int fd) : fd_(fd) {}

    result<std::size_t> read(std::uint64_t offset, char* into, std::size_t size) const override
    {
        for (;;)
        {
            const ssize_t n = ::pread(fd_, into, size, static_cast<off_t>(offset));
            if (n >= 0)
                return static_cast<std::size_t>(n);
            if (errno != EINTR)
                return boost::system::error_code(errno, boost::system::system_category());
        }
    }

private:
    int fd_;
};

// The first `end` bytes of the store's file: a load that leaves out an incomplete batch.
class prefix_byte_source final : public compaction::byte_source
{
public:
    prefix_byte_source(int fd, std::uint64_t end) : file_(fd), end_(end) {}

    result<std::size_t> read(std::uint64_t offset, char* into, std::size_t size) const override
    {
        if (offset >= end_)
            return std::size_t{0};
        return file_.read(
            offset, into, static_cast<std::size_t>(std::min<std::uint64_t>(size, end_ - offset))
        );
    }

private:
    fd_byte_source file_;
    std::uint64_t end_;
};

// Reads lines back for lazy materialization through the store's own descriptor, which it keeps
// open (`keep`) as long as a log needs it: one descriptor per session. The store releases its
// flock when it closes, so the lock still ends with the store, not with the last log.
class file_line_reader final : public compaction::line_reader
{
public:
    file_line_reader(int fd, std::shared_ptr<const void> keep) : fd_(fd), keep_(std::move(keep)) {}

    result<std::string> read(std::uint64_t offset, std::size_t length) const override
    {
        return read_at(fd_, offset, length);
    }

private:
    int fd_;
    std::shared_ptr<const void> keep_;
};

}  // namespace

jsonl_store::jsonl_store(fs::path path, std::shared_ptr<fd_holder> fd, jsonl_store_options opts)
    : path_(std::move(path)), fd_(std::move(fd)), opts_(opts)
{}

jsonl_store::~jsonl_store()
{
    // Logs may still read through the descriptor: the lock ends here, the descriptor with the last of them.
    if (!opts_.read_only)
        ::flock(fd_->fd, LOCK_UN);
}

result<std::unique_ptr<jsonl_store>> jsonl_store::open(
    const fs::path& path, jsonl_store_options opts, diagnostics& diag
)
{
    const int fd = ::open(path.c_str(), (opts.read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC);
    if (fd < 0)
    {
        const int err = errno;
        if (err == ENOENT)
        {
            diag.message = "no session file at '" + path.string() + "'";
            return errc::not_found;
        }
        auto r = io_failure(diag, "cannot open", path, err);
        return r.error();
    }
    auto holder = std::make_shared<fd_holder>(fd);
    if (!opts.read_only && ::flock(fd, LOCK_EX | LOCK_NB) != 0)
    {
        const int err = errno;
        if (err == EWOULDBLOCK)
        {
            diag.message = "session file '" + path.string() + "' is locked by another writer";
            return errc::session_locked;
        }
        return io_failure(diag, "cannot lock", path, err).error();
    }
    return std::unique_ptr<jsonl_store>(new jsonl_store(path, std::move(holder), opts));
}

result<std::unique_ptr<jsonl_store>> jsonl_store::create(
    const fs::path& path,
    const compaction::session_header& header,
    jsonl_store_options opts,
    diagnostics& diag
)
{
    opts.read_only = false;
    // The header goes into an unnamed file (O_TMPFILE) that is linked at `path` once complete, so
    // a crash inside create leaves a whole header or no file: never an empty or torn header, which
    // neither open (the load fails) nor create (already_exists) would accept. Where the file
    // system has no O_TMPFILE, `path` is created directly (and a crash can leave it empty).
    const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
    int fd = ::open(dir.c_str(), O_RDWR | O_TMPFILE | O_CLOEXEC, 0644);
    const bool unnamed = fd >= 0;
    if (!unnamed)
        fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
    {
        const int err = errno;
        if (err == EEXIST)
        {
            diag.message = "a file already exists at '" + path.string() + "'";
            return errc::already_exists;
        }
        return io_failure(diag, "cannot create", path, err).error();
    }
    auto holder = std::make_shared<fd_holder>(fd);
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0)
        return io_failure(diag, "cannot lock", path, errno).error();
    std::unique_ptr<jsonl_store> s(new jsonl_store(path, std::move(holder), opts));
    if (auto r = s->write_header(header, diag); !r)
        return r.error();
    if (unnamed)
    {
        // Fails with EEXIST if the path was taken meanwhile; the lock comes along with the inode.
        const std::string self = "/proc/self/fd/" + std::to_string(fd);
        if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, path.c_str(), AT_SYMLINK_FOLLOW) != 0)
        {
            const int err = errno;
            if (err == EEXIST)
            {
                diag.message = "a file already exists at '" + path.string() + "'";
                return errc::already_exists;
            }
            return io_failure(diag, "cannot create", path, err).error();
        }
    }
    // The name is durable once the directory is: concurrent creates share one directory sync.
    if (opts.fsync != fsync_policy::never)
        if (const int err = sync_directory(dir); err != 0)
            return io_failure(diag, "cannot sync the directory of", path, err).error();
    return s;
}

result<void> jsonl_store::write_line(const std::string& line, bool sync, diagnostics& diag)
{
    if (opts_.read_only)
    {
        diag.message = "session file '" + path_.string() + "' was opened read-only";
        return errc::read_only;
    }
    const int fd = fd_->fd;
    struct stat st
    {};
    if (::fstat(fd, &st) != 0)
        return io_failure(diag, "cannot stat", path_, errno);
    off_t size = st.st_size;
    if (torn_ && static_cast<std::uint64_t>(size) == torn_->offset + torn_->length)
    {
        // Keep the fragment next to the file before cutting it off: never drop bytes silently.
        std::string fragment(static_cast<std::size_t>(torn_->length), '\0');
        if (::pread(fd, fragment.data(), fragment.size(), static_cast<off_t>(torn_->offset)) !=
            static_cast<ssize_t>(fragment.size()))
            return io_failure(diag, "cannot read torn line of", path_, errno);
        const fs::path side = path_.string() + ".torn";
        const int sfd = ::open(side.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (sfd < 0)
            return io_failure(diag, "cannot save torn line to", side, errno);
        if (fragment.empty() ||
            fragment.back() != '\n')  // a set-aside batch ends with its newline; a torn line does not
            fragment += '\n';
        const bool ok = write_all(sfd, fragment.data(), fragment.size()) && ::fsync(sfd) == 0;
        ::close(sfd);
        if (!ok)
            return io_failure(diag, "cannot save torn line to", side, errno);
        if (::ftruncate(fd, static_cast<off_t>(torn_->offset)) != 0)
            return io_failure(diag, "cannot repair torn line of", path_, errno);
        size = static_cast<off_t>(torn_->offset);
    }
    torn_.reset();
    std::string out;
    const std::string* data = &line;
    if (needs_newline_)
    {
        out = "\n" + line;
        data = &out;
    }
    if (::lseek(fd, 0, SEEK_END) < 0 || !write_all(fd, data->data(), data->size()))
    {
        const int err = errno;
        if (::ftruncate(fd, size) != 0)
        {}  // roll back a partial line; best effort
        return io_failure(diag, "cannot append to", path_, err);
    }
    needs_newline_ = false;
    if (sync && ::fdatasync(fd) != 0)
        return io_failure(diag, "cannot sync", path_, errno);
    return {};
}

result<void> jsonl_store::write_header(const compaction::session_header& h, diagnostics& diag)
{
    struct stat st
    {};
    if (::fstat(fd_->fd, &st) != 0)
        return io_failure(diag, "cannot stat", path_, errno);
    if (st.st_size != 0)
    {
        diag.message = "session file '" + path_.string() + "' is not empty";
        return errc::already_exists;
    }
    return write_line(to_jsonl_line(h.raw), opts_.fsync != fsync_policy::never, diag);
}

result<void> jsonl_store::append(const compaction::entry& e, diagnostics& diag)
{
    const bool sync = opts_.fsync == fsync_policy::always || (opts_.fsync == fsync_policy::on_compaction &&
                                                              e.type == compaction::entry_type::compaction);
    return write_line(to_jsonl_line(e.raw), sync, diag);
}

result<void> jsonl_store::append_all(const std::vector<compaction::entry_ptr>& entries, diagnostics& diag)
{
    if (entries.empty())
        return {};
    std::string lines;
    bool sync = opts_.fsync == fsync_policy::always;
    for (const auto& e : entries)
    {
        lines += to_jsonl_line(e->raw);
        sync = sync ||
               (opts_.fsync == fsync_policy::on_compaction && e->type == compaction::entry_type::compaction);
    }
    return write_line(lines, sync, diag);
}

result<compaction::session_log> jsonl_store::load(
    const compaction::load_options& opts, compaction::load_report& report, diagnostics& diag
)
{
    // The store's descriptor (appends keep offsets valid; a migrate renames a new file over the
    // path, which leaves this one readable; reads use pread, so no shared offset moves).
    auto reader = std::make_shared<file_line_reader>(fd_->fd, fd_);
    compaction::session_log_builder builder(opts);
    // The builder's two threads each read a chunk and scan it; this one goes through the lines
    // in order.
    const fd_byte_source source(fd_->fd);
    if (const auto fed = builder.feed_from(source, load_chunk_bytes); !fed)
        return io_failure(diag, "cannot read", path_, fed.error().value()).error();
    auto log = builder.finish(reader, report, diag);
    if (!log)
        return log;
    if (const auto first = detail::incomplete_trailing_batch(*log))
        return load_without_batch(opts, *log, *first, std::move(reader), report, diag);
    torn_ = report.torn;
    needs_newline_ = report.missing_final_newline;
    return log;
}

// A batch is written with one write(2), but a crash can still keep part of it (a kill between
// pages, a power loss before the sync). Its lines were never acknowledged: the log is loaded
// without them and the next append moves them to `<file>.torn`, as a torn line is.
result<compaction::session_log> jsonl_store::load_without_batch(
    const compaction::load_options& opts,
    const compaction::session_log& full,
    std::size_t first,
    std::shared_ptr<const compaction::line_reader> reader,
    compaction::load_report& report,
    diagnostics& diag
)
{
    struct stat st
    {};
    if (::fstat(fd_->fd, &st) != 0)
        return io_failure(diag, "cannot stat", path_, errno).error();
    const auto& meta = full.meta(first);
    const std::size_t kept = full.size() - first;
    compaction::session_log_builder builder(opts);
    const prefix_byte_source source(fd_->fd, meta.offset);
    if (const auto fed = builder.feed_from(source, load_chunk_bytes); !fed)
        return io_failure(diag, "cannot read", path_, fed.error().value()).error();
    compaction::load_report prefix_report;
    auto log = builder.finish(std::move(reader), prefix_report, diag);
    if (!log)
        return log;
    prefix_report.notes.push_back(
        {{},
         meta.line,
         "an incomplete batch (" + std::to_string(kept) +
             " of its entries) ends the file: left out, and moved to the .torn file on the next append"}
    );
    report = std::move(prefix_report);
    torn_ =
        compaction::torn_tail{meta.offset, static_cast<std::uint64_t>(st.st_size) - meta.offset, meta.line};
    report.incomplete_batch = torn_;
    needs_newline_ = false;
    return log;
}

result<migrate_outcome> migrate_file(const fs::path& path, diagnostics& diag)
{
    auto store = jsonl_store::open(path, {}, diag);  // the lock keeps writers out while we rewrite
    if (!store)
        return store.error();
    compaction::load_report report;
    auto log = (*store)->load({}, report, diag);
    if (!log)
        return log.error();
    if (log->source_version() >= compaction::current_session_version)
        return migrate_outcome::already_current;
    auto header = log->header().raw;
    header["version"] = compaction::current_session_version;
    std::string text = to_jsonl_line(header);
    for (std::size_t i = 0; i < log->size(); ++i)
    {
        auto e = log->get(i, diag);  // get() applies migrate_object
        if (!e)
            return e.error();
        text += to_jsonl_line((*e)->raw);
    }
    const fs::path tmp = path.string() + ".migrate.tmp";
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return io_failure(diag, "cannot create", tmp, errno).error();
    const bool ok = write_all(fd, text.data(), text.size()) && ::fsync(fd) == 0;
    const int err = errno;
    ::close(fd);
    if (!ok)
    {
        ::unlink(tmp.c_str());
        return io_failure(diag, "cannot write", tmp, err).error();
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0)
    {
        const int rerr = errno;
        ::unlink(tmp.c_str());
        return io_failure(diag, "cannot replace", path, rerr).error();
    }
    if (const int err = sync_directory(path.parent_path()); err != 0)  // "" is the working directory
        return io_failure(diag, "cannot sync the directory of", path, err).error();
    return migrate_outcome::migrated;
}

}  // namespace agentctx::runtime
