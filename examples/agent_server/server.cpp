// The agent server: Beast coroutines per connection, a registry of sessions, SSE subscribers.
#include "server.hpp"

#include "accept_policy.hpp"
#include "auth.hpp"
#include "metrics.hpp"
#include "request_json.hpp"
#include "server_error.hpp"

#include <agentctx/compaction/json_text.hpp>
#include <agentctx/compaction/token_estimate.hpp>
#include <agentctx/compaction/unresolved_calls.hpp>
#include <agentctx/providers/chat_messages.hpp>
#include <agentctx/runtime/error.hpp>
#include <agentctx/runtime/jsonl_store.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json/parse.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <map>
#include <mutex>
#include <random>
#include <stdexcept>

#include <sys/socket.h>

namespace agentctx::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using asio::ip::tcp;
using boost::system::error_code;

namespace {

using event_channel = asio::experimental::concurrent_channel<void(error_code, std::string)>;
/// Closed (never sent on) once a closing session has released its descriptors.
using release_channel = asio::experimental::concurrent_channel<void(error_code)>;

const error_code too_many_open_sessions = make_error_code(errc::too_many_open_sessions);
const error_code out_of_descriptors = make_error_code(errc::out_of_descriptors);

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

    compaction::result<void> write_header(const compaction::session_header& h, compaction::diagnostics& diag) override
    {
        return inner_->write_header(h, diag);
    }
    compaction::result<void> append(const compaction::entry& e, compaction::diagnostics& diag) override
    {
        return inner_->append(e, diag);
    }
    compaction::result<compaction::session_log> load(const compaction::load_options& opts, compaction::load_report& report,
                                                     compaction::diagnostics& diag) override
    {
        return inner_->load(opts, report, diag);
    }
    // A shared store's asynchronous path passes straight through.
    bool asynchronous() const noexcept override { return inner_->asynchronous(); }
    void async_write(asio::any_io_executor ex, compaction::entry_ptr e, std::size_t known,
                     asio::any_completion_handler<runtime::store_write_signature> h) override
    {
        inner_->async_write(std::move(ex), std::move(e), known, std::move(h));
    }
    void async_lease(asio::any_io_executor ex, asio::any_completion_handler<runtime::store_lease_signature> h) override
    {
        inner_->async_lease(std::move(ex), std::move(h));
    }
    void async_reload(asio::any_io_executor ex, asio::any_completion_handler<runtime::store_reload_signature> h) override
    {
        inner_->async_reload(std::move(ex), std::move(h));
    }
    void on_remote_change(std::function<void(std::size_t)> callback) override { inner_->on_remote_change(std::move(callback)); }

private:
    std::unique_ptr<runtime::store> inner_;
    std::function<void()> on_release_;
};

// Session ids become file names: only a safe alphabet, so no path can be injected.
bool valid_id(std::string_view id)
{
    if (id.empty() || id.size() > 64)
        return false;
    return std::all_of(id.begin(), id.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; });
}

std::string new_session_id()
{
    thread_local std::mt19937_64 rng{std::random_device{}()};
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(rng()));
    return buf;
}

json::object error_body(std::string_view code, std::string_view message)
{
    return {{"error", json::object{{"code", code}, {"message", message}}}};
}

// "/v1/sessions/x/events" -> {"v1", "sessions", "x", "events"}.
std::vector<std::string> split_target(std::string_view target)
{
    target = target.substr(0, target.find('?'));  // the query is read by the route that takes one
    std::vector<std::string> parts;
    for (std::size_t p = 1; p <= target.size();)
    {
        const auto slash = target.find('/', p);
        parts.emplace_back(target.substr(p, slash == std::string_view::npos ? std::string_view::npos : slash - p));
        if (slash == std::string_view::npos)
            break;
        p = slash + 1;
    }
    return parts;
}

// The value of `name` in the target's query string (nullopt when absent, "" when empty; no
// percent-decoding: the values taken are plain words).
std::optional<std::string> query_param(std::string_view target, std::string_view name)
{
    const auto q = target.find('?');
    if (q == std::string_view::npos)
        return std::nullopt;
    for (std::string_view rest = target.substr(q + 1); !rest.empty();)
    {
        const auto amp = rest.find('&');
        const auto pair = rest.substr(0, amp);
        const auto eq = pair.find('=');
        if (pair.substr(0, eq) == name)
            return std::string(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1));
        rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    }
    return std::nullopt;
}

// What a client may learn about a failure to open or create a session: store diagnostics name
// files by absolute path, so only load diagnostics (which name lines) are passed on.
std::string public_message(const error_code& ec, const compaction::diagnostics& diag)
{
    namespace rt = agentctx::runtime;
    if (ec.category() == compaction::error_category())
        return diag.message;
    if (ec == rt::make_error_code(rt::errc::not_found))
        return "no such session";
    if (ec == rt::make_error_code(rt::errc::session_locked))
        return "the session file is locked by another writer";
    if (ec == rt::make_error_code(rt::errc::already_exists))
        return "the session exists already";
    if (ec == rt::make_error_code(rt::errc::database_error))
        return "the session database could not be read or written";
    if (ec == out_of_descriptors)
        return "the server is out of file descriptors; retry later";
    return "the session file could not be read or written";
}

// Store failures inside other operations (a compaction's append) name the session file: keep
// only its name, relative to the data directory.
std::string without_data_dir(std::string message, const std::string& dir)
{
    if (dir.empty())
        return message;
    for (auto p = message.find(dir); p != std::string::npos; p = message.find(dir, p))
        message.erase(p, dir.size());
    return message;
}

// Only entries that may follow a header can be appended through the API.
bool appendable_type(const json::object& body)
{
    const auto* t = body.if_contains("type");
    return !(t && t->is_string() && (t->get_string() == "session" || t->get_string() == "compaction"));
}

