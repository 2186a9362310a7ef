// A PostgreSQL connection whose server went away must not take another connection's socket with it.
#include "pg/pg_connection.hpp"
#include "pg_test_support.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace {

using namespace agentctx;
using runtime::pg::connection;
namespace asio = boost::asio;

struct progress
{
    int stage = 0;
    std::string failure;
};

asio::awaitable<void> drop_then_reuse(asio::any_io_executor ex, std::string url, progress& p)
{
    compaction::diagnostics diag;
    auto killer = co_await connection::connect(ex, url, diag);
    auto dropped = co_await connection::connect(ex, url, diag);
    if (!killer || !dropped)
    {
        p.failure = "connect: " + diag.message;
        co_return;
    }
    const std::string pid = std::to_string((*dropped)->backend_pid());
    // Waits (up to 5 s) until the backend has exited.
    const runtime::pg::params args{pid};
    if (!co_await (*killer)->exec("SELECT pg_terminate_backend($1::int, 5000)", args, diag))
    {
        p.failure = "terminate: " + diag.message;
        co_return;
    }
    p.stage = 1;
    if (co_await (*dropped)->exec("SELECT 1", {}, diag))  // libpq sees the drop, closes its socket
    {
        p.failure = "a query on a terminated backend succeeded";
        co_return;
    }
    auto fresh = co_await connection::connect(ex, url, diag);
    if (!fresh)
    {
        p.failure = "connect again: " + diag.message;
        co_return;
    }
    dropped->reset();  // the dropped connection goes while the fresh one holds its number
    p.stage = 2;
    if (!co_await (*fresh)->exec("SELECT 2", {}, diag))
        p.failure = "the fresh connection's query failed: " + diag.message;
    p.stage = 3;
}

// libpq closes its socket when the server drops the connection; the next socket this process
// opens (the new connection's) gets the lowest free number, that one. Closing the dropped
// connection afterwards must leave the new one's waits alive: before the fix, the dropped one
// deregistered the number from the reactor and the new connection's query never ended.
TEST(pg_connection, a_dropped_connection_leaves_the_socket_that_reuses_its_number_working)
{
    std::string why;
    const auto url = test::pg_conninfo(why);
    if (!url)
        GTEST_SKIP() << why;
    asio::io_context ioc;
    progress p;
    asio::co_spawn(ioc, drop_then_reuse(ioc.get_executor(), *url, p), asio::detached);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (p.stage < 3 && p.failure.empty() && std::chrono::steady_clock::now() < until)
        ioc.run_one_for(std::chrono::milliseconds(50));
    EXPECT_EQ(p.failure, "");
    EXPECT_EQ(p.stage, 3) << "the fresh connection's query never ended (stage " << p.stage << ")";
}

}  // namespace
