// Grouped directory syncs (group commit for the names of new session files).
#include "directory_sync.hpp"

#include <cerrno>
#include <fcntl.h>
#include <map>
#include <string>
#include <unistd.h>

namespace agentctx::runtime {

/// One sync and the callers it covers.
struct directory_syncer::round
{
    bool finished = false;
    int error = 0;
};

directory_syncer::directory_syncer(std::function<int()> sync_once) : sync_once_(std::move(sync_once)) {}

int directory_syncer::sync()
{
    std::unique_lock lock(mu_);
    if (!pending_)
        pending_ = std::make_shared<round>();
    const auto mine = pending_;
    ++pending_callers_;
    while (!mine->finished)
    {
        if (running_)
        {
            done_.wait(lock);
            continue;
        }
        // Nobody runs and mine has not finished, so mine is the pending round: run it.
        running_ = true;
        ++syncs_;
        pending_callers_ = 0;
        const auto go = std::move(pending_);
        lock.unlock();
        const int error = sync_once_();
        lock.lock();
        go->error = error;
        go->finished = true;
        running_ = false;
        done_.notify_all();
    }
    return mine->error;
}

std::size_t directory_syncer::waiting_for_next() const
{
    std::lock_guard lock(mu_);
    return pending_callers_;
}

std::uint64_t directory_syncer::syncs() const
{
    std::lock_guard lock(mu_);
    return syncs_;
}

namespace {

int fsync_directory(const std::string& dir)
{
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    const int error = ::fsync(fd) == 0 ? 0 : errno;
    ::close(fd);
    return error;
}

// The process's syncer of `dir`; a process touches few directories, so they live as long as it.
directory_syncer& syncer_of(const std::filesystem::path& dir)
{
    static std::mutex mu;
    static std::map<std::string, std::unique_ptr<directory_syncer>> syncers;
    const std::string key = dir.empty() ? std::string(".") : dir.string();
    std::lock_guard lock(mu);
    auto& slot = syncers[key];
    if (!slot)
        slot = std::make_unique<directory_syncer>([key] { return fsync_directory(key); });
    return *slot;
}

}  // namespace

int sync_directory(const std::filesystem::path& dir)
{
    return syncer_of(dir).sync();
}

std::uint64_t directory_syncs(const std::filesystem::path& dir)
{
    return syncer_of(dir).syncs();
}

}  // namespace agentctx::runtime