std::string event_json(const runtime::session_event& e, std::string& name)
{
    json::object o;
    if (const auto* r = std::get_if<runtime::remote_change_event>(&e))
    {
        // Another node appended or compacted (a shared PostgreSQL store).
        name = "remote_change";
        o["entries"] = r->entries;
        json::array ids;
        for (const auto& id : r->compactions)
            ids.emplace_back(id);
        o["compactions"] = std::move(ids);
    }
    else if (const auto* s = std::get_if<runtime::compaction_start_event>(&e))
    {
        name = "compaction_start";
        o["reason"] = runtime::to_string(s->reason);
    }
    else if (const auto* end = std::get_if<runtime::compaction_end_event>(&e))
    {
        name = "compaction_end";
        o["reason"] = runtime::to_string(end->reason);
        o["aborted"] = end->aborted;
        o["willRetry"] = end->will_retry;
        if (end->result)
            o["result"] = json::object{{"firstKeptEntryId", end->result->first_kept_entry_id},
                                       {"tokensBefore", end->result->tokens_before},
                                       {"tokensAfter", end->result->tokens_after}};
        if (end->error_message)
            o["errorMessage"] = *end->error_message;
    }
    else if (const auto* p = std::get_if<runtime::compaction_progress_event>(&e))
    {
        // Piecewise summaries: counts only, never source or note text.
        name = "compaction_progress";
        o["completed"] = p->completed;
        o["remaining"] = p->remaining;
    }
    else if (const auto* f = std::get_if<runtime::compaction_finished_event>(&e))
    {
        name = "compaction_finished";
        o["reason"] = runtime::to_string(f->reason);
        o["evidence"] = runtime::to_json(f->evidence);
    }
    return compaction::stringify(o);
}

}  // namespace

struct agent_server::impl : std::enable_shared_from_this<impl>
{
    impl(asio::io_context& c, server_options o)
        : ioc(c), opts(std::move(o)), loader(std::max<std::size_t>(opts.open_threads, 1)), data_dir_prefix(std::filesystem::absolute(opts.data_dir).lexically_normal().string() + "/"),
          acceptor(c)
    {
    }

    struct session_slot
    {
        std::shared_ptr<runtime::session> session;  ///< null once closing
        std::mutex mu;
        std::vector<std::weak_ptr<event_channel>> subscribers;
        std::shared_ptr<release_channel> released;
        std::chrono::steady_clock::time_point compaction_started;  ///< on the session's strand
        /// Closed once the open finished (then `session` is set, or `open_error` says why not).
        std::shared_ptr<release_channel> opened;
        error_code open_error;
        std::string open_message;  ///< the failed open's diagnostics message
        // Guarded by impl::mu.
        std::size_t busy = 0;         ///< leases: requests, automatic checks, event streams
        std::uint64_t last_used = 0;  ///< the tick of the last lease's end
        bool closing = false;         ///< closed, waiting for its descriptors to be released
        bool opening = false;         ///< its file is being opened on the loader pool
    };

    // What the accept loop may touch of a connection: closing it to make room while it is idle.
    struct connection_state
    {
        asio::any_io_executor strand;         ///< the connection's strand
        beast::tcp_stream* stream = nullptr;  ///< used on the strand only; null once the connection ended
        std::uint64_t idle_key = 0;           ///< its key in idle_connections while idle (guarded by conn_mu)
    };

    // A session in use: while any lease on it lives it is not closed to make room.
    struct lease_state
    {
        std::shared_ptr<impl> owner;
        std::shared_ptr<session_slot> slot;
        lease_state(std::shared_ptr<impl> o, std::shared_ptr<session_slot> s) : owner(std::move(o)), slot(std::move(s)) {}
        ~lease_state()
        {
            std::lock_guard lock(owner->mu);
            --slot->busy;
            slot->last_used = ++owner->tick;
        }
        lease_state(const lease_state&) = delete;
        lease_state& operator=(const lease_state&) = delete;
        runtime::session& session() const { return *slot->session; }
    };
    using lease = std::shared_ptr<lease_state>;

    asio::io_context& ioc;
    server_options opts;
    /// Session files are read here, never on an io thread: a large session's open does not
    /// hold up requests to open sessions (or the opens of others, up to the pool's size).
    asio::thread_pool loader;
    std::string data_dir_prefix;  ///< "/abs/data/dir/", removed from messages sent to clients
    tcp::acceptor acceptor;
    // Guards `sessions`, `tick` and the slots' registry fields. Never drop the last reference
    // to a session while holding it: its release takes it.
    std::mutex mu;
    std::map<std::string, std::shared_ptr<session_slot>> sessions;  ///< open and closing sessions
    std::uint64_t tick = 0;
    std::atomic<bool> stopped{false};
    std::atomic<std::uint64_t> accept_failures{0};
    std::atomic<std::size_t> connections{0};
    // Connections waiting for their next request, longest idle first (keyed by when they began).
    std::mutex conn_mu;
    std::map<std::uint64_t, std::shared_ptr<connection_state>> idle_connections;
    std::uint64_t idle_sequence = 0;  ///< guarded by conn_mu
    server_metrics metrics;

    // One request answered: its counter, and one structured line at debug (route labels never
    // carry ids or unknown paths; nothing of the body or the headers is logged).
    void record(const http::request<http::string_body>& req, unsigned status, std::chrono::steady_clock::time_point started)
    {
        const auto route = route_label(req.method_string(), req.target());
        metrics.request(route, status);
        spdlog::debug("request route=\"{}\" status={} body_bytes={} duration_ms={:.3f}", route, status, req.body().size(),
                      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count());
    }

    std::size_t active_sessions()
    {
        std::lock_guard lock(mu);
        std::size_t n = 0;
        for (const auto& [id, slot] : sessions)
            n += slot->session && !slot->closing ? 1 : 0;
        return n;
    }

    runtime::session_config config()
    {
        runtime::session_config c;
        c.settings = opts.settings;
        c.redaction = opts.redaction;
        c.pins = opts.pins;
        c.model = opts.model;
        if (opts.make_summarizer)
            c.summarizer = opts.make_summarizer(ioc.get_executor());
        return c;
    }

    void attach(const std::shared_ptr<session_slot>& slot)
    {
        slot->session->on_compacted([weak = weak_from_this()](const runtime::compacted_event& e) {
            auto self = weak.lock();
            if (!self)
                return;
            std::int64_t calls = 0;
            if (const auto* d = e.entry.details.if_object())
                if (const auto* ours = d->if_contains("agentctx"); ours && ours->is_object())
                    if (const auto* c = ours->get_object().if_contains("modelCalls"); c && c->is_int64())
                        calls = c->get_int64();
            const auto u = e.entry.usage.value_or(compaction::usage{});
            self->metrics.model_usage(calls, u.input, u.output, u.cache_read, u.cache_write);
        });
        slot->session->on_event([weak = std::weak_ptr(slot), owner = weak_from_this(),
                                 dir = data_dir_prefix](const runtime::session_event& e) {
            auto s = weak.lock();
            if (!s)
                return;
            if (std::holds_alternative<runtime::compaction_start_event>(e))
                s->compaction_started = std::chrono::steady_clock::now();
            else if (const auto* end = std::get_if<runtime::compaction_end_event>(&e))
                if (auto self = owner.lock())
                    self->metrics.compaction(
                        runtime::to_string(end->reason), end->result ? "committed" : end->aborted ? "cancelled" : "failed",
                        std::chrono::duration<double>(std::chrono::steady_clock::now() - s->compaction_started).count());
            std::string name;
            const std::string data = without_data_dir(event_json(e, name), dir);
            const std::string frame = "event: " + name + "\ndata: " + data + "\n\n";
            std::lock_guard lock(s->mu);
            for (auto& w : s->subscribers)
                if (auto ch = w.lock())
                    ch->try_send(error_code{}, frame);  // a slow subscriber misses events, never blocks the session
        });
    }

