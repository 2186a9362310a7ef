// libpq's asynchronous API on Asio: PQconnectPoll / PQsendQueryParams / PQconsumeInput / PQgetResult over
// async_wait.
#include "pg_connection.hpp"

#include <agentctx/runtime/error.hpp>
#include <agentctx/runtime/pg_store.hpp>

#include <boost/asio/error.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <libpq-fe.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

#include <regex>

namespace agentctx::runtime {

std::string redact_conninfo(std::string_view conninfo)
{
    // URI form (postgresql://user:secret@host) and key=value form (password=secret).
    static const std::regex uri(R"((://[^:/@?#]*):[^@/?#]*@)");
    static const std::regex kv(R"((password\s*=\s*)('[^']*'|\S+))", std::regex::icase);
    static const std::regex query(R"(([?&]password=)[^&#]*)", std::regex::icase);
    std::string s(conninfo);
    s = std::regex_replace(s, uri, "$1:***@");
    s = std::regex_replace(s, query, "$1***");
    return std::regex_replace(s, kv, "$1***");
}

namespace pg {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

// libpq's messages end with a newline; ours do not.
std::string trimmed(const char* m)
{
    std::string s = m ? m : "";
    while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
        s.pop_back();
    return s;
}

void collect_rows(PGresult* r, rows& out)
{
    const int n = PQntuples(r), m = PQnfields(r);
    for (int i = 0; i < n; ++i)
    {
        auto& row = out.values.emplace_back();
        for (int k = 0; k < m; ++k)
            row.push_back(
                PQgetisnull(r, i, k)
                    ? std::nullopt
                    : std::optional<std::string>(std::string(PQgetvalue(r, i, k), PQgetlength(r, i, k)))
            );
    }
}

}  // namespace

connection::connection(asio::any_io_executor ex, PGconn* c) : conn_(c), socket_(std::move(ex)) {}

connection::~connection()
{
    error_code ignored;
    socket_.close(ignored);  // our duplicate; libpq closes its own socket in PQfinish
    PQfinish(conn_);
}

result<void> connection::watch(int fd, diagnostics& diag)
{
    // Asio waits on a duplicate of libpq's socket, never on libpq's own descriptor. libpq closes
    // its socket when the connection drops, and the number can go to another connection's new
    // socket at once; deregistering that number afterwards (a release or a close of the old
    // descriptor object) would take the other socket out of the reactor, and its next wait
    // would never end. A duplicate is ours until we close it, so no one else can hold its number.
    error_code ignored;
    socket_.close(ignored);
    watched_ = -1;
    const int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (copy < 0)
    {
        broken_ = true;
        diag.message = std::string("duplicating the connection's socket: ") + std::strerror(errno);
        return errc::database_error;
    }
    error_code ec;
    socket_.assign(copy, ec);
    if (ec)
    {
        ::close(copy);
        broken_ = true;
        diag.message = "watching the connection's socket: " + ec.message();
        return errc::database_error;
    }
    watched_ = fd;
    return {};
}

error_code connection::fail(diagnostics& diag, std::string_view what)
{
    broken_ = broken_ || PQstatus(conn_) != CONNECTION_OK;
    diag.message = std::string(what) + ": " + trimmed(PQerrorMessage(conn_));
    return make_error_code(errc::database_error);
}

asio::awaitable<result<void>> connection::wait(bool write, diagnostics& diag)
{
    const int fd = PQsocket(conn_);
    if (fd < 0)
    {
        broken_ = true;
        diag.message = "the connection has no socket";
        co_return errc::database_error;
    }
    // While connecting libpq may close its socket and open another (another address of the
    // host), possibly under the same number: watch afresh at every wait until connected.
    if (!connected_ || fd != watched_)
        if (auto w = watch(fd, diag); !w)
            co_return w.error();
    error_code ec;
    co_await socket_.async_wait(
        write ? asio::posix::descriptor_base::wait_write : asio::posix::descriptor_base::wait_read,
        asio::redirect_error(asio::use_awaitable, ec)
    );
    if (ec)
    {
        broken_ = true;  // cancelled or failed mid-protocol: the state of the exchange is unknown
        diag.message =
            ec == asio::error::operation_aborted ? "cancelled" : "waiting on the socket: " + ec.message();
        co_return ec == asio::error::operation_aborted ? ec : make_error_code(errc::database_error);
    }
    co_return result<void>{};
}

asio::awaitable<result<std::unique_ptr<connection>>> connection::connect(
    asio::any_io_executor ex, std::string conninfo, diagnostics& diag, std::string application_name
)
{
    // The conninfo expands in place of dbname; a name given here overrides the conninfo's.
    const char* keys[] = {"dbname", application_name.empty() ? nullptr : "application_name", nullptr};
    const char* values[] = {conninfo.c_str(), application_name.c_str(), nullptr};
    PGconn* raw = PQconnectStartParams(keys, values, 1);
    if (!raw)
    {
        diag.message = "out of memory creating a PostgreSQL connection";
        co_return errc::database_error;
    }
    std::unique_ptr<connection> c(new connection(ex, raw));
    if (PQstatus(raw) == CONNECTION_BAD)
    {
        c->fail(diag, "connecting to " + redact_conninfo(conninfo));
        co_return errc::database_error;
    }
    // Writing (the startup packet) comes first, as PQconnectPoll's documentation says.
    PostgresPollingStatusType st = PGRES_POLLING_WRITING;
    while (st != PGRES_POLLING_OK)
    {
        if (st == PGRES_POLLING_FAILED)
        {
            c->fail(diag, "connecting to " + redact_conninfo(conninfo));
            co_return errc::database_error;
        }
        if (auto w = co_await c->wait(st == PGRES_POLLING_WRITING, diag); !w)
            co_return w.error();
        st = PQconnectPoll(raw);
    }
    c->connected_ = true;
    if (PQsetnonblocking(raw, 1) != 0)
    {
        c->fail(diag, "setting non-blocking mode");
        co_return errc::database_error;
    }
    co_return std::move(c);
}

asio::awaitable<result<void>> connection::flush(diagnostics& diag)
{
    for (;;)
    {
        const int f = PQflush(conn_);
        if (f == 0)
            co_return result<void>{};
        if (f < 0)
            co_return fail(diag, "sending");
        // Output pending: wait until writable (reading meanwhile, so the server never stalls on us).
        if (auto w = co_await wait(true, diag); !w)
            co_return w.error();
        if (!PQconsumeInput(conn_))
            co_return fail(diag, "reading");
    }
}

asio::awaitable<result<rows>> connection::exec(std::string_view sql, const params& p, diagnostics& diag)
{
    std::vector<const char*> values;
    values.reserve(p.size());
    for (const auto& v : p)
        values.push_back(v ? v->c_str() : nullptr);
    const std::string text(sql);
    // No parameters: the simple protocol, which also runs a script of several statements (the migration).
    const int sent = p.empty() ? PQsendQuery(conn_, text.c_str())
                               : PQsendQueryParams(
                                     conn_,
                                     text.c_str(),
                                     static_cast<int>(values.size()),
                                     nullptr,
                                     values.data(),
                                     nullptr,
                                     nullptr,
                                     0
                                 );
    if (!sent)
        co_return fail(diag, "sending a statement");
    if (auto f = co_await flush(diag); !f)
        co_return f.error();
    rows out;
    std::optional<std::pair<std::string, std::string>> error;  // SQLSTATE, message
    for (;;)
    {
        while (PQisBusy(conn_))
        {
            if (auto w = co_await wait(false, diag); !w)
                co_return w.error();
            if (!PQconsumeInput(conn_))
                co_return fail(diag, "reading");
        }
        PGresult* r = PQgetResult(conn_);
        if (!r)
            break;  // the statement is complete
        const auto status = PQresultStatus(r);
        if (status == PGRES_TUPLES_OK)
            collect_rows(r, out);
        else if (status != PGRES_COMMAND_OK && !error)
        {
            const char* state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
            error.emplace(state ? state : "", trimmed(PQresultErrorMessage(r)));
        }
        PQclear(r);
    }
    if (error)
    {
        diag.field = error->first;
        diag.message = error->second;
        co_return errc::database_error;
    }
    co_return std::move(out);
}

std::string text_array(const std::vector<std::optional<std::string>>& items)
{
    std::string out = "{";
    for (std::size_t i = 0; i < items.size(); ++i)
    {
        if (i)
            out += ',';
        if (!items[i])
        {
            out += "NULL";
            continue;
        }
        out += '"';
        for (char ch : *items[i])
        {
            if (ch == '"' || ch == '\\')
                out += '\\';
            out += ch;
        }
        out += '"';
    }
    return out + "}";
}

int connection::backend_pid() const noexcept
{
    return PQbackendPID(conn_);
}

asio::awaitable<result<PGresult*>> connection::next_result(diagnostics& diag)
{
    while (PQisBusy(conn_))
    {
        if (auto w = co_await wait(false, diag); !w)
            co_return w.error();
        if (!PQconsumeInput(conn_))
            co_return fail(diag, "reading");
    }
    co_return PQgetResult(conn_);
}

bool connection::send_pipeline(const std::vector<transaction>& txns, std::vector<step>& steps)
{
    std::set<std::string, std::less<>> preparing;
    for (std::size_t t = 0; t < txns.size(); ++t)
    {
        for (const auto& st : txns[t])
        {
            std::vector<const char*> values;
            for (const auto& v : st.p)
                values.push_back(v ? v->c_str() : nullptr);
            const std::string sql(st.sql), name(st.name);
            const int n = static_cast<int>(values.size());
            if (!name.empty() && !prepared_.contains(name) && !preparing.contains(name))
            {
                if (!PQsendPrepare(conn_, name.c_str(), sql.c_str(), n, nullptr))
                    return false;
                preparing.insert(name);
                steps.push_back({step::prepare, t, name});
            }
            const int sent =
                name.empty()
                    ? PQsendQueryParams(conn_, sql.c_str(), n, nullptr, values.data(), nullptr, nullptr, 0)
                    : PQsendQueryPrepared(conn_, name.c_str(), n, values.data(), nullptr, nullptr, 0);
            if (!sent)
                return false;
            steps.push_back({step::query, t, {}});
        }
        if (!PQpipelineSync(conn_))
            return false;
        steps.push_back({step::sync, t, {}});
    }
    return true;
}

asio::awaitable<result<void>> connection::read_step(
    const step& s, std::vector<transaction_result>& out, diagnostics& diag
)
{
    auto& txn = out[s.txn];
    if (s.kind == step::query)
        txn.statements.emplace_back();
    for (;;)
    {
        auto got = co_await next_result(diag);
        if (!got)
            co_return got.error();
        PGresult* r = *got;
        if (!r)
        {
            if (s.kind == step::sync)
                co_return fail(diag, "the pipeline lost its sync");
            co_return result<void>{};  // this statement is complete
        }
        const auto status = PQresultStatus(r);
        if (status == PGRES_PIPELINE_SYNC)
        {
            PQclear(r);
            co_return result<void>{};  // a sync has no terminating null result
        }
        if (status == PGRES_TUPLES_OK && s.kind == step::query)
            collect_rows(r, txn.statements.back());
        else if (status == PGRES_COMMAND_OK && s.kind == step::prepare)
            prepared_.insert(s.name);
        else if (status == PGRES_PIPELINE_ABORTED && txn.error.empty())
            txn.error = "an earlier statement of the transaction failed";
        else if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK && status != PGRES_PIPELINE_ABORTED &&
                 txn.sqlstate.empty())
        {
            const char* state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
            txn.sqlstate = state ? state : "XX000";
            txn.error = trimmed(PQresultErrorMessage(r));
        }
        PQclear(r);
    }
}

