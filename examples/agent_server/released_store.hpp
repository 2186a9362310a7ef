// A session's store that tells when it is gone, so the registry knows its descriptor is released.
#pragma once

#include <agentctx/runtime/store.hpp>

#include <functional>
#include <memory>

namespace agentctx::server {

// The session's store, which tells when it is gone: a session is destroyed only once nothing
// references it, and its store is its last member to go, so this runs when the session's
// descriptors (its file with the lock, and the log's reader) are closed.
class released_store final : public runtime::store
{
public:
    explicit released_store(std::unique_ptr<runtime::store> inner) : inner_(std::move(inner)) {}
    ~released_store() override
    {
        inner_.reset();  // closes the file and releases its lock
        if (on_release_)
            on_release_();
    }
    released_store(const released_store&) = delete;
    released_store& operator=(const released_store&) = delete;

    /// Set once the session is open (a failed open must not report a release).
    void on_release(std::function<void()> f) { on_release_ = std::move(f); }

    compaction::result<void> write_header(const compaction::session_header& h, compaction::diagnostics& diag)
        override
    {
        return inner_->write_header(h, diag);
    }
    compaction::result<void> append(const compaction::entry& e, compaction::diagnostics& diag) override
    {
        return inner_->append(e, diag);
    }
    compaction::result<void> append_all(
        const std::vector<compaction::entry_ptr>& entries, compaction::diagnostics& diag
    ) override
    {
        return inner_->append_all(entries, diag);
    }
    compaction::result<compaction::session_log> load(
        const compaction::load_options& opts, compaction::load_report& report, compaction::diagnostics& diag
    ) override
    {
        return inner_->load(opts, report, diag);
    }
    // A shared store's asynchronous path passes straight through.
    bool asynchronous() const noexcept override { return inner_->asynchronous(); }
    void async_write(
        boost::asio::any_io_executor ex,
        compaction::entry_ptr e,
        std::size_t known,
        boost::asio::any_completion_handler<runtime::store_write_signature> h
    ) override
    {
        inner_->async_write(std::move(ex), std::move(e), known, std::move(h));
    }
    void async_write_batch(
        boost::asio::any_io_executor ex,
        std::vector<compaction::entry_ptr> entries,
        std::size_t known,
        boost::asio::any_completion_handler<runtime::store_write_signature> h
    ) override
    {
        inner_->async_write_batch(std::move(ex), std::move(entries), known, std::move(h));
    }
    void async_lease(
        boost::asio::any_io_executor ex, boost::asio::any_completion_handler<runtime::store_lease_signature> h
    ) override
    {
        inner_->async_lease(std::move(ex), std::move(h));
    }
    void async_reload(
        boost::asio::any_io_executor ex,
        boost::asio::any_completion_handler<runtime::store_reload_signature> h
    ) override
    {
        inner_->async_reload(std::move(ex), std::move(h));
    }
    void on_remote_change(std::function<void(std::size_t)> callback) override
    {
        inner_->on_remote_change(std::move(callback));
    }

private:
    std::unique_ptr<runtime::store> inner_;
    std::function<void()> on_release_;
};

}  // namespace agentctx::server
