// The session registry's I/O: opening stores on the loader pool, waiting for opens and releases.
#include "session_registry.hpp"

#include "accept_policy.hpp"
#include "released_store.hpp"
#include "server_error.hpp"

#include <agentctx/compaction/entry.hpp>
#include <agentctx/runtime/error.hpp>
#include <agentctx/runtime/jsonl_store.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cerrno>
#include <cstdio>
#include <random>

namespace agentctx::server {

namespace asio = boost::asio;
using boost::system::error_code;
using book = session_book<session_slot>;

namespace {

std::string new_session_id()
{
    thread_local std::mt19937_64 rng{std::random_device{}()};
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(rng()));
    return buf;
}

// How often an open that ran out of descriptors is tried again, after freeing some.
constexpr int descriptor_retries = 3;

// Closes a session made room for, outside mu_: it is destroyed (and its descriptor released)
// once its close has run on its strand.
void retire(std::shared_ptr<runtime::session> doomed)
{
    if (doomed)
        doomed->close();
}

}  // namespace

struct session_registry::open_result
{
    compaction::result<std::shared_ptr<runtime::session>> session = make_error_code(runtime::errc::not_found);
    released_store* notifier = nullptr;
    compaction::diagnostics diag;
};

session_registry::lease_state::lease_state(
    std::shared_ptr<session_registry> owner, std::shared_ptr<session_slot> slot
)
    : owner_(std::move(owner)), slot_(std::move(slot))
{}

session_registry::lease_state::~lease_state()
{
    std::lock_guard lock(owner_->mu_);
    owner_->book_.end_lease(*slot_);
}

session_registry::session_registry(asio::io_context& ioc, registry_options opts)
    : ioc_(ioc), opts_(std::move(opts)), loader_(std::max<std::size_t>(opts_.open_threads, 1)),
      creator_(std::max<std::size_t>(opts_.create_threads, 1)), book_(opts_.max_open_sessions)
{}

// Wraps a lease the book took. Caller holds mu_.
lease session_registry::take(const std::shared_ptr<session_slot>& slot)
{
    return std::make_shared<lease_state>(shared_from_this(), slot);
}

// Registers an opening slot for `id` and starts its open; the caller's lease keeps it from
// being closed to make room before the caller has used it. Caller holds mu_.
lease session_registry::begin_open(const std::string& id, store_factory make_store, asio::thread_pool& pool)
{
    auto slot = std::make_shared<session_slot>();
    slot->opened = std::make_shared<release_channel>(ioc_.get_executor());
    book_.begin_open(id, slot);
    auto held = take(slot);
    asio::co_spawn(ioc_, open_session(id, slot, std::move(make_store), pool), asio::detached);
    return held;
}

// Opens (or creates) the session's store and loads it on the loader pool, then publishes the
// slot and wakes everyone waiting for it. Not cancellable: every waiter depends on it, and it
// ends once the blocking read ends.
asio::awaitable<void> session_registry::open_session(
    std::string id, std::shared_ptr<session_slot> slot, store_factory make_store, asio::thread_pool& pool
)
{
    auto self = shared_from_this();
    auto config = opts_.session_config();
    if (opts_.configure)
        opts_.configure(id, config);
    auto work = [make_store = std::move(make_store),
                 ex = ioc_.get_executor(),
                 config = std::move(config),
                 before = opts_.before_load,
                 id]() -> asio::awaitable<open_result> {
        open_result r;
        if (before)
            before(id);
        auto store = make_store(r.diag);
        if (!store)
        {
            const int err = errno;  // what the failed open or create left, read before anything else runs
            const bool exhausted =
                store.error() == runtime::errc::io_error && (err == EMFILE || err == ENFILE);
            r.session = exhausted ? make_error_code(errc::out_of_descriptors) : store.error();
            co_return r;
        }
        auto wrapped = std::make_unique<released_store>(std::move(*store));
        r.notifier = wrapped.get();
        r.session = runtime::session::open(ex, std::move(wrapped), config, r.diag);
        co_return r;
    };
    open_result r = co_await asio::co_spawn(pool, std::move(work), asio::use_awaitable);
    publish_open(id, slot, r);
    slot->opened->close();
}

