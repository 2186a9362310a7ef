// pg_pool's session operations and pg_store: schema migration, open/create/import/export, append CAS, lease,
// reload.
#include <agentctx/runtime/pg_store.hpp>

#include <agentctx/runtime/error.hpp>

#include "pg/pg_connection.hpp"
#include "pg/pg_pool.hpp"

#include <boost/asio/append.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>

#include <utility>

namespace agentctx::runtime {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

// Schema versions, applied in order inside one transaction under an advisory lock; the
// version table says how far a database is. Never edit a shipped step: add one.
const char* const migrations[] = {
    // 1: sessions and their entries, each entry's exact JSONL line (without the newline).
    R"(CREATE TABLE agentctx_sessions (
         id text PRIMARY KEY,
         header text NOT NULL,
         created timestamptz NOT NULL DEFAULT now(),
         last_seq bigint NOT NULL DEFAULT 0);
       CREATE TABLE agentctx_entries (
         session_id text NOT NULL REFERENCES agentctx_sessions(id) ON DELETE CASCADE,
         seq bigint NOT NULL,
         entry_id text NOT NULL,
         parent_id text,
         type text NOT NULL,
         line text NOT NULL,
         PRIMARY KEY (session_id, seq),
         UNIQUE (session_id, entry_id));)",
};
constexpr int schema_version = static_cast<int>(std::size(migrations));

std::string migration_script()
{
    std::string steps;
    for (int v = 1; v <= schema_version; ++v)
        steps += "IF v < " + std::to_string(v) + " THEN " + migrations[v - 1] +
                 " INSERT INTO agentctx_schema VALUES (" + std::to_string(v) + "); END IF;\n";
    const auto newest = std::to_string(schema_version);
    return "SET client_min_messages = warning;\nBEGIN;\n"
           "SELECT pg_advisory_xact_lock(hashtextextended('agentctx:schema', 0));\n"
           "CREATE TABLE IF NOT EXISTS agentctx_schema (version integer NOT NULL);\n"
           "DO $agentctx$ DECLARE v integer; BEGIN\n"
           "SELECT coalesce(max(version), 0) INTO v FROM agentctx_schema;\n"
           "IF v > " +
           newest + " THEN RAISE EXCEPTION 'agentctx schema version % is newer than this build (" + newest +
           ")', v; END IF;\n" + steps + "END $agentctx$;\nCOMMIT;";
}

// The header line and every entry line in sequence order, in one snapshot.
constexpr const char* select_session =
    "SELECT s.header, s.last_seq, coalesce((SELECT string_agg(e.line, E'\\n' ORDER BY e.seq) "
    "FROM agentctx_entries e WHERE e.session_id = s.id), '') FROM agentctx_sessions s WHERE s.id = $1";

constexpr const char* import_session =
    "WITH s AS (INSERT INTO agentctx_sessions (id, header, last_seq) VALUES ($1, $2, $3) "
    "ON CONFLICT (id) DO NOTHING RETURNING id) "
    "INSERT INTO agentctx_entries (session_id, seq, entry_id, parent_id, type, line) "
    "SELECT s.id, t.ord, t.line::json->>'id', t.line::json->>'parentId', t.line::json->>'type', t.line "
    "FROM s, string_to_table($4, E'\\n') WITH ORDINALITY AS t(line, ord) "
    "RETURNING 1";
constexpr const char* create_session =
    "INSERT INTO agentctx_sessions (id, header) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING RETURNING id";
constexpr const char* session_exists = "SELECT 1 FROM agentctx_sessions WHERE id = $1";

std::string without_newline(std::string line)
{
    if (!line.empty() && line.back() == '\n')
        line.pop_back();
    return line;
}

template <class T>
using outcome = std::pair<error_code, T>;

// Runs `aw` on `ex` (the session's strand, or the pool's executor) and completes the handler
// through post to it; the handler's cancellation slot reaches the coroutine.
template <class T>
void spawn(
    const asio::any_io_executor& ex,
    asio::awaitable<std::pair<outcome<T>, std::string>> aw,
    asio::any_completion_handler<void(error_code, T, std::string)> h
)
{
    auto slot = asio::get_associated_cancellation_slot(h);
    asio::co_spawn(
        ex,
        std::move(aw),
        asio::bind_cancellation_slot(
            slot,
            [ex, h = std::move(h)](std::exception_ptr ep, std::pair<outcome<T>, std::string> r) mutable {
                if (ep)
                {
                    r.first = outcome<T>{make_error_code(errc::database_error), T{}};
                    r.second = "internal error in the PostgreSQL store";
                }
                asio::get_associated_cancellation_slot(h).clear();
                asio::post(
                    ex,
                    asio::append(std::move(h), r.first.first, std::move(r.first.second), std::move(r.second))
                );
            }
        )
    );
}

