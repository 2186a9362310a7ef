// The open sessions: leases, opening files on a loader pool, PostgreSQL adoption, closing to make room.
#pragma once

#include "event_stream.hpp"
#include "session_book.hpp"

#include <agentctx/compaction/error.hpp>
#include <agentctx/runtime/pg_store.hpp>
#include <agentctx/runtime/session.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

namespace agentctx::server {

/// Closed (never sent on) once an open finished, or once a closing session released its descriptor.
using release_channel = boost::asio::experimental::concurrent_channel<void(boost::system::error_code)>;

/// One session of the registry: the book's record and the runtime's objects.
struct session_slot : slot_record
{
    std::shared_ptr<runtime::session> session;  ///< null once closing
    std::shared_ptr<release_channel> released;  ///< closed when its descriptor is released
    std::shared_ptr<release_channel> opened;    ///< closed when the open finished (`session` or `open_error`)
    boost::system::error_code open_error;
    std::string open_message;  ///< the failed open's diagnostics message
    event_subscribers subscribers;
    std::chrono::steady_clock::time_point compaction_started;  ///< on the session's strand
};

struct registry_options
{
    std::filesystem::path data_dir;
    std::shared_ptr<runtime::pg_pool> pg;  ///< sessions in PostgreSQL instead of files
    std::size_t max_open_sessions = 0;     ///< 0 = no limit
    std::size_t open_threads = 2;
    std::size_t create_threads = 16;                          ///< creates wait for syncs, not for the CPU
    std::function<void(const std::string&)> before_load;      ///< test hook, on the open thread
    std::function<runtime::session_config()> session_config;  ///< for each session opened
    /// Adjusts session `id`'s configuration before it opens (its per-session declarations).
    std::function<void(const std::string& id, runtime::session_config&)> configure;
    std::function<void(const std::shared_ptr<session_slot>&)> on_open;  ///< observe a session just opened
    std::function<void()> free_descriptors;  ///< out of descriptors: close what can be closed elsewhere
};

/**
 * Sessions by id, each open at most once, at most `max_open_sessions` at a time (see
 * session_book for the decisions). Files are opened and loaded on `open_threads` threads of
 * their own, never on the io threads; concurrent requests for a session being opened share that
 * one open. An open that runs out of descriptors closes idle sessions and tries again.
 */
class session_registry : public std::enable_shared_from_this<session_registry>
{
public:
    /// A session in use: while a lease lives its session is not closed to make room.
    class lease_state
    {
    public:
        lease_state(std::shared_ptr<session_registry> owner, std::shared_ptr<session_slot> slot);
        ~lease_state();
        lease_state(const lease_state&) = delete;
        lease_state& operator=(const lease_state&) = delete;
        runtime::session& session() const { return *slot_->session; }
        session_slot& slot() const { return *slot_; }

    private:
        std::shared_ptr<session_registry> owner_;
        std::shared_ptr<session_slot> slot_;
    };
    using lease = std::shared_ptr<lease_state>;

    session_registry(boost::asio::io_context& ioc, registry_options opts);

    /// A lease on session `id`, opening it if needed (not_found when it does not exist,
    /// too_many_open_sessions when every open one is busy).
    boost::asio::awaitable<compaction::result<lease>> find(
        const std::string& id, compaction::diagnostics& diag
    );
    /// Creates a session (a new id, a header with `cwd`) and leases it. `before_open`, when set,
    /// is called with the new id before the session opens (to declare its configuration);
    /// it must outlive the operation.
    boost::asio::awaitable<compaction::result<std::pair<std::string, lease>>> create(
        const std::string& cwd,
        compaction::diagnostics& diag,
        const std::function<void(const std::string& id)>& before_open
    );
    /// Closes up to `n` idle sessions, least recently used first; returns how many.
    std::size_t shed_idle(std::size_t n);
    /// Sessions open now.
    std::size_t active();
    std::size_t max_open_sessions() const noexcept { return opts_.max_open_sessions; }
    /// Closes every session and ends their event streams; sessions still opening close once open.
    void close_all();

private:
    using store_factory =
        std::function<compaction::result<std::unique_ptr<runtime::store>>(compaction::diagnostics&)>;
    struct open_result;

    lease take(const std::shared_ptr<session_slot>& slot);
    lease begin_open(const std::string& id, store_factory make_store, boost::asio::thread_pool& pool);
    boost::asio::awaitable<void> open_session(
        std::string id,
        std::shared_ptr<session_slot> slot,
        store_factory make_store,
        boost::asio::thread_pool& pool
    );
    void publish_open(const std::string& id, const std::shared_ptr<session_slot>& slot, open_result& r);
    static boost::asio::awaitable<compaction::result<lease>> await_open(
        lease held, compaction::diagnostics& diag
    );
    boost::asio::awaitable<compaction::result<lease>> find_once(
        const std::string& id, compaction::diagnostics& diag
    );
    boost::asio::awaitable<compaction::result<std::pair<std::string, lease>>> create_once(
        const std::string& id, const std::string& cwd, compaction::diagnostics& diag
    );
    boost::asio::awaitable<compaction::result<lease>> adopt_opened(
        const std::string& id, std::unique_ptr<runtime::store> store, compaction::diagnostics& diag
    );
    boost::asio::awaitable<void> after_freeing_descriptors();

    boost::asio::io_context& ioc_;
    registry_options opts_;
    /// Session files are read here, never on an io thread: a large session's open does not
    /// hold up requests to open sessions (or the opens of others, up to the pool's size).
    boost::asio::thread_pool loader_;
    boost::asio::thread_pool creator_;  ///< new files: header and directory syncs, grouped
    // Guards book_ and stopped_. Never drop the last reference to a session while holding it:
    // its release takes it.
    std::mutex mu_;
    session_book<session_slot> book_;
    bool stopped_ = false;
};

using lease = session_registry::lease;

}  // namespace agentctx::server