// The open finished: the slot is usable (its release will forget it), or forgotten with the
// open's error for everyone who joined it.
void session_registry::publish_open(
    const std::string& id, const std::shared_ptr<session_slot>& slot, open_result& r
)
{
    std::lock_guard lock(mu_);
    if (!r.session)
    {
        slot->open_error = r.session.error();
        slot->open_message = r.diag.message;
        book_.forget(id, *slot);
        return;
    }
    book_.opened(*slot);
    slot->session = std::move(*r.session);
    slot->released = std::make_shared<release_channel>(ioc_.get_executor());
    r.notifier->on_release([weak_self = weak_from_this(), weak_slot = std::weak_ptr(slot), id] {
        auto slot = weak_slot.lock();
        if (!slot)
            return;
        if (auto self = weak_self.lock())
        {
            std::lock_guard lock(self->mu_);
            self->book_.forget(id, *slot);
        }
        slot->released->close();  // wakes every request waiting for this session or for room
    });
    if (opts_.on_open)
        opts_.on_open(slot);
    if (stopped_)
        slot->session->close();  // close_all() ran while it was opening
}

// Waits for a lease taken by begin_open (or on an opening slot) to be usable.
asio::awaitable<compaction::result<lease>> session_registry::await_open(
    lease held, compaction::diagnostics& diag
)
{
    const auto opened = held->slot().opened;
    co_await opened->async_receive(asio::as_tuple(asio::use_awaitable));  // closed when done
    if (held->slot().open_error)
    {
        diag.message = held->slot().open_message;
        co_return held->slot().open_error;
    }
    co_return held;
}

asio::awaitable<void> session_registry::after_freeing_descriptors()
{
    if (opts_.free_descriptors)
        opts_.free_descriptors();
    asio::steady_timer pause(ioc_, accept_back_off);
    co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
}

asio::awaitable<compaction::result<lease>> session_registry::find(
    const std::string& id, compaction::diagnostics& diag
)
{
    for (int attempt = 0;; ++attempt)
    {
        auto held = co_await find_once(id, diag);
        if (held || held.error() != errc::out_of_descriptors || attempt == descriptor_retries)
            co_return held;
        co_await after_freeing_descriptors();
    }
}

asio::awaitable<compaction::result<std::pair<std::string, lease>>> session_registry::create(
    const std::string& cwd,
    compaction::diagnostics& diag,
    const std::function<void(const std::string& id)>& before_open
)
{
    const std::string id = new_session_id();
    if (before_open)
        before_open(id);
    for (int attempt = 0;; ++attempt)
    {
        auto created = co_await create_once(id, cwd, diag);
        if (created || created.error() != errc::out_of_descriptors || attempt == descriptor_retries)
            co_return created;
        co_await after_freeing_descriptors();
    }
}

// One try of find(): requests for a session being opened wait for that one open and share its
// session (or its error); a session being closed is waited for and reopened.
asio::awaitable<compaction::result<lease>> session_registry::find_once(
    const std::string& id, compaction::diagnostics& diag
)
{
    const auto path = opts_.data_dir / (id + ".jsonl");
    for (;;)
    {
        std::shared_ptr<release_channel> wait_on;
        std::shared_ptr<runtime::session> doomed;
        lease opening;
        {
            std::lock_guard lock(mu_);
            const auto found = book_.lookup(id);
            if (found.kind == book::found_kind::open)
                co_return take(found.slot);
            if (found.kind == book::found_kind::opening)
                opening = take(found.slot);  // being opened: join that open
            else if (found.kind == book::found_kind::closing)
                wait_on = found.slot->released;
            else if (std::error_code fe; !opts_.pg && !std::filesystem::exists(path, fe))
                co_return make_error_code(runtime::errc::not_found);  // an unknown id closes nothing
            else if (const auto room = book_.make_room(); room.kind == book::room_kind::full)
                co_return make_error_code(errc::too_many_open_sessions);
            else if (room.kind == book::room_kind::wait)
            {
                doomed = room.close ? std::move(room.close->session) : nullptr;
                wait_on = room.wait_for->released;
            }
            else if (opts_.pg)
                break;  // opened below, outside mu_: the database read is asynchronous
            else
                opening = begin_open(
                    id,
                    [path](compaction::diagnostics& d) { return runtime::jsonl_store::open(path, {}, d); },
                    loader_
                );
        }
        if (opening)
            co_return co_await await_open(std::move(opening), diag);
        retire(std::move(doomed));
        co_await wait_on->async_receive(asio::as_tuple(asio::use_awaitable));
    }
    auto [ec, store, message] = co_await opts_.pg->async_open(id, asio::as_tuple(asio::use_awaitable));
    if (ec)
    {
        diag.message = message;
        co_return ec;
    }
    co_return co_await adopt_opened(id, std::move(store), diag);
}

