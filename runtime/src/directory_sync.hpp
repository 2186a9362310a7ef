// Grouped directory syncs: a new file's name is durable once its directory is synced, and
// every caller whose link happened before one sync began shares that sync.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>

namespace agentctx::runtime {

/// Group commit for one directory: at most one sync runs; the callers that arrive meanwhile join
/// the next one, so N concurrent callers cost about two syncs, not N. Each caller gets the result
/// of the sync that began after it arrived.
class directory_syncer
{
public:
    /// `sync_once` syncs the directory and returns 0 or an errno.
    explicit directory_syncer(std::function<int()> sync_once);

    /// Blocks until a sync that began after this call has ended; returns its 0 or errno.
    int sync();

    /// Callers waiting for the sync that has not begun yet.
    std::size_t waiting_for_next() const;
    /// Syncs begun so far.
    std::uint64_t syncs() const;

private:
    struct round;

    std::function<int()> sync_once_;
    mutable std::mutex mu_;
    std::condition_variable done_;
    std::shared_ptr<round> pending_;
    std::size_t pending_callers_ = 0;
    bool running_ = false;
    std::uint64_t syncs_ = 0;
};

/// Makes the directory entries made in `dir` before this call durable (fsync of the directory),
/// through the process's one `directory_syncer` for `dir`. Returns 0 or an errno.
int sync_directory(const std::filesystem::path& dir);

/// Syncs of `dir` begun through `sync_directory` so far (0 for a directory never synced).
std::uint64_t directory_syncs(const std::filesystem::path& dir);

}  // namespace agentctx::runtime