    // Takes a lease on an open slot. Caller holds `mu`.
    lease take(const std::shared_ptr<session_slot>& slot)
    {
        ++slot->busy;
        return std::make_shared<lease_state>(shared_from_this(), slot);
    }

    using store_factory = std::function<compaction::result<std::unique_ptr<runtime::store>>(compaction::diagnostics&)>;

    // Registers an opening slot for `id` and starts its open; the caller's lease keeps it from
    // being closed to make room before the caller has used it. Caller holds `mu`.
    lease begin_open(const std::string& id, store_factory make_store)
    {
        auto slot = std::make_shared<session_slot>();
        slot->opened = std::make_shared<release_channel>(ioc.get_executor());
        slot->opening = true;
        sessions.emplace(id, slot);
        auto held = take(slot);
        asio::co_spawn(ioc, open_session(shared_from_this(), id, slot, std::move(make_store)), asio::detached);
        return held;
    }

    struct open_result
    {
        compaction::result<std::shared_ptr<runtime::session>> session = make_error_code(runtime::errc::not_found);
        released_store* notifier = nullptr;
        compaction::diagnostics diag;
    };

    // Opens (or creates) the session's file and loads it on the loader pool, then publishes the
    // slot on the io executor and wakes everyone waiting for it. Not cancellable: every waiter
    // depends on it, and it ends once the blocking read ends.
    static asio::awaitable<void> open_session(std::shared_ptr<impl> self, std::string id, std::shared_ptr<session_slot> slot,
                                              store_factory make_store)
    {
        auto work = [make_store = std::move(make_store), ex = self->ioc.get_executor(), config = self->config(),
                     before = self->opts.before_load, id]() -> asio::awaitable<open_result> {
            open_result r;
            if (before)
                before(id);
            auto store = make_store(r.diag);
            if (!store)
            {
                const int err = errno;  // what the failed open or create left, read before anything else runs
                const bool exhausted = store.error() == runtime::make_error_code(runtime::errc::io_error) &&
                                       (err == EMFILE || err == ENFILE);
                r.session = exhausted ? out_of_descriptors : store.error();
                co_return r;
            }
            auto wrapped = std::make_unique<released_store>(std::move(*store));
            r.notifier = wrapped.get();
            r.session = runtime::session::open(ex, std::move(wrapped), config, r.diag);
            co_return r;
        };
        open_result r = co_await asio::co_spawn(self->loader, std::move(work), asio::use_awaitable);
        {
            std::lock_guard lock(self->mu);
            slot->opening = false;
            if (!r.session)
            {
                slot->open_error = r.session.error();
                slot->open_message = r.diag.message;
                if (auto it = self->sessions.find(id); it != self->sessions.end() && it->second == slot)
                    self->sessions.erase(it);
            }
            else
            {
                slot->session = std::move(*r.session);
                slot->released = std::make_shared<release_channel>(self->ioc.get_executor());
                r.notifier->on_release([weak_self = self->weak_from_this(), weak_slot = std::weak_ptr(slot), id] {
                    auto slot = weak_slot.lock();
                    if (!slot)
                        return;
                    if (auto self = weak_self.lock())
                    {
                        std::lock_guard lock(self->mu);
                        if (auto it = self->sessions.find(id); it != self->sessions.end() && it->second == slot)
                            self->sessions.erase(it);
                    }
                    slot->released->close();  // wakes every request waiting for this session or for room
                });
                self->attach(slot);
                if (self->stopped)
                    slot->session->close();  // stop() ran while it was opening
            }
        }
        slot->opened->close();
    }

    // Waits for a lease taken by begin_open (or on an opening slot) to be usable.
    static asio::awaitable<compaction::result<lease>> await_open(lease held, compaction::diagnostics& diag)
    {
        const auto opened = held->slot->opened;
        co_await opened->async_receive(asio::as_tuple(asio::use_awaitable));  // closed when done
        if (held->slot->open_error)
        {
            diag.message = held->slot->open_message;
            co_return held->slot->open_error;
        }
        co_return held;
    }

    enum class room
    {
        available,  ///< one more session may be opened now
        wait,       ///< a session is closing: wait for its release and look again
        full,       ///< every open session is busy
    };

    // Makes room for one more open session: closes the least recently used idle one when the
    // limit is reached. Caller holds `mu`; it closes `doomed` after unlocking and waits on `wait_on`.
    room make_room(std::shared_ptr<release_channel>& wait_on, std::shared_ptr<runtime::session>& doomed)
    {
        if (opts.max_open_sessions == 0 || sessions.size() < opts.max_open_sessions)
            return room::available;
        std::shared_ptr<session_slot> victim, closing;
        for (const auto& [id, slot] : sessions)
        {
            if (slot->closing)
                closing = slot;
            else if (slot->busy == 0 && (!victim || slot->last_used < victim->last_used))
                victim = slot;
        }
        if (victim)
        {
            victim->closing = true;
            doomed = std::move(victim->session);
            wait_on = victim->released;
            return room::wait;
        }
        if (closing)
        {
            wait_on = closing->released;
            return room::wait;
        }
        return room::full;
    }

    // Closes a session made room for, outside `mu`: it is destroyed (and its descriptors
    // released) once its close has run on its strand.
    static void retire(std::shared_ptr<runtime::session> doomed)
    {
        if (doomed)
            doomed->close();
    }

    // How often an open that ran out of descriptors is tried again, after freeing some.
    static constexpr int descriptor_retries = 3;

    // Frees descriptors (idle sessions, an idle connection) and waits a moment for their release.
    asio::awaitable<void> after_freeing_descriptors()
    {
        free_descriptors();
        asio::steady_timer pause(ioc, accept_back_off);
        co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
    }

    // A lease on session `id`; an open that finds the process out of descriptors frees some and
    // tries again, a few times.
    asio::awaitable<compaction::result<lease>> find(const std::string& id, compaction::diagnostics& diag)
    {
        for (int attempt = 0;; ++attempt)
        {
            auto held = co_await find_once(id, diag);
            if (held || held.error() != out_of_descriptors || attempt == descriptor_retries)
                co_return held;
            co_await after_freeing_descriptors();
        }
    }

