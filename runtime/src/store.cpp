// The store interface's default asynchronous path: the synchronous calls, completed through the handler's executor.
#include <agentctx/runtime/store.hpp>

#include <agentctx/runtime/error.hpp>

#include <boost/asio/append.hpp>
#include <boost/asio/post.hpp>

namespace agentctx::runtime {

namespace asio = boost::asio;

void store::async_write(asio::any_io_executor ex, compaction::entry_ptr e, std::size_t /*known_entries*/,
                        asio::any_completion_handler<store_write_signature> h)
{
    // A single-writer store cannot fall behind: the count is the session's own.
    diagnostics diag;
    auto r = append(*e, diag);
    asio::post(ex, asio::append(std::move(h), r ? boost::system::error_code{} : r.error(), std::move(diag.message)));
}

void store::async_lease(asio::any_io_executor ex, asio::any_completion_handler<store_lease_signature> h)
{
    asio::post(ex, asio::append(std::move(h), boost::system::error_code{}, std::make_shared<store_lease>(), std::string()));
}

void store::async_reload(asio::any_io_executor ex, asio::any_completion_handler<store_reload_signature> h)
{
    // A single writer: nothing can have changed behind the session's back.
    asio::post(ex, asio::append(std::move(h), boost::system::error_code{}, std::string()));
}

}  // namespace agentctx::runtime
