// Grouped directory syncs: callers that arrive while a sync runs share the next one, each caller
// gets the result of a sync that began after it arrived, and a created session file is synced.
#include "directory_sync.hpp"

#include <agentctx/compaction/entry.hpp>
#include <agentctx/runtime/jsonl_store.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <future>
#include <thread>
#include <vector>

namespace {

using agentctx::runtime::directory_syncer;

// A sync that the test holds until it says go, and that answers a chosen errno per call.
class held_sync
{
public:
    explicit held_sync(std::vector<int> answers) : answers_(std::move(answers)) {}

    int operator()()
    {
        const std::size_t call = calls_.fetch_add(1);
        if (call == 0)
        {
            entered_.set_value();
            release_.get_future().wait();
        }
        return call < answers_.size() ? answers_[call] : 0;
    }

    void wait_entered() { entered_future_.wait(); }
    void release() { release_.set_value(); }
    std::size_t calls() const { return calls_.load(); }

private:
    std::vector<int> answers_;
    std::atomic<std::size_t> calls_{0};
    std::promise<void> entered_;
    std::shared_future<void> entered_future_ = entered_.get_future().share();
    std::promise<void> release_;
};

// Waits (yielding, bounded) until `n` callers wait for the next sync.
bool wait_for_waiters(const directory_syncer& s, std::size_t n)
{
    for (int i = 0; i < 20'000'000 && s.waiting_for_next() < n; ++i)
        std::this_thread::yield();
    return s.waiting_for_next() == n;
}

TEST(directory_sync, callers_that_arrive_during_a_sync_share_the_next_one_and_its_result)
{
    held_sync held({0, EIO});
    directory_syncer syncer([&] { return held(); });
    auto first = std::async(std::launch::async, [&] { return syncer.sync(); });
    held.wait_entered();
    std::vector<std::future<int>> later;
    for (int i = 0; i < 5; ++i)
        later.push_back(std::async(std::launch::async, [&] { return syncer.sync(); }));
    ASSERT_TRUE(wait_for_waiters(syncer, 5));
    held.release();
    EXPECT_EQ(first.get(), 0);  // the first sync's own result
    for (auto& f : later)
        EXPECT_EQ(f.get(), EIO);  // all five in the second sync, which failed
    EXPECT_EQ(held.calls(), 2u);
    EXPECT_EQ(syncer.syncs(), 2u);
}

TEST(directory_sync, a_caller_alone_runs_its_own_sync_each_time)
{
    int calls = 0;
    directory_syncer syncer([&] { return ++calls == 2 ? ENOSPC : 0; });
    EXPECT_EQ(syncer.sync(), 0);
    EXPECT_EQ(syncer.sync(), ENOSPC);
    EXPECT_EQ(syncer.sync(), 0);
    EXPECT_EQ(calls, 3);
}

TEST(directory_sync, a_directory_that_is_gone_reports_its_errno)
{
    const auto dir = std::filesystem::temp_directory_path() / "agentctx-dirsync-gone-4471";
    std::filesystem::remove_all(dir);
    EXPECT_EQ(agentctx::runtime::sync_directory(dir), ENOENT);
}

TEST(directory_sync, a_created_session_file_s_name_is_synced_unless_fsync_is_never)
{
    namespace rt = agentctx::runtime;
    const auto dir = std::filesystem::temp_directory_path() / "agentctx-dirsync-create-4471";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const auto header = agentctx::compaction::make_header("s1", "2026-12-07T00:00:00.000Z", "/");
    agentctx::compaction::diagnostics diag;
    const auto before = rt::directory_syncs(dir);  // the count is the process's (repeated runs)
    ASSERT_TRUE(rt::jsonl_store::create(dir / "s1.jsonl", header, {}, diag)) << diag.message;
    EXPECT_EQ(rt::directory_syncs(dir), before + 1);
    ASSERT_TRUE(rt::jsonl_store::create(dir / "s2.jsonl", header, {.fsync = rt::fsync_policy::never}, diag));
    EXPECT_EQ(rt::directory_syncs(dir), before + 1);
    std::filesystem::remove_all(dir);
}

}  // namespace