// A store opened outside mu_ (read from the database): another request may have opened the
// session meanwhile, and then that one is used; else the session is built from the store on
// the loader pool like a file's.
asio::awaitable<compaction::result<lease>> session_registry::adopt_opened(
    const std::string& id, std::unique_ptr<runtime::store> store, compaction::diagnostics& diag
)
{
    lease opening;
    {
        std::lock_guard lock(mu_);
        if (const auto found = book_.lookup(id); found.kind == book::found_kind::open)
            co_return take(found.slot);
        else if (found.kind == book::found_kind::opening)
            opening = take(found.slot);
        else
        {
            auto held = std::make_shared<std::unique_ptr<runtime::store>>(std::move(store));
            opening = begin_open(
                id,
                [held](compaction::diagnostics&) -> compaction::result<std::unique_ptr<runtime::store>> {
                    return std::move(*held);
                },
                loader_
            );
        }
    }
    co_return co_await await_open(std::move(opening), diag);
}

// One try of create(): makes room, then creates the file (or the database row) and opens it.
asio::awaitable<compaction::result<std::pair<std::string, lease>>> session_registry::create_once(
    const std::string& id, const std::string& cwd, compaction::diagnostics& diag
)
{
    auto header = compaction::make_header(id, compaction::iso_timestamp_now(), cwd);
    for (;;)
    {
        std::shared_ptr<release_channel> wait_on;
        std::shared_ptr<runtime::session> doomed;
        lease opening;
        {
            std::lock_guard lock(mu_);
            if (const auto room = book_.make_room(); room.kind == book::room_kind::full)
                co_return make_error_code(errc::too_many_open_sessions);
            else if (room.kind == book::room_kind::wait)
            {
                doomed = room.close ? std::move(room.close->session) : nullptr;
                wait_on = room.wait_for->released;
            }
            else if (opts_.pg)
                break;
            else
                opening = begin_open(
                    id,
                    [path = opts_.data_dir / (id + ".jsonl"), header](compaction::diagnostics& d) {
                        return runtime::jsonl_store::create(path, header, {}, d);
                    },
                    creator_
                );
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
    auto [ec, store, message] = co_await opts_.pg->async_create(header, asio::as_tuple(asio::use_awaitable));
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

std::size_t session_registry::shed_idle(std::size_t n)
{
    std::vector<std::shared_ptr<runtime::session>> doomed;
    {
        std::lock_guard lock(mu_);
        for (const auto& slot : book_.shed(n))
            doomed.push_back(std::move(slot->session));
    }
    for (auto& d : doomed)
        retire(std::move(d));
    return doomed.size();
}

std::size_t session_registry::active()
{
    std::lock_guard lock(mu_);
    return book_.active();
}

void session_registry::close_all()
{
    std::lock_guard lock(mu_);
    stopped_ = true;
    book_.for_each([](const std::string&, const std::shared_ptr<session_slot>& slot) {
        if (!slot->session)
            return;  // closing already, or still opening (closed once open)
        slot->session->close();
        slot->subscribers.close_all();
    });
}

}  // namespace agentctx::server