    // Creates a session and leases it, freeing descriptors and trying again like find().
    asio::awaitable<compaction::result<std::pair<std::string, lease>>> create(const std::string& cwd, compaction::diagnostics& diag)
    {
        for (int attempt = 0;; ++attempt)
        {
            auto created = co_await create_once(cwd, diag);
            if (created || created.error() != out_of_descriptors || attempt == descriptor_retries)
                co_return created;
            co_await after_freeing_descriptors();
        }
    }

    // A lease on session `id`, opening its file on the loader pool if it is not open. Requests
    // for a session that is being opened wait for that one open and share its session (or its
    // error). A session being closed is waited for and reopened.
    asio::awaitable<compaction::result<lease>> find_once(const std::string& id, compaction::diagnostics& diag)
    {
        for (;;)
        {
            std::shared_ptr<release_channel> wait_on;
            std::shared_ptr<runtime::session> doomed;
            lease opening;
            {
                std::lock_guard lock(mu);
                if (auto it = sessions.find(id); it != sessions.end())
                {
                    if (it->second->opening)
                        opening = take(it->second);  // being opened: join that open
                    else if (!it->second->closing)
                        co_return take(it->second);
                    else
                        wait_on = it->second->released;
                }
                else if (opts.pg)
                {
                    if (const auto r = make_room(wait_on, doomed); r == room::full)
                        co_return too_many_open_sessions;
                    else if (r == room::available)
                        break;  // opened below, outside `mu`: the database read is asynchronous
                }
                else if (std::error_code fe; !std::filesystem::exists(opts.data_dir / (id + ".jsonl"), fe))
                    co_return make_error_code(runtime::errc::not_found);  // an unknown id closes nothing
                else if (const auto r = make_room(wait_on, doomed); r == room::full)
                    co_return too_many_open_sessions;
                else if (r == room::available)
                    opening = begin_open(id, [path = opts.data_dir / (id + ".jsonl")](compaction::diagnostics& d) {
                        return runtime::jsonl_store::open(path, {}, d);
                    });
            }
            if (opening)
                co_return co_await await_open(std::move(opening), diag);
            retire(std::move(doomed));
            co_await wait_on->async_receive(asio::as_tuple(asio::use_awaitable));
        }
        auto [ec, store, message] = co_await opts.pg->async_open(id, asio::as_tuple(asio::use_awaitable));
        if (ec)
        {
            diag.message = message;
            co_return ec;
        }
        co_return co_await adopt_opened(id, std::move(store), diag);
    }

    // A store opened outside `mu` (read from the database): another request may have opened the
    // session meanwhile, and then that one is used; else the session is built from the store on
    // the loader pool like a file's.
    asio::awaitable<compaction::result<lease>> adopt_opened(const std::string& id, std::unique_ptr<runtime::store> store,
                                                            compaction::diagnostics& diag)
    {
        lease opening;
        {
            std::lock_guard lock(mu);
            if (auto it = sessions.find(id); it != sessions.end() && !it->second->closing)
            {
                if (!it->second->opening)
                    co_return take(it->second);
                opening = take(it->second);
            }
            else
            {
                auto held = std::make_shared<std::unique_ptr<runtime::store>>(std::move(store));
                opening = begin_open(id, [held](compaction::diagnostics&) -> compaction::result<std::unique_ptr<runtime::store>> {
                    return std::move(*held);
                });
            }
        }
        co_return co_await await_open(std::move(opening), diag);
    }

    // Creates a session and leases it; its id is the lease's key in `sessions`.
    asio::awaitable<compaction::result<std::pair<std::string, lease>>> create_once(const std::string& cwd,
                                                                                   compaction::diagnostics& diag)
    {
        const std::string id = new_session_id();
        auto header = compaction::make_header(id, compaction::iso_timestamp_now(), cwd);
        for (;;)
        {
            std::shared_ptr<release_channel> wait_on;
            std::shared_ptr<runtime::session> doomed;
            lease opening;
            {
                std::lock_guard lock(mu);
                if (const auto r = make_room(wait_on, doomed); r == room::full)
                    co_return too_many_open_sessions;
                else if (r == room::available && opts.pg)
                    break;
                else if (r == room::available)
                    opening = begin_open(id, [path = opts.data_dir / (id + ".jsonl"), header](compaction::diagnostics& d) {
                        return runtime::jsonl_store::create(path, header, {}, d);
                    });
            }
            if (opening)
            {
                auto l = co_await await_open(std::move(opening), diag);
                if (!l)
                    co_return l.error();
                co_return std::pair(id, std::move(*l));
            }
            retire(std::move(doomed));
            co_await wait_on->async_receive(asio::as_tuple(asio::use_awaitable));
        }
        auto [ec, store, message] = co_await opts.pg->async_create(header, asio::as_tuple(asio::use_awaitable));
        if (ec)
        {
            diag.message = message;
            co_return ec;
        }
        auto l = co_await adopt_opened(id, std::move(store), diag);
        if (!l)
            co_return l.error();
        co_return std::pair(id, std::move(*l));
    }

    // Accepts until the acceptor closes: a failed accept is retried (after a pause when out of
    // descriptors, once idle sessions and an idle connection were closed to free some), never
    // the end of the loop. Beyond the connection cap the longest-idle connection makes room, or
    // the new one gets 503.
    asio::awaitable<void> accept_loop()
    {
        asio::steady_timer pause(ioc);
        std::uint64_t streak = 0;
        for (;;)
        {
            auto [ec, sock] = co_await acceptor.async_accept(asio::make_strand(ioc), asio::as_tuple(asio::use_awaitable));
            if (!ec)
            {
                if (streak)
                    spdlog::info("accepting again after {} failed accepts", streak);
                streak = 0;
                admit(std::move(sock));
                continue;
            }
            const auto action = classify_accept_error(ec, !stopped && acceptor.is_open());
            if (action == accept_action::stop)
                co_return;
            ++accept_failures;
            if (streak++ == 0)
                spdlog::warn("accept failed: {}; retrying", ec.message());
            if (action == accept_action::back_off)
                free_descriptors();
            if (action == accept_action::back_off || streak % 64 == 0)  // a persistent error must not spin
            {
                pause.expires_after(accept_back_off);
                co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
            }
        }
    }

    // Serves an accepted connection, or refuses it when the cap is reached and none is idle.
    void admit(tcp::socket sock)
    {
        auto ex = sock.get_executor();
        switch (admit_connection(connections.load(), opts.max_connections, idle_connection_count()))
        {
        case admission::refuse:
            asio::co_spawn(ex, refuse_connection(std::move(sock), opts.max_connections), asio::detached);
            return;
        case admission::accept_after_idle: close_longest_idle(); break;
        case admission::accept: break;
        }
        ++connections;
        asio::co_spawn(ex, serve(shared_from_this(), std::move(sock)), asio::detached);
    }

