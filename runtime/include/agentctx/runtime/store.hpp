// The persistence interface of a session: load the log, append entries as JSONL lines.
#pragma once

#include <agentctx/compaction/entry.hpp>
#include <agentctx/compaction/error.hpp>
#include <agentctx/compaction/session_log.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace agentctx::runtime {

using compaction::diagnostics;
using compaction::result;

/// How often appended lines are forced to stable storage.
enum class fsync_policy
{
    never,          ///< leave it to the OS
    always,         ///< fdatasync after every append
    on_compaction,  ///< fdatasync after appends of compaction entries (the default)
};

/// A held compaction lease (store::async_lease); destroying it releases the lease.
class store_lease
{
public:
    virtual ~store_lease() = default;
};

/// Completion of an asynchronous store write: the error and, on failure, a safe message.
using store_write_signature = void(boost::system::error_code, std::string);
using store_lease_signature = void(boost::system::error_code, std::shared_ptr<store_lease>, std::string);
/// The session's whole JSONL text as stored now (header line first).
using store_reload_signature = void(boost::system::error_code, std::string);

/// A session's persistent form. Every store holds exactly what a JSONL file would hold, so
/// loading from any store reopens the session identically.
class store
{
public:
    virtual ~store() = default;

    /// Writes the header line of a new session. Fails if the store already has content.
    virtual result<void> write_header(const compaction::session_header& h, diagnostics& diag) = 0;

    /// Appends one entry as one complete line. Durable (per policy) when it returns.
    virtual result<void> append(const compaction::entry& e, diagnostics& diag) = 0;

    /// Appends several entries, in order, all or none: the stores of this library write them in
    /// one step (one write(2) for a file, one transaction for PostgreSQL). The default appends
    /// them one by one through append(), so a store that overrides only append() may keep a
    /// prefix of the batch when it fails part-way.
    virtual result<void> append_all(const std::vector<compaction::entry_ptr>& entries, diagnostics& diag);

    /// Reads the whole session. The log materializes entries from this store on demand.
    virtual result<compaction::session_log> load(
        const compaction::load_options& opts, compaction::load_report& report, diagnostics& diag
    ) = 0;

    // The asynchronous path: the session writes through it for every store, and keeps every
    // other write of the session waiting while one is in flight, so validation and snapshot swap
    // see no interleaved append. Each call runs on `ex` and completes through post to `ex` (the
    // session's strand). The defaults run the synchronous calls.

    /// True when the store writes only through async_write (never blocking an io thread).
    virtual bool asynchronous() const noexcept { return false; }

    /// Appends `e` if the store holds exactly `known_entries` entries (compare-and-set on the
    /// session's last sequence); otherwise fails with `stale_leaf` and writes nothing. Completes
    /// once the line is committed.
    virtual void async_write(
        boost::asio::any_io_executor ex,
        compaction::entry_ptr e,
        std::size_t known_entries,
        boost::asio::any_completion_handler<store_write_signature> h
    );

    /// async_write for several entries: appends all of `entries` in order if the store holds
    /// exactly `known_entries` entries, or nothing (`stale_leaf` when another writer was first).
    /// The default runs append_all() for a synchronous store and chains async_write otherwise.
    virtual void async_write_batch(
        boost::asio::any_io_executor ex,
        std::vector<compaction::entry_ptr> entries,
        std::size_t known_entries,
        boost::asio::any_completion_handler<store_write_signature> h
    );

    /// Takes the session's compaction lease; `compaction_in_progress` when another holder has
    /// it. The default is a lease that excludes nothing beyond what the store already does.
    virtual void async_lease(
        boost::asio::any_io_executor ex, boost::asio::any_completion_handler<store_lease_signature> h
    );

    /// The whole session as stored now, for a session that fell behind another writer. The
    /// default (a single writer, which cannot fall behind) completes with an empty text: nothing new.
    virtual void async_reload(
        boost::asio::any_io_executor ex, boost::asio::any_completion_handler<store_reload_signature> h
    );

    /// Parses a session's whole text (from async_reload) into a log. The default keeps the text
    /// in memory for the log to read lines back from; a store may keep it elsewhere.
    virtual result<compaction::session_log> load_text(
        std::string text,
        const compaction::load_options& opts,
        compaction::load_report& report,
        diagnostics& diag
    );

    /// Called (from any thread) with the stored entry count whenever another writer changed the
    /// session. Stores with a single writer never call it. The callback must outlive the store
    /// or be replaced by an empty one.
    virtual void on_remote_change(std::function<void(std::size_t)> /*callback*/) {}
};

/// `JSON.stringify(raw) + "\n"`: exactly the line Pi writes for an entry or header.
std::string to_jsonl_line(const boost::json::object& raw);

}  // namespace agentctx::runtime
