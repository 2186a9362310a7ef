// Group commit: appends of different sessions that arrive together commit in one transaction, each with its
// own compare-and-set.
#pragma once

#include "pg_connection.hpp"

#include <agentctx/compaction/entry.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/system/error_code.hpp>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace agentctx::runtime::pg {

class pool;

/// One session's append: `entries` after exactly `known` stored entries, all of them or none.
struct append_request
{
    std::string session_id;
    std::size_t known = 0;
    std::vector<compaction::entry_ptr> entries;
    /// Called once, from a pool thread: success, `stale_leaf`, or `database_error` and a message.
    std::function<void(boost::system::error_code, std::string)> done;
};

/**
 * @brief Commits queued appends in groups on up to `max_flushers` pooled connections at once.
 *
 * A flusher takes every waiting request (of distinct sessions, at most `max_group`) and sends
 * one pipeline: a transaction that locks the group's session rows in id order, then one
 * statement doing each request's compare-and-set on `last_seq` and inserting the entries of
 * the requests whose count matched; then, as a transaction of its own, the NOTIFY of the
 * group's counts. A request whose count did not match gets `stale_leaf`, the others commit. No
 * timer: while flushers are busy, arriving requests wait and form the next group, so the group
 * grows with the load and a lone append is sent at once.
 */
class append_queue
{
public:
    append_queue(pool& owner, std::size_t max_flushers, std::size_t max_group);

    void submit(append_request r);

    struct counters
    {
        std::uint64_t groups = 0;   ///< transactions committed (or attempted) for appends
        std::uint64_t appends = 0;  ///< requests they carried
        std::uint64_t fallbacks =
            0;  ///< groups that failed as a whole and were retried one request at a time
    };
    counters stats() const;

private:
    boost::asio::awaitable<void> flush_loop(std::shared_ptr<pool> keep);
    std::vector<append_request> take_group();
    void note_fallback(std::size_t size, const std::string& why);
    boost::asio::awaitable<void> commit_group(std::vector<append_request> group, bool alone_on_failure);

    pool& owner_;
    std::size_t max_flushers_;
    std::size_t max_group_;
    mutable std::mutex mutex_;
    std::deque<append_request> pending_;
    std::size_t flushers_ = 0;
    counters stats_;
};

}  // namespace agentctx::runtime::pg
