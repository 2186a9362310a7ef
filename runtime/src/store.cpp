// The store interface's default asynchronous path: the synchronous calls, completed through the handler's
// executor.
#include <agentctx/runtime/store.hpp>

#include <agentctx/runtime/error.hpp>

#include <boost/asio/append.hpp>
#include <boost/asio/post.hpp>

namespace agentctx::runtime {

namespace asio = boost::asio;

void store::async_write(
    asio::any_io_executor ex,
    compaction::entry_ptr e,
    std::size_t /*known_entries*/,
    asio::any_completion_handler<store_write_signature> h
)
{
    // A single-writer store cannot fall behind: the count is the session's own.
    diagnostics diag;
    auto r = append(*e, diag);
    asio::post(
        ex, asio::append(std::move(h), r ? boost::system::error_code{} : r.error(), std::move(diag.message))
    );
}

result<void> store::append_all(const std::vector<compaction::entry_ptr>& entries, diagnostics& diag)
{
    for (const auto& e : entries)
        if (auto r = append(*e, diag); !r)
            return r;
    return {};
}

namespace {

// The default batch of an asynchronous store: one async_write after the other.
void write_each(
    store& s,
    asio::any_io_executor ex,
    std::vector<compaction::entry_ptr> entries,
    std::size_t next,
    std::size_t known,
    asio::any_completion_handler<store_write_signature> h
)
{
    if (next == entries.size())
        return asio::post(ex, asio::append(std::move(h), boost::system::error_code{}, std::string()));
    auto e = entries[next];
    s.async_write(
        ex,
        std::move(e),
        known + next,
        [&s, ex, entries = std::move(entries), next, known, h = std::move(h)](
            boost::system::error_code ec, std::string message
        ) mutable {
            if (ec)
                return std::move(h)(ec, std::move(message));
            write_each(s, std::move(ex), std::move(entries), next + 1, known, std::move(h));
        }
    );
}

}  // namespace

void store::async_write_batch(
    asio::any_io_executor ex,
    std::vector<compaction::entry_ptr> entries,
    std::size_t known_entries,
    asio::any_completion_handler<store_write_signature> h
)
{
    if (asynchronous())
        return write_each(*this, std::move(ex), std::move(entries), 0, known_entries, std::move(h));
    diagnostics diag;
    auto r = append_all(entries, diag);
    asio::post(
        ex, asio::append(std::move(h), r ? boost::system::error_code{} : r.error(), std::move(diag.message))
    );
}

void store::async_lease(asio::any_io_executor ex, asio::any_completion_handler<store_lease_signature> h)
{
    asio::post(
        ex,
        asio::append(
            std::move(h), boost::system::error_code{}, std::make_shared<store_lease>(), std::string()
        )
    );
}

void store::async_reload(asio::any_io_executor ex, asio::any_completion_handler<store_reload_signature> h)
{
    // A single writer: nothing can have changed behind the session's back.
    asio::post(ex, asio::append(std::move(h), boost::system::error_code{}, std::string()));
}

result<compaction::session_log> store::load_text(
    std::string text, const compaction::load_options& opts, compaction::load_report& report, diagnostics& diag
)
{
    return compaction::session_log::load(std::move(text), opts, report, diag);
}

}  // namespace agentctx::runtime
