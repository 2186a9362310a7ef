// One libpq connection driven by Asio: non-blocking connect and queries, its socket waited on with
// async_wait.
#pragma once

#include <agentctx/compaction/error.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

struct pg_conn;
struct pg_result;

namespace agentctx::runtime::pg {

using compaction::diagnostics;
using compaction::result;

/// A statement's rows as text (libpq's text format); nullopt is SQL NULL.
struct rows
{
    std::vector<std::vector<std::optional<std::string>>> values;
    std::size_t size() const noexcept { return values.size(); }
};

using params = std::vector<std::optional<std::string>>;

/// One statement of a pipeline. A named one is prepared once per connection (in the same
/// pipeline, no extra round trip) and then executed by name.
struct statement
{
    std::string_view name;  ///< empty: unnamed, parsed each time
    std::string_view sql;
    params p;
};

/// Statements that commit or fail together: a pipeline ends each with a sync.
using transaction = std::vector<statement>;

/// The outcome of one transaction of a pipeline: each statement's rows, or the first error.
struct transaction_result
{
    std::vector<rows> statements;
    std::string sqlstate;  ///< empty when it committed
    std::string error;
    bool ok() const noexcept { return error.empty() && sqlstate.empty(); }
};

/// A PostgreSQL array literal of text elements, `{"a","b\\"c",NULL}`: a whole list as one parameter.
std::string text_array(const std::vector<std::optional<std::string>>& items);

/// A NOTIFY received on this connection.
struct notification
{
    std::string channel;
    std::string payload;
};

/**
 * @brief A connection in non-blocking mode: no call here blocks the calling thread.
 *
 * One operation at a time (the pool hands a connection to one user). A connection whose
 * operation was cancelled or failed at the transport is broken(): the pool discards it, since
 * its protocol state is unknown.
 *
 * @par Per-operation cancellation
 * Every coroutine stops at its next wait on `terminal`/`partial`/`total` cancellation of the
 * awaiting coroutine, completes with `operation_aborted` and leaves the connection broken.
 */
class connection
{
public:
    ~connection();
    connection(const connection&) = delete;
    connection& operator=(const connection&) = delete;

    /// Connects with libpq's conninfo/URI; a non-empty `application_name` names the connection
    /// in pg_stat_activity. Errors: database_error (the message names no password).
    static boost::asio::awaitable<result<std::unique_ptr<connection>>> connect(
        boost::asio::any_io_executor ex,
        std::string conninfo,
        diagnostics& diag,
        std::string application_name = {}
    );

    /// Runs one statement with text parameters ($1, $2, ...). Errors: database_error with the
    /// server's message and `diag.field` = SQLSTATE; operation_aborted on cancellation.
    boost::asio::awaitable<result<rows>> exec(std::string_view sql, const params& p, diagnostics& diag);

    /// Sends every transaction in one pipeline (libpq pipeline mode: one write, results in
    /// order) and reads all results. Fails only at the transport (then the connection is
    /// broken); statement errors are in each transaction_result.
    boost::asio::awaitable<result<std::vector<transaction_result>>> pipeline(
        const std::vector<transaction>& txns, diagnostics& diag
    );

    /// The server process serving this connection (pg_stat_activity.pid).
    int backend_pid() const noexcept;

    /// Waits until at least one notification has arrived (LISTEN first with exec).
    boost::asio::awaitable<result<std::vector<notification>>> wait_notifications(diagnostics& diag);

    bool broken() const noexcept { return broken_; }

private:
    connection(boost::asio::any_io_executor ex, pg_conn* c);
    boost::asio::awaitable<result<void>> wait(bool write, diagnostics& diag);
    /// Points socket_ at a duplicate of libpq's socket `fd` (see the .cpp for why a duplicate).
    result<void> watch(int fd, diagnostics& diag);
    boost::asio::awaitable<result<void>> flush(diagnostics& diag);
    boost::system::error_code fail(diagnostics& diag, std::string_view what);
    std::vector<notification> take_notifications();
    boost::asio::awaitable<result<pg_result*>> next_result(diagnostics& diag);
    struct step
    {
        enum kind_t
        {
            prepare,
            query,
            sync
        } kind;
        std::size_t txn;
        std::string name;  ///< the statement a prepare step prepares
    };
    bool send_pipeline(const std::vector<transaction>& txns, std::vector<step>& steps);
    boost::asio::awaitable<result<void>> read_step(
        const step& s, std::vector<transaction_result>& out, diagnostics& diag
    );

    pg_conn* conn_;
    boost::asio::posix::stream_descriptor socket_;  ///< a duplicate of libpq's socket, ours to close
    int watched_ = -1;                              ///< libpq's socket number that socket_ duplicates
    bool connected_ = false;  ///< past PQconnectPoll: libpq keeps its socket from here on
    bool broken_ = false;
    std::set<std::string, std::less<>> prepared_;  ///< statement names prepared on this connection
};

}  // namespace agentctx::runtime::pg
