// The PostgreSQL store: many server nodes on one database, append compare-and-set, a compaction lease,
// NOTIFY.
#pragma once

#include <agentctx/providers/async_call.hpp>
#include <agentctx/runtime/text_store.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace agentctx::runtime {

namespace pg {
class pool;
}

struct pg_pool_options
{
    std::size_t max_connections =
        8;               ///< statements in flight at once (the LISTEN and lease connections are extra)
    bool listen = true;  ///< LISTEN for other nodes' changes (pg_store::on_remote_change)
    /// With `listen`: how often the stored counts of this node's open sessions are compared with
    /// what it has seen, so a lost or late notification leaves a session behind for at most
    /// about this long. Zero: never.
    std::chrono::milliseconds check_interval{1000};
    std::size_t max_group = 128;  ///< appends committed together in one transaction at most
    /// Append transactions in flight at once; 0: half of max_connections (the rest serve
    /// reloads, opens and checks). Fewer flushers make larger groups: fewer commits per append.
    std::size_t max_flushers = 0;
    /// Where a loaded session's text waits for the log to read a line back (lines it has not
    /// materialized: a branch, an export, a plan): one unlinked scratch file for the pool, so the
    /// text is not held in the heap beside the parsed context. Empty: the system's temporary
    /// directory. Text stays in memory when `spill_text` is false or the file cannot be made.
    std::string spill_directory;
    bool spill_text = true;
};

/// What a pool has done, for metrics and tests.
struct pg_pool_stats
{
    std::uint64_t append_groups = 0;      ///< transactions that carried appends (group commit)
    std::uint64_t appends = 0;            ///< appends they carried
    std::uint64_t group_fallbacks = 0;    ///< groups that failed whole and were retried one append at a time
    std::uint64_t listen_reconnects = 0;  ///< LISTEN connections re-established after a failure
    std::uint64_t full_resyncs = 0;       ///< re-syncs of every open session (after a reconnect)
    std::uint64_t checks = 0;             ///< periodic checks of the open sessions' stored counts
    std::uint64_t missed_changes =
        0;                            ///< sessions a check found ahead of every notification (then re-synced)
    std::uint64_t spilled_bytes = 0;  ///< loaded text kept in the spill file now (open logs)
    std::uint64_t spilled_logs = 0;   ///< logs reading their text from it now
    std::uint64_t spill_fallbacks = 0;  ///< loads that kept their text in memory (no spill file)
};

class pg_store;

using pg_open_signature = void(boost::system::error_code, std::unique_ptr<pg_store>, std::string);
using pg_text_signature = void(boost::system::error_code, std::string);

/**
 * @brief A pool of libpq connections driven by Asio (no thread per connection, nothing blocks an
 * io thread), and the schema they use. Sessions of many nodes share one database through it.
 *
 * Every async operation completes with `database_error` and a safe message in the outcome text
 * when the server or the connection fails; the conninfo's password never appears in messages.
 *
 * @par Per-operation cancellation
 * `terminal`, `partial`, `total` while waiting for a pooled connection (nothing was sent):
 * completes with `operation_aborted`.
 */
class pg_pool
{
public:
    /// `conninfo` is a libpq URI (`postgresql://...`) or key=value string.
    pg_pool(boost::asio::any_io_executor ex, std::string conninfo, pg_pool_options opts = {});
    ~pg_pool();
    pg_pool(const pg_pool&) = delete;
    pg_pool& operator=(const pg_pool&) = delete;

    /// Creates the tables, or migrates them to this build's schema version (idempotent; safe
    /// from several nodes at once: an advisory transaction lock serialises the migration).
    /// Completes with the error and a message.
    template <boost::asio::completion_token_for<pg_text_signature> CompletionToken>
    auto async_migrate(CompletionToken&& token)
    {
        return ::agentctx::detail::async_call<pg_text_signature>(token, this, &pg_pool::migrate_impl);
    }

    /// Opens a stored session (`not_found` if there is none with this id); the store holds its text loaded.
    template <boost::asio::completion_token_for<pg_open_signature> CompletionToken>
    auto async_open(std::string session_id, CompletionToken&& token)
    {
        return ::agentctx::detail::async_call<pg_open_signature>(
            token, this, &pg_pool::open_impl, std::move(session_id)
        );
    }

    /// Stores a new session with only its header (`already_exists` if its id is taken).
    template <boost::asio::completion_token_for<pg_open_signature> CompletionToken>
    auto async_create(compaction::session_header header, CompletionToken&& token)
    {
        return ::agentctx::detail::async_call<pg_open_signature>(
            token, this, &pg_pool::create_impl, std::move(header)
        );
    }

    /// Stores a whole Pi JSONL file (v3, validated strictly) as a new session, each line byte
    /// for byte; completes with the session id. `already_exists` if its id is taken.
    template <boost::asio::completion_token_for<pg_text_signature> CompletionToken>
    auto async_import(std::string jsonl, CompletionToken&& token)
    {
        return ::agentctx::detail::async_call<pg_text_signature>(
            token, this, &pg_pool::import_impl, std::move(jsonl)
        );
    }