// Same for the two-argument signatures: the string is the value on success, the message on failure.
void spawn_text(
    const asio::any_io_executor& ex,
    asio::awaitable<std::pair<error_code, std::string>> aw,
    asio::any_completion_handler<pg_text_signature> h
)
{
    auto slot = asio::get_associated_cancellation_slot(h);
    asio::co_spawn(
        ex,
        std::move(aw),
        asio::bind_cancellation_slot(
            slot,
            [ex, h = std::move(h)](std::exception_ptr ep, std::pair<error_code, std::string> r) mutable {
                if (ep)
                    r = {make_error_code(errc::database_error), "internal error in the PostgreSQL store"};
                asio::get_associated_cancellation_slot(h).clear();
                asio::post(ex, asio::append(std::move(h), r.first, std::move(r.second)));
            }
        )
    );
}

// One statement on a pooled connection.
asio::awaitable<result<pg::rows>> run(
    pg::pool& pool, std::string_view sql, const pg::params& p, diagnostics& diag
)
{
    auto c = co_await pool.acquire(diag);
    if (!c)
        co_return c.error();
    auto r = co_await (*c)->exec(sql, p, diag);
    pool.release(std::move(*c));
    co_return r;
}

struct loaded
{
    std::string text;
    std::size_t entries = 0;
};

asio::awaitable<result<loaded>> load_session(pg::pool& pool, const std::string& id, diagnostics& diag)
{
    const pg::params params{id};
    auto r = co_await run(pool, select_session, params, diag);
    if (!r)
        co_return r.error();
    if (r->size() == 0)
    {
        diag.message = "no session '" + id + "' in the database";
        co_return errc::not_found;
    }
    const auto& row = r->values[0];
    loaded out;
    out.text = *row[0] + "\n";
    if (!row[2]->empty())
        out.text += *row[2] + "\n";
    out.entries = std::stoull(*row[1]);
    co_return out;
}

// The session's whole text (export, reload), or the error and its message.
asio::awaitable<std::pair<error_code, std::string>> session_text(std::shared_ptr<pg::pool> p, std::string id)
{
    diagnostics diag;
    auto l = co_await load_session(*p, id, diag);
    if (!l)
        co_return std::pair{l.error(), diag.message};
    co_return std::pair{error_code{}, std::move(l->text)};
}

}  // namespace

// ---------------------------------------------------------------------------------------------

pg_pool::pg_pool(asio::any_io_executor ex, std::string conninfo, pg_pool_options opts)
    : impl_(std::make_shared<pg::pool>(std::move(ex), std::move(conninfo), opts)), opts_(opts)
{
    if (opts_.listen)
        impl_->start_listening();
}

pg_pool::~pg_pool()
{
    close();
}

void pg_pool::close()
{
    impl_->close();
}

pg_pool_stats pg_pool::stats() const
{
    return impl_->stats();
}

int pg_pool::listen_backend_pid() const
{
    return impl_->listen_backend_pid();
}

void pg_pool::migrate_impl(asio::any_completion_handler<pg_text_signature> h)
{
    spawn_text(
        impl_->executor(),
        [](std::shared_ptr<pg::pool> p) -> asio::awaitable<std::pair<error_code, std::string>> {
            diagnostics diag;
            const std::string script = migration_script();
            auto r = co_await run(*p, script, pg::params{}, diag);
            if (!r)
                co_return std::pair{r.error(), "migrating the agentctx schema: " + diag.message};
            co_return std::pair{error_code{}, "schema version " + std::to_string(schema_version)};
        }(impl_),
        std::move(h)
    );
}