asio::awaitable<result<std::vector<transaction_result>>> connection::pipeline(
    const std::vector<transaction>& txns, diagnostics& diag
)
{
    if (PQenterPipelineMode(conn_) != 1)
        co_return fail(diag, "entering pipeline mode");
    std::vector<step> steps;
    if (!send_pipeline(txns, steps))
    {
        broken_ = true;  // part of the pipeline may be queued: the protocol state is unknown
        co_return fail(diag, "sending a pipeline");
    }
    if (auto f = co_await flush(diag); !f)
        co_return f.error();
    std::vector<transaction_result> out(txns.size());
    for (const auto& s : steps)
        if (auto r = co_await read_step(s, out, diag); !r)
        {
            broken_ = true;
            co_return r.error();
        }
    if (PQexitPipelineMode(conn_) != 1)
    {
        broken_ = true;
        co_return fail(diag, "leaving pipeline mode");
    }
    co_return std::move(out);
}

std::vector<notification> connection::take_notifications()
{
    std::vector<notification> out;
    while (PGnotify* n = PQnotifies(conn_))
    {
        out.push_back({n->relname, n->extra});
        PQfreemem(n);
    }
    return out;
}

asio::awaitable<result<std::vector<notification>>> connection::wait_notifications(diagnostics& diag)
{
    for (;;)
    {
        if (auto got = take_notifications(); !got.empty())
            co_return std::move(got);
        if (auto w = co_await wait(false, diag); !w)
            co_return w.error();
        if (!PQconsumeInput(conn_))
            co_return fail(diag, "reading notifications");
    }
}

}  // namespace pg
}  // namespace agentctx::runtime