    /// The session as a Pi JSONL file: the stored lines, byte for byte, one per line.
    template <boost::asio::completion_token_for<pg_text_signature> CompletionToken>
    auto async_export(std::string session_id, CompletionToken&& token)
    {
        return ::agentctx::detail::async_call<pg_text_signature>(
            token, this, &pg_pool::export_impl, std::move(session_id)
        );
    }

    /// Stops the LISTEN connection and drops idle connections (the destructor does it too).
    void close();

    pg_pool_stats stats() const;
    /// The server process (pg_stat_activity.pid) of the LISTEN connection; 0 while there is none.
    int listen_backend_pid() const;

    const std::shared_ptr<pg::pool>& impl() const noexcept { return impl_; }

private:
    void migrate_impl(boost::asio::any_completion_handler<pg_text_signature> h);
    void open_impl(std::string id, boost::asio::any_completion_handler<pg_open_signature> h);
    void create_impl(
        compaction::session_header header, boost::asio::any_completion_handler<pg_open_signature> h
    );
    void import_impl(std::string jsonl, boost::asio::any_completion_handler<pg_text_signature> h);
    void export_impl(std::string id, boost::asio::any_completion_handler<pg_text_signature> h);

    std::shared_ptr<pg::pool> impl_;
    pg_pool_options opts_;
};

/**
 * @brief One session in PostgreSQL. Asynchronous: the session writes through async_write.
 *
 * - Append is compare-and-set on the session's entry count: the row is inserted only if the
 *   store holds exactly the entries the writer knows, in one statement (so acknowledged means
 *   committed, and a concurrent append from another node gets `stale_leaf`, never a duplicate).
 * - The compaction lease is a session-scoped advisory lock held by a connection of its own:
 *   a node that dies releases it with its connection.
 * - Appends of different sessions that arrive together commit in one transaction (group
 *   commit), each under its own compare-and-set: a stale one fails alone with `stale_leaf`.
 * - Committed appends are NOTIFYed; other nodes' stores call on_remote_change. A periodic check
 *   of the stored counts and a re-sync after the LISTEN connection is re-established bound how
 *   long a node can miss a change (pg_pool_options::check_interval).
 */
class pg_store final : public text_store
{
public:
    pg_store(std::shared_ptr<pg::pool> pool, std::string session_id, std::string text, std::size_t entries);
    ~pg_store() override;

    /// The header goes in with async_create: this fails with already_exists.
    result<void> write_header(const compaction::session_header& h, diagnostics& diag) override;
    /// Blocking appends are not offered: fails with io_error (the session uses async_write).
    result<void> append(const compaction::entry& e, diagnostics& diag) override;
    /// Parses the text read by async_open; the log reads lines back from the pool's spill file
    /// (pg_pool_options::spill_directory), or from memory when there is none. A second load
    /// fails with io_error (open the session again to read it again); a reload is async_reload.
    result<compaction::session_log> load(
        const compaction::load_options& opts, compaction::load_report& report, diagnostics& diag
    ) override;

    bool asynchronous() const noexcept override { return true; }
    void async_write(
        boost::asio::any_io_executor ex,
        compaction::entry_ptr e,
        std::size_t known_entries,
        boost::asio::any_completion_handler<store_write_signature> h
    ) override;
    /// All of `entries` in one transaction under one compare-and-set on the count, or none.
    void async_write_batch(
        boost::asio::any_io_executor ex,
        std::vector<compaction::entry_ptr> entries,
        std::size_t known_entries,
        boost::asio::any_completion_handler<store_write_signature> h
    ) override;
    void async_lease(
        boost::asio::any_io_executor ex, boost::asio::any_completion_handler<store_lease_signature> h
    ) override;
    void async_reload(
        boost::asio::any_io_executor ex, boost::asio::any_completion_handler<store_reload_signature> h
    ) override;
    void on_remote_change(std::function<void(std::size_t)> callback) override;
    /// The text from async_reload, its lines kept in the spill file as load() keeps them.
    result<compaction::session_log> load_text(
        std::string text,
        const compaction::load_options& opts,
        compaction::load_report& report,
        diagnostics& diag
    ) override;

    const std::string& session_id() const noexcept { return id_; }

private:
    std::shared_ptr<pg::pool> pool_;
    std::string id_;
    std::size_t entries_ = 0;
    std::uint64_t subscription_ = 0;
    bool loaded_ = false;
};

/// The conninfo with any password replaced by `***`, for logs and messages.
std::string redact_conninfo(std::string_view conninfo);

/// `postgresql://...#SESSION_ID` (or `postgres://`): the conninfo and the session id. False for
/// anything else (a file path).
bool split_pg_reference(const std::string& ref, std::string& conninfo, std::string& session_id);

}  // namespace agentctx::runtime