    // A connection over the cap: one fixed 503 (within a second) and the close; nothing is read.
    static asio::awaitable<void> refuse_connection(tcp::socket sock, std::size_t limit)
    {
        const std::string body = compaction::stringify(
            error_body("too_many_connections", "all " + std::to_string(limit) + " connections are in use; retry later"));
        const std::string text = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
                                 "Connection: close\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
        beast::tcp_stream stream(std::move(sock));
        stream.expires_after(std::chrono::seconds(1));
        co_await asio::async_write(stream, asio::buffer(text), asio::as_tuple(asio::use_awaitable));
        error_code ignore;
        stream.socket().shutdown(tcp::socket::shutdown_send, ignore);
    }

    // Out of descriptors: closes the least recently used idle sessions and the longest-idle
    // connection, so that waiting a moment frees some (instead of failing forever).
    void free_descriptors()
    {
        constexpr std::size_t sessions_per_attempt = 4;
        const auto closed = shed_idle_sessions(sessions_per_attempt);
        const bool connection = close_longest_idle();
        spdlog::warn("out of descriptors: closed {} idle sessions{}", closed, connection ? " and an idle connection" : "");
    }

    // Closes up to `n` idle sessions, least recently used first; returns how many.
    std::size_t shed_idle_sessions(std::size_t n)
    {
        std::vector<std::shared_ptr<runtime::session>> doomed;
        {
            std::lock_guard lock(mu);
            std::vector<std::shared_ptr<session_slot>> idle;
            for (const auto& [id, slot] : sessions)
                if (slot->session && !slot->closing && !slot->opening && slot->busy == 0)
                    idle.push_back(slot);
            std::sort(idle.begin(), idle.end(), [](const auto& a, const auto& b) { return a->last_used < b->last_used; });
            for (std::size_t i = 0; i < idle.size() && i < n; ++i)
            {
                idle[i]->closing = true;
                doomed.push_back(std::move(idle[i]->session));
            }
        }
        for (auto& d : doomed)
            retire(std::move(d));
        return doomed.size();
    }

    std::size_t idle_connection_count()
    {
        std::lock_guard lock(conn_mu);
        return idle_connections.size();
    }

    // A connection waits for its next request: it may be closed to make room from now on.
    void enter_idle(const std::shared_ptr<connection_state>& state)
    {
        std::lock_guard lock(conn_mu);
        state->idle_key = ++idle_sequence;
        idle_connections.emplace(state->idle_key, state);
    }

    // The wait ended; false when the connection was chosen to make room (it closes then).
    bool leave_idle(const std::shared_ptr<connection_state>& state)
    {
        std::lock_guard lock(conn_mu);
        return idle_connections.erase(state->idle_key) == 1;
    }

    // Closes the connection idle for longest; false when none is idle. Its wait is cancelled on
    // its own strand; a request that arrived meanwhile finds itself chosen and closes anyway.
    bool close_longest_idle()
    {
        std::shared_ptr<connection_state> victim;
        {
            std::lock_guard lock(conn_mu);
            if (idle_connections.empty())
                return false;
            victim = std::move(idle_connections.begin()->second);
            idle_connections.erase(idle_connections.begin());
        }
        asio::post(victim->strand, [victim] {
            if (victim->stream)
                victim->stream->cancel();
        });
        return true;
    }

    using response = http::response<http::string_body>;

    static response reply(const http::request<http::string_body>& req, http::status st, const json::value& body)
    {
        response res{st, req.version()};
        res.set(http::field::content_type, "application/json");
        res.keep_alive(req.keep_alive());
        res.body() = compaction::stringify(body);
        res.prepare_payload();
        return res;
    }

    static http::status status_for(const error_code& ec)
    {
        namespace rt = agentctx::runtime;
        if (ec == rt::make_error_code(rt::errc::not_found))
            return http::status::not_found;
        if (ec == rt::make_error_code(rt::errc::session_locked) || ec == rt::make_error_code(rt::errc::already_exists))
            return http::status::conflict;
        if (ec.category() == compaction::error_category())
        {
            // Bad input by the code's name, the name the client sees: this also covers the codes
            // of refused client input (a reserved entry type, a repeated key) wherever they arise.
            static constexpr std::string_view bad_input[] = {"wrong_type",      "missing_field", "invalid_json",
                                                             "duplicate_id",    "dangling_parent", "reserved_type",
                                                             "duplicate_key"};
            if (std::find(std::begin(bad_input), std::end(bad_input), ec.message()) != std::end(bad_input))
                return http::status::bad_request;
            const auto e = static_cast<compaction::errc>(ec.value());
            if (e == compaction::errc::already_compacted || e == compaction::errc::nothing_to_compact ||
                e == compaction::errc::boundary_unavailable)
                return http::status::conflict;
            return http::status::unprocessable_entity;  // the summary was rejected
        }
        if (ec == rt::make_error_code(rt::errc::cancelled) || ec == rt::make_error_code(rt::errc::stale_plan) ||
            ec == rt::make_error_code(rt::errc::stale_leaf) || ec == rt::make_error_code(rt::errc::compaction_in_progress))
            return http::status::conflict;  // stale_leaf: the session reloaded, retry the append
        if (ec == rt::make_error_code(rt::errc::database_error) || ec == too_many_open_sessions || ec == out_of_descriptors)
            return http::status::service_unavailable;
        if (ec == rt::make_error_code(rt::errc::io_error))
            return http::status::internal_server_error;  // the session file could not be written
        return http::status::bad_gateway;  // the model provider failed
    }

    static response busy_reply(const http::request<http::string_body>& req, std::size_t limit)
    {
        auto res = reply(req, http::status::service_unavailable,
                         error_body("too_many_open_sessions",
                                    "all " + std::to_string(limit) + " open sessions are in use; retry later"));
        res.set(http::field::retry_after, "1");
        return res;
    }