void pg_pool::open_impl(std::string id, asio::any_completion_handler<pg_open_signature> h)
{
    spawn<std::unique_ptr<pg_store>>(
        impl_->executor(),
        [](std::shared_ptr<pg::pool> p,
           std::string id) -> asio::awaitable<std::pair<outcome<std::unique_ptr<pg_store>>, std::string>> {
            diagnostics diag;
            auto l = co_await load_session(*p, id, diag);
            if (!l)
                co_return std::pair{outcome<std::unique_ptr<pg_store>>{l.error(), nullptr}, diag.message};
            auto st = std::make_unique<pg_store>(p, id, std::move(l->text), l->entries);
            co_return std::pair{
                outcome<std::unique_ptr<pg_store>>{error_code{}, std::move(st)}, std::string()};
        }(impl_, std::move(id)),
        std::move(h)
    );
}

void pg_pool::create_impl(
    compaction::session_header header, asio::any_completion_handler<pg_open_signature> h
)
{
    spawn<std::unique_ptr<pg_store>>(
        impl_->executor(),
        [](std::shared_ptr<pg::pool> p, compaction::session_header header
        ) -> asio::awaitable<std::pair<outcome<std::unique_ptr<pg_store>>, std::string>> {
            diagnostics diag;
            const std::string line = without_newline(to_jsonl_line(header.raw));
            const pg::params params{header.id, line};
            auto r = co_await run(*p, create_session, params, diag);
            if (!r)
                co_return std::pair{outcome<std::unique_ptr<pg_store>>{r.error(), nullptr}, diag.message};
            if (r->size() == 0)
                co_return std::pair{
                    outcome<std::unique_ptr<pg_store>>{make_error_code(errc::already_exists), nullptr},
                    "a session '" + header.id + "' is already stored"};
            auto st = std::make_unique<pg_store>(p, header.id, line + "\n", 0);
            co_return std::pair{
                outcome<std::unique_ptr<pg_store>>{error_code{}, std::move(st)}, std::string()};
        }(impl_, std::move(header)),
        std::move(h)
    );
}

void pg_pool::import_impl(std::string jsonl, asio::any_completion_handler<pg_text_signature> h)
{
    spawn_text(
        impl_->executor(),
        [](std::shared_ptr<pg::pool> p,
           std::string jsonl) -> asio::awaitable<std::pair<error_code, std::string>> {
            diagnostics diag;
            compaction::load_report report;
            auto log = compaction::session_log::load(jsonl, {}, report, diag);
            if (!log)
                co_return std::pair{log.error(), "the file is not a valid session: " + diag.message};
            if (log->source_version() < compaction::current_session_version)
                co_return std::pair{
                    make_error_code(compaction::errc::migration_required),
                    std::string("the file is a v") + std::to_string(log->source_version()) +
                        " session; run agentctx migrate on it first"};
            // The lines exactly as the file holds them.
            const std::string header = jsonl.substr(0, jsonl.find('\n'));
            std::string lines;
            for (std::size_t i = 0; i < log->size(); ++i)
            {
                auto b = log->line_bytes(i, diag);
                if (!b)
                    co_return std::pair{b.error(), diag.message};
                if (i)
                    lines += '\n';
                lines += *b;
            }
            const std::string id = log->header().id;
            const pg::params by_id{id};
            auto exists = co_await run(*p, session_exists, by_id, diag);
            if (!exists)
                co_return std::pair{exists.error(), diag.message};
            if (exists->size() != 0)
                co_return std::pair{
                    make_error_code(errc::already_exists), "a session '" + id + "' is already stored"};
            const pg::params params{id, header, std::to_string(log->size()), lines};
            auto r = co_await run(*p, import_session, params, diag);
            if (!r)
                co_return std::pair{r.error(), diag.message};
            co_return std::pair{error_code{}, id};
        }(impl_, std::move(jsonl)),
        std::move(h)
    );
}

void pg_pool::export_impl(std::string id, asio::any_completion_handler<pg_text_signature> h)
{
    spawn_text(impl_->executor(), session_text(impl_, std::move(id)), std::move(h));
}

// ---------------------------------------------------------------------------------------------

pg_store::pg_store(
    std::shared_ptr<pg::pool> pool, std::string session_id, std::string text, std::size_t entries
)
    : text_store(std::move(text)), pool_(std::move(pool)), id_(std::move(session_id)), entries_(entries)
{}

result<compaction::session_log> pg_store::load(
    const compaction::load_options& opts, compaction::load_report& report, diagnostics& diag
)
{
    if (loaded_)
    {
        diag.message = "PostgreSQL session '" + id_ + "' was loaded already: its text went to that log";
        return errc::io_error;
    }
    loaded_ = true;
    return pool_->load_log(std::exchange(text_, {}), opts, report, diag);
}