    // Routes one request. SSE requests are handled in serve() itself.
    asio::awaitable<response> route(std::shared_ptr<impl> self, http::request<http::string_body>& req)
    {
        const auto parts = split_target(req.target());
        const bool post = req.method() == http::verb::post;
        json::object body;
        if (post && !req.body().empty())
        {
            std::string why;
            auto parsed = parse_request_object(req.body(), compaction::load_options{}.max_depth, why);
            if (!parsed)
                co_return reply(req, http::status::bad_request, error_body("invalid_json", why));
            body = std::move(*parsed);
        }
        if (parts.size() == 1 && parts[0] == "metrics" && req.method() == http::verb::get)
        {
            response res{http::status::ok, req.version()};
            res.set(http::field::content_type, "text/plain; version=0.0.4");
            res.keep_alive(req.keep_alive());
            res.body() = self->metrics.render(self->active_sessions());
            res.prepare_payload();
            co_return res;
        }
        if (parts.size() < 2 || parts[0] != "v1" || parts[1] != "sessions")
            co_return reply(req, http::status::not_found, error_body("not_found", "no such endpoint"));
        compaction::diagnostics diag;
        if (parts.size() == 2)
        {
            if (!post)
                co_return reply(req, http::status::method_not_allowed, error_body("method_not_allowed", "use POST"));
            const auto* cwd = body.if_contains("cwd");
            std::string dir = "/";  // no temporaries around co_await: GCC 12 destroys them twice
            if (cwd && cwd->is_string())
                dir = std::string(cwd->get_string());
            auto created = co_await self->create(dir, diag);
            if (!created && created.error() == too_many_open_sessions)
                co_return busy_reply(req, self->opts.max_open_sessions);
            if (!created)
            {
                spdlog::error("cannot create a session: {}", diag.message);
                co_return reply(req, status_for(created.error()),
                                error_body(created.error().message(), public_message(created.error(), diag)));
            }
            co_return reply(req, http::status::created, json::object{{"id", created->first}});
        }
        if (parts.size() != 4 || !valid_id(parts[2]))
            co_return reply(req, http::status::not_found, error_body("not_found", "no such endpoint"));
        auto held = co_await self->find(parts[2], diag);
        if (!held && held.error() == too_many_open_sessions)
            co_return busy_reply(req, self->opts.max_open_sessions);
        if (!held)
            co_return reply(req, status_for(held.error()),
                            error_body(held.error().message(), "session '" + parts[2] + "': " + public_message(held.error(), diag)));
        auto& session = (*held)->session();
        const std::string& action = parts[3];
        if (action == "entries" && post)
        {
            if (!appendable_type(body))
                co_return reply(req, http::status::unprocessable_entity,
                                error_body("entry_not_appendable", "session and compaction entries cannot be appended"));
            const bool assistant = body.contains("message") && body.at("message").is_object() &&
                                   body.at("message").as_object().contains("role") &&
                                   body.at("message").as_object().at("role") == "assistant";
            json::object message = assistant ? body.at("message").as_object() : json::object{};
            auto [ec, id] = co_await session.async_append(std::move(body), asio::as_tuple(asio::use_awaitable));
            if (ec)  // on failure the string is the diagnostics message: the field path and the reason
                co_return reply(req, status_for(ec),
                                error_body(ec.message(), id.empty() ? "the entry was rejected" : without_data_dir(id, self->data_dir_prefix)));
            self->metrics.append();
            if (assistant)
            {
                // The automatic check after each assistant message; its result shows on /events.
                compaction::diagnostics d;
                if (auto m = compaction::decode_message(message, "message", d))
                    session.async_on_turn_end(std::move(*m), [hold = *held](error_code, runtime::compaction_outcome) {});
            }
            co_return reply(req, http::status::created, json::object{{"id", id}});
        }
        if (action == "compact" && post)
        {
            std::optional<std::string> instructions;
            if (const auto* i = body.if_contains("instructions"); i && i->is_string())
                instructions = std::string(i->get_string());
            auto [ec, outcome] = co_await session.async_compact(std::move(instructions), asio::as_tuple(asio::use_awaitable));
            if (ec || !outcome.compacted)
                co_return reply(req, status_for(ec), error_body(ec ? ec.message() : "not_compacted", without_data_dir(outcome.message, self->data_dir_prefix)));
            const auto& r = *outcome.result;
            co_return reply(req, http::status::ok,
                            json::object{{"entryId", outcome.entry_id},
                                         {"firstKeptEntryId", r.first_kept_entry_id},
                                         {"tokensBefore", r.tokens_before},
                                         {"tokensAfter", r.tokens_after},
                                         {"summary", r.summary}});
        }
        if (action == "context" && req.method() == http::verb::get)
        {
            const auto wire = query_param(req.target(), "wire");  // absent: no wire view; empty: refused
            if (wire && *wire != "anthropic" && *wire != "openai" && *wire != "responses")
                co_return reply(req, http::status::bad_request,
                                error_body("invalid_request", "wire must be anthropic, openai or responses"));
            const auto snap = session.current();
            json::array msgs;
            // What the next request carries: unresolved tool calls answered (unresolved_calls.hpp).
            const auto ctx = compaction::with_unknown_outcomes(snap->messages.to_vector());
            for (const auto& m : ctx)
                msgs.push_back(json::object{{"role", compaction::to_string(m.msg->role)},
                                            {"entryId", m.entry_id},
                                            {"tokens", compaction::estimate_tokens(*m.msg)}});
            json::object out{{"leafId", snap->leaf_id ? json::value(*snap->leaf_id) : json::value(nullptr)},
                             {"estimatedTokens", snap->context_tokens()},
                             {"messages", std::move(msgs)}};
            const auto* native = snap->native.get();
            if (native)
                out["native"] = json::object{
                    {"provider", native->state.format == providers::wire_format::anthropic ? "anthropic" : "openai"},
                    {"entryId", native->entry_id}};
            // The request body's messages / input, the native state sent back where it applies.
            if (wire == "responses")
                out["wire"] = providers::to_responses_input(ctx, native);
            else if (wire)
                out["wire"] = providers::to_wire_messages(
                    *wire == "anthropic" ? providers::wire_format::anthropic : providers::wire_format::openai, ctx, native);
            co_return reply(req, http::status::ok, std::move(out));
        }
        co_return reply(req, http::status::method_not_allowed, error_body("method_not_allowed", "no such action for this method"));
    }

    // Completes when the peer has closed its side of the connection while a request runs; with
    // a pipelined request pending (or a socket error) it waits until it is cancelled instead.
    static asio::awaitable<void> until_disconnected(beast::tcp_stream& stream)
    {
        auto& sock = stream.socket();
        auto [ec] = co_await sock.async_wait(tcp::socket::wait_read, asio::as_tuple(asio::use_awaitable));
        if (!ec)
        {
            char c;
            const auto n = ::recv(sock.native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
            if (n == 0 || (n < 0 && errno == ECONNRESET))
                co_return;  // gone
        }
        asio::steady_timer forever(co_await asio::this_coro::executor, std::chrono::steady_clock::time_point::max());
        co_await forever.async_wait(asio::use_awaitable);  // throws when cancelled: the route won
        throw std::runtime_error("unreachable");
    }

    // Writes events to the stream until the channel closes or a write fails.
    static asio::awaitable<void> pump_events(std::shared_ptr<impl> self, beast::tcp_stream& stream,
                                             std::shared_ptr<event_channel> channel)
    {
        const auto idle = self->opts.idle_timeout;
        const std::string hello = ": subscribed\n\n";
        stream.expires_after(idle);
        auto [wec, wn] = co_await asio::async_write(stream, http::make_chunk(asio::buffer(hello)), asio::as_tuple(asio::use_awaitable));
        stream.expires_never();
        while (!wec && !self->stopped)
        {
            auto [rec, frame] = co_await channel->async_receive(asio::as_tuple(asio::use_awaitable));
            if (rec)
                break;
            stream.expires_after(idle);  // a subscriber that stops reading is closed
            auto [cec, cn] = co_await asio::async_write(stream, http::make_chunk(asio::buffer(frame)), asio::as_tuple(asio::use_awaitable));
            stream.expires_never();
            if (cec)
                break;
        }
    }

    // Completes when the peer closes its side (or the socket fails): a subscriber never sends,
    // so a pending read is how a disconnect is seen without waiting for the next event.
    static asio::awaitable<void> watch_peer(beast::tcp_stream& stream)
    {
        char scratch[512];
        for (;;)
        {
            auto [ec, n] = co_await stream.socket().async_read_some(asio::buffer(scratch), asio::as_tuple(asio::use_awaitable));
            if (ec)
                co_return;
        }
    }

    // Streams a session's events until the client goes away or the server stops; the lease
    // keeps the session open meanwhile.
    static asio::awaitable<void> stream_events(std::shared_ptr<impl> self, beast::tcp_stream& stream,
                                               const http::request<http::string_body>& req, lease held)
    {
        const auto& slot = held->slot;
        auto channel = std::make_shared<event_channel>(self->ioc.get_executor(), 256);
        {
            std::lock_guard lock(slot->mu);
            std::erase_if(slot->subscribers, [](const auto& w) { return w.expired(); });
            slot->subscribers.push_back(channel);
        }
        http::response<http::empty_body> res{http::status::ok, req.version()};
        res.set(http::field::content_type, "text/event-stream");
        res.set(http::field::cache_control, "no-cache");
        res.chunked(true);
        http::response_serializer<http::empty_body> sr{res};
        stream.expires_after(self->opts.idle_timeout);
        auto [hec, hn] = co_await http::async_write_header(stream, sr, asio::as_tuple(asio::use_awaitable));
        stream.expires_never();
        if (hec)
            co_return;
        using namespace asio::experimental::awaitable_operators;
        co_await (pump_events(self, stream, channel) || watch_peer(stream));  // the first to end cancels the other
    }

    // Answers a request that is not read further (too large, unauthenticated) and closes the
    // connection gracefully: shut down sending, then drain (and discard) what the peer is still
    // sending so the close is not a reset that could destroy the answer in flight.
    static asio::awaitable<void> answer_and_close(std::shared_ptr<impl> self, beast::tcp_stream& stream, response res)
    {
        res.keep_alive(false);
        res.prepare_payload();
        stream.expires_after(self->opts.idle_timeout);
        auto [wec, wn] = co_await http::async_write(stream, res, asio::as_tuple(asio::use_awaitable));
        if (wec)
            co_return;
        error_code ignore;
        stream.socket().shutdown(tcp::socket::shutdown_send, ignore);
        stream.expires_after(std::min<std::chrono::milliseconds>(self->opts.idle_timeout, std::chrono::seconds(5)));
        char scratch[16384];
        for (std::size_t drained = 0; drained < 4 * self->opts.body_limit;)
        {
            auto [rec, n] = co_await stream.async_read_some(asio::buffer(scratch), asio::as_tuple(asio::use_awaitable));
            if (rec)
                break;
            drained += n;
        }
    }

    static asio::awaitable<void> refuse_and_close(std::shared_ptr<impl> self, beast::tcp_stream& stream, http::status st,
                                                  std::string_view code, std::string_view message)
    {
        response res{st, 11};
        res.set(http::field::content_type, "application/json");
        res.body() = compaction::stringify(error_body(code, message));
        co_await answer_and_close(std::move(self), stream, std::move(res));
    }

    // Answers a read that failed on the request itself (413, 431, 400); false for the others
    // (a timeout, the peer gone), which are closed without an answer.
    static asio::awaitable<void> refuse_unreadable(std::shared_ptr<impl> self, beast::tcp_stream& stream, error_code ec)
    {
        const auto& o = self->opts;
        if (ec == http::error::body_limit)
            co_await refuse_and_close(self, stream, http::status::payload_too_large, "body_too_large",
                                      "the request body is over " + std::to_string(o.body_limit) + " bytes");
        else if (ec == http::error::header_limit)
            co_await refuse_and_close(self, stream, http::status::request_header_fields_too_large, "header_too_large",
                                      "the request header is over " + std::to_string(o.header_limit) + " bytes");
        else if (ec.category() == http::make_error_code(http::error::bad_target).category() && ec != http::error::end_of_stream &&
                 ec != http::error::partial_message)
            co_await refuse_and_close(self, stream, http::status::bad_request, "bad_request", "the request is not valid HTTP/1.1");
    }

    // Waits (up to the idle timeout) for the first byte of the next request. Meanwhile the
    // connection is idle: the accept loop may close it to make room for a new one.
    static asio::awaitable<bool> await_request(std::shared_ptr<impl> self, beast::tcp_stream& stream, beast::flat_buffer& buffer,
                                               const std::shared_ptr<connection_state>& state)
    {
        if (buffer.size() != 0)
            co_return true;  // a pipelined request is here already
        self->enter_idle(state);
        stream.expires_after(self->opts.idle_timeout);
        auto [ec, n] = co_await stream.async_read_some(buffer.prepare(4096), asio::as_tuple(asio::use_awaitable));
        const bool evicted = !self->leave_idle(state);
        if (ec || evicted)
            co_return false;  // idle timeout, the peer went away, or closed to make room
        buffer.commit(n);
        co_return true;
    }

    // Reads one request's header (bounded by the header timeout). Returns false when the
    // connection is to be closed; nothing of the body is read.
    static asio::awaitable<bool> read_header(std::shared_ptr<impl> self, beast::tcp_stream& stream, beast::flat_buffer& buffer,
                                             http::request_parser<http::string_body>& parser)
    {
        parser.header_limit(static_cast<std::uint32_t>(self->opts.header_limit));
        parser.body_limit(self->opts.body_limit);
        stream.expires_after(self->opts.header_timeout);
        auto [ec, n] = co_await http::async_read_header(stream, buffer, parser, asio::as_tuple(asio::use_awaitable));
        stream.expires_never();
        if (ec)
            co_await refuse_unreadable(self, stream, ec);
        co_return !ec;
    }

    // Reads the body of a request whose header was read and accepted (bounded by the idle timeout).
    static asio::awaitable<bool> read_body(std::shared_ptr<impl> self, beast::tcp_stream& stream, beast::flat_buffer& buffer,
                                           http::request_parser<http::string_body>& parser)
    {
        if (parser.is_done())
            co_return true;
        stream.expires_after(self->opts.idle_timeout);
        auto [ec, n] = co_await http::async_read(stream, buffer, parser, asio::as_tuple(asio::use_awaitable));
        stream.expires_never();
        if (ec)
            co_await refuse_unreadable(self, stream, ec);
        co_return !ec;
    }

    // The 401 of a request without the bearer token, answered from its header alone: its body is
    // never read into memory, and the connection is closed.
    static asio::awaitable<void> refuse_unauthorized(std::shared_ptr<impl> self, beast::tcp_stream& stream,
                                                     const http::request<http::string_body>& req,
                                                     std::chrono::steady_clock::time_point started)
    {
        auto res = reply(req, http::status::unauthorized,
                         error_body("unauthorized", "a valid bearer token is required (Authorization: Bearer ...)"));
        res.set(http::field::www_authenticate, "Bearer");
        self->record(req, res.result_int(), started);
        co_await answer_and_close(self, stream, std::move(res));
    }

    bool authorized(const http::request<http::string_body>& req) const
    {
        return !opts.token || bearer_matches(req[http::field::authorization], *opts.token);
    }

    // Answers one read request. Returns false when the connection is to be closed.
    static asio::awaitable<bool> answer(std::shared_ptr<impl> self, beast::tcp_stream& stream,
                                        http::request<http::string_body>& req, std::chrono::steady_clock::time_point started)
    {
        const auto parts = split_target(req.target());
        if (req.method() == http::verb::get && parts.size() == 4 && parts[0] == "v1" && parts[1] == "sessions" &&
            parts[3] == "events")
        {
            compaction::diagnostics diag;
            compaction::result<lease> held = make_error_code(runtime::errc::not_found);
            if (valid_id(parts[2]))
                held = co_await self->find(parts[2], diag);
            if (!held)
            {
                auto res = held.error() == too_many_open_sessions
                               ? busy_reply(req, self->opts.max_open_sessions)
                               : reply(req, status_for(held.error()),
                                       error_body(held.error().message(), public_message(held.error(), diag)));
                co_return co_await send(self, stream, req, std::move(res), started);
            }
            self->record(req, 200, started);
            self->metrics.stream_opened();
            co_await stream_events(self, stream, req, std::move(*held));
            self->metrics.stream_closed();
            co_return false;
        }
        response res;
        if (req.method() == http::verb::post && parts.size() == 4 && parts[3] == "compact")
        {
            // A client that leaves stops its compaction: the route is cancelled (nothing is
            // written after a cancellation) and the connection closed.
            using namespace asio::experimental::awaitable_operators;
            auto done = co_await (self->route(self, req) || until_disconnected(stream));
            if (done.index() == 1)
                co_return false;
            res = std::move(std::get<0>(done));
        }
        else
            res = co_await self->route(self, req);
        co_return co_await send(self, stream, req, std::move(res), started);
    }

    // Writes an answer (a peer that does not read it is closed). Returns false to close.
    static asio::awaitable<bool> send(std::shared_ptr<impl> self, beast::tcp_stream& stream,
                                      const http::request<http::string_body>& req, response res,
                                      std::chrono::steady_clock::time_point started)
    {
        self->record(req, res.result_int(), started);
        stream.expires_after(self->opts.idle_timeout);
        auto [wec, wn] = co_await http::async_write(stream, res, asio::as_tuple(asio::use_awaitable));
        co_return !wec && res.keep_alive();
    }

    // One connection: requests in order until the peer closes, a timeout, or an SSE stream ends.
    // The bearer token is checked on the header, before any byte of the body is read.
    static asio::awaitable<void> serve(std::shared_ptr<impl> self, tcp::socket sock)
    {
        beast::tcp_stream stream(std::move(sock));
        auto state = std::make_shared<connection_state>();
        state->strand = stream.get_executor();
        state->stream = &stream;
        struct leave
        {
            impl& s;
            connection_state& state;
            ~leave()
            {
                state.stream = nullptr;  // on the connection's strand, like every use of it
                --s.connections;
            }
        } guard{*self, *state};
        beast::flat_buffer buffer;
        for (;;)
        {
            if (!co_await await_request(self, stream, buffer, state))
                co_return;
            http::request_parser<http::string_body> parser;
            if (!co_await read_header(self, stream, buffer, parser))
                co_return;
            const auto started = std::chrono::steady_clock::now();
            if (!self->authorized(parser.get()))
                co_return co_await refuse_unauthorized(self, stream, parser.get(), started);
            if (!co_await read_body(self, stream, buffer, parser))
                co_return;
            auto req = parser.release();
            if (!co_await answer(self, stream, req, started))
                co_return;
        }
    }
};

agent_server::agent_server(asio::io_context& ioc, server_options opts) : impl_(std::make_shared<impl>(ioc, std::move(opts))) {}

agent_server::~agent_server()
{
    stop();
}

std::uint16_t agent_server::start()
{
    std::filesystem::create_directories(impl_->opts.data_dir);
    const tcp::endpoint ep(asio::ip::make_address(impl_->opts.address), impl_->opts.port);
    impl_->acceptor.open(ep.protocol());
    impl_->acceptor.set_option(asio::socket_base::reuse_address(true));
    impl_->acceptor.bind(ep);
    impl_->acceptor.listen();
    asio::co_spawn(impl_->ioc, impl_->accept_loop(), asio::detached);
    return impl_->acceptor.local_endpoint().port();
}

std::uint64_t agent_server::accept_failures() const noexcept
{
    return impl_->accept_failures.load();
}

std::size_t agent_server::open_connections() const noexcept
{
    return impl_->connections.load();
}

void agent_server::stop()
{
    if (impl_->stopped)
        return;
    impl_->stopped = true;
    error_code ignore;
    impl_->acceptor.close(ignore);
    std::lock_guard lock(impl_->mu);
    for (auto& [id, slot] : impl_->sessions)
    {
        if (!slot->session)
            continue;  // closing already
        slot->session->close();
        std::lock_guard sl(slot->mu);
        for (auto& w : slot->subscribers)
            if (auto ch = w.lock())
                ch->close();
    }
}

}  // namespace agentctx::server