result<compaction::session_log> pg_store::load_text(
    std::string text, const compaction::load_options& opts, compaction::load_report& report, diagnostics& diag
)
{
    return pool_->load_log(std::move(text), opts, report, diag);
}

pg_store::~pg_store()
{
    if (subscription_)
        pool_->unsubscribe(id_, subscription_);
}

result<void> pg_store::write_header(const compaction::session_header&, diagnostics& diag)
{
    diag.message = "a PostgreSQL session is created with pg_pool::async_create";
    return errc::already_exists;
}

result<void> pg_store::append(const compaction::entry&, diagnostics& diag)
{
    diag.message = "the PostgreSQL store appends asynchronously only (async_write)";
    return errc::io_error;
}

void pg_store::async_write(
    asio::any_io_executor ex,
    compaction::entry_ptr e,
    std::size_t known_entries,
    asio::any_completion_handler<store_write_signature> h
)
{
    async_write_batch(std::move(ex), {std::move(e)}, known_entries, std::move(h));
}

void pg_store::async_write_batch(
    asio::any_io_executor ex,
    std::vector<compaction::entry_ptr> entries,
    std::size_t known_entries,
    asio::any_completion_handler<store_write_signature> h
)
{
    if (entries.empty())
        return asio::post(ex, asio::append(std::move(h), error_code{}, std::string()));
    // One compare-and-set for the whole batch, committed with whatever other sessions' appends
    // are waiting (group commit).
    auto handler = std::make_shared<asio::any_completion_handler<store_write_signature>>(std::move(h));
    pool_->append(
        {id_,
         known_entries,
         std::move(entries),
         [ex = std::move(ex), handler](error_code ec, std::string message) {
             asio::post(ex, asio::append(std::move(*handler), ec, std::move(message)));
         }}
    );
}

namespace {

// Holds the advisory lock's connection; closing it releases the lock, as a dead node's would.
struct pg_lease final : store_lease
{
    explicit pg_lease(std::unique_ptr<pg::connection> c) : conn(std::move(c)) {}
    std::unique_ptr<pg::connection> conn;
};

}  // namespace

void pg_store::async_lease(asio::any_io_executor ex, asio::any_completion_handler<store_lease_signature> h)
{
    using lease_ptr = std::shared_ptr<store_lease>;
    spawn<lease_ptr>(
        ex,
        [](std::shared_ptr<pg::pool> p,
           std::string id) -> asio::awaitable<std::pair<outcome<lease_ptr>, std::string>> {
            diagnostics diag;
            auto fail = [&](error_code ec, std::string m) {
                return std::pair{outcome<lease_ptr>{ec, nullptr}, std::move(m)};
            };
            auto c = co_await p->dedicated(diag);
            if (!c)
                co_return fail(c.error(), diag.message);
            const pg::params key{"agentctx:" + id};
            auto r = co_await (*c)->exec("SELECT pg_try_advisory_lock(hashtextextended($1, 0))", key, diag);
            if (!r)
                co_return fail(r.error(), diag.message);
            if (r->size() != 1 || r->values[0][0] != std::optional<std::string>("t"))
                co_return fail(
                    make_error_code(errc::compaction_in_progress),
                    "another node is compacting session '" + id + "'"
                );
            co_return std::pair{
                outcome<lease_ptr>{error_code{}, std::make_shared<pg_lease>(std::move(*c))}, std::string()};
        }(pool_, id_),
        std::move(h)
    );
}

void pg_store::async_reload(asio::any_io_executor ex, asio::any_completion_handler<store_reload_signature> h)
{
    spawn_text(ex, session_text(pool_, id_), std::move(h));
}

void pg_store::on_remote_change(std::function<void(std::size_t)> callback)
{
    if (subscription_)
        pool_->unsubscribe(id_, std::exchange(subscription_, 0));
    if (callback)
        subscription_ = pool_->subscribe(id_, std::move(callback), entries_);
}

bool split_pg_reference(const std::string& ref, std::string& conninfo, std::string& session_id)
{
    if (!ref.starts_with("postgresql://") && !ref.starts_with("postgres://"))
        return false;
    const auto hash = ref.rfind('#');
    conninfo = ref.substr(0, hash);
    session_id = hash == std::string::npos ? std::string() : ref.substr(hash + 1);
    return true;
}

}  // namespace agentctx::runtime
