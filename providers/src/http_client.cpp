// libcurl multi on Asio: socket callbacks -> async_wait, timer callback -> steady_timer, all on a strand.
#include <agentctx/providers/error.hpp>
#include <agentctx/providers/http_client.hpp>

#include <boost/asio/append.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdint>
#include <map>
#include <mutex>
#include <new>
#include <optional>
#include <unistd.h>

#include <curl/curl.h>

namespace agentctx::providers {

namespace asio = boost::asio;
using boost::system::error_code;

std::string_view http_response::header(std::string_view name) const
{
    for (const auto& [k, v] : headers)
        if (k == name)
            return v;
    return {};
}

transfer_deadlines deadlines_of(const http_request& r) noexcept
{
    transfer_deadlines d;
    d.connect_timeout_ms = static_cast<long>(r.connect_timeout.count());
    d.total_timeout_ms = 0;                        // never: a healthy generation may take minutes
    const bool idle = r.idle_timeout.count() > 0;  // an explicit opt-in only
    d.low_speed_time = idle ? static_cast<long>(r.idle_timeout.count()) : 0L;
    d.low_speed_limit = idle ? r.low_speed_bytes : 0L;
    d.tcp_keepalive = 1L;  // liveness on a silent connection: probes find a dead peer
    d.keepalive_idle = static_cast<long>(r.keepalive_interval.count());
    d.keepalive_interval = static_cast<long>(r.keepalive_interval.count());
    return d;
}

namespace {

// curl_global_init once per process, before any handle (it is not safe to race it).
void ensure_curl_global()
{
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::atomic<std::size_t> multi_handles{0};  // http_client::live_multi_handles

error_code from_curl(CURLcode c)
{
    switch (c)
    {
    case CURLE_OK:
        return {};
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
        return make_error_code(errc::invalid_request);
    case CURLE_FILESIZE_EXCEEDED:
        return make_error_code(errc::response_too_large);  // Content-Length over the cap
    default:
        return make_error_code(errc::transient);  // connect, reset, timeouts, TLS, ...
    }
}

}  // namespace

// One socket (or foreign fd) that curl asked us to watch.
struct sock_watch
{
    explicit sock_watch(asio::strand<asio::any_io_executor> ex) : socket(ex), foreign(ex) {}
    asio::ip::tcp::socket socket;            // sockets we opened for curl
    asio::posix::stream_descriptor foreign;  // fds curl opened itself (threaded resolver)
    bool is_foreign = false;
    int want = 0;  // CURL_POLL_IN / OUT / INOUT
    bool reading = false, writing = false;
    bool closed = false;
};

// A request's headers as the curl list it sends. Consecutive requests usually carry the same
// headers (one provider, one key), so the client keeps the last list and shares it.
struct header_list
{
    explicit header_list(const std::vector<std::pair<std::string, std::string>>& h) : source(h)
    {
        std::string line;
        for (const auto& [k, v] : h)
        {
            line.assign(k).append(": ").append(v);
            append(line.c_str());
        }
        append("Expect:");  // no 1 s wait for 100-continue on big bodies
    }
    ~header_list() { curl_slist_free_all(list); }
    header_list(const header_list&) = delete;
    header_list& operator=(const header_list&) = delete;

    std::vector<std::pair<std::string, std::string>> source;
    curl_slist* list = nullptr;

private:
    void append(const char* line)
    {
        curl_slist* next = curl_slist_append(list, line);
        if (!next)
            throw std::bad_alloc();
        list = next;
    }
};

struct transfer
{
    std::uint64_t id = 0;
    CURL* easy = nullptr;
    std::shared_ptr<const header_list> headers;  // must outlive the handle's use of it
    http_request req;
    http_response resp;
    std::optional<asio::any_completion_handler<http_signature>> handler;  // emplace only (Asio 1.26)
    std::size_t received = 0;  // header bytes + decoded body bytes so far
    bool too_large = false;
    std::shared_ptr<std::atomic<bool>> aborting;  // set by a terminal/partial cancellation, any thread

    // Counts `n` more bytes against the cap; false when the transfer must stop.
    bool admit(std::size_t n)
    {
        if (aborting && aborting->load(std::memory_order_relaxed))
            return false;
        received += n;
        if (received > req.max_response_bytes)
        {
            too_large = true;
            return false;
        }
        return true;
    }
};

namespace {

// The client's strand: the caller's own when it already is one (the HTTP summarizer passes its
// strand), so a request never hops between two strands.
asio::strand<asio::any_io_executor> as_strand(const asio::any_io_executor& ex)
{
    if (const auto* s = ex.target<asio::strand<asio::any_io_executor>>())
        return *s;
    return asio::make_strand(ex);
}

}  // namespace

struct http_client::impl : std::enable_shared_from_this<impl>
{
    explicit impl(asio::any_io_executor ex) : strand(as_strand(ex)), timer(strand)
    {
        ensure_curl_global();
        multi = curl_multi_init();
        ++multi_handles;
        curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, &impl::on_socket);
        curl_multi_setopt(multi, CURLMOPT_SOCKETDATA, this);
        curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, &impl::on_timer);
        curl_multi_setopt(multi, CURLMOPT_TIMERDATA, this);
    }

    asio::strand<asio::any_io_executor> strand;
    asio::steady_timer timer;
    CURLM* multi = nullptr;
    std::map<curl_socket_t, std::shared_ptr<sock_watch>> sockets;
    std::map<std::uint64_t, std::unique_ptr<transfer>> transfers;
    std::atomic<std::uint64_t> next_id{1};  // allocated at initiation, on any thread
    bool shut_down = false;
    bool timer_armed = false;                                     // `timer` has a wait pending (see on_timer)
    std::optional<std::chrono::steady_clock::time_point> wanted;  // curl's latest deadline
    bool timeout_posted = false;                                  // a 0 ms timeout action is posted
    // Finished easy handles, reset and kept for the next request: creating and destroying one
    // per request allocates and frees its state and buffers each time.
    std::vector<CURL*> idle_easy;
    static constexpr std::size_t max_idle_easy = 64;
    std::shared_ptr<const header_list> last_headers;

    // --- libcurl callbacks: never throw, never call libcurl ------------------------------------

    static int on_socket(CURL*, curl_socket_t s, int what, void* userp, void*)
    {
        auto* self = static_cast<impl*>(userp);
        auto it = self->sockets.find(s);
        if (what == CURL_POLL_REMOVE)
        {
            if (it != self->sockets.end())
            {
                auto& w = *it->second;
                w.want = 0;
                error_code ec;
                if (w.is_foreign)
                {
                    w.foreign.cancel(ec);
                    (void)w.foreign.release();  // deregister, do not close: curl owns it
                    w.closed = true;
                    self->sockets.erase(it);
                }
                else
                    w.socket.cancel(ec);  // else an idle pooled connection keeps run() alive
            }
            return 0;
        }
        if (it == self->sockets.end())
        {
            // A descriptor curl opened itself (e.g. the threaded resolver's socketpair).
            auto w = std::make_shared<sock_watch>(self->strand);
            w->is_foreign = true;
            error_code ec;
            w->foreign.assign(s, ec);
            if (ec)
                return -1;
            it = self->sockets.emplace(s, std::move(w)).first;
        }
        it->second->want = what;
        self->arm(it->second, s);
        return 0;
    }

    // curl asks for a new deadline after nearly every socket action; re-arming the timer each
    // time costs a timerfd_settime syscall (12% of a loopback request's CPU). So the timer is
    // only moved earlier, never later: `wanted` keeps curl's latest deadline, and a timer that
    // fires before it is re-armed for it (curl announces a deadline once: it would not repeat
    // it after a spurious timeout). A 0 ms deadline is one posted action, not a timer.
    static int on_timer(CURLM*, long timeout_ms, void* userp)
    {
        auto* self = static_cast<impl*>(userp);
        if (timeout_ms < 0)
        {
            self->wanted.reset();
            if (self->timer_armed)
                self->timer.cancel();  // no timerfd update; an armed timer would keep run() alive
            self->timer_armed = false;
            return 0;
        }
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
        self->wanted = deadline;
        if (timeout_ms == 0)
        {
            // Never call curl_multi_socket_action from here: post it (once).
            if (!self->timeout_posted)
            {
                self->timeout_posted = true;
                asio::post(self->strand, [w = self->weak_from_this()] {
                    if (auto s = w.lock())
                    {
                        s->timeout_posted = false;
                        s->socket_action(CURL_SOCKET_TIMEOUT, 0);
                    }
                });
            }
            return 0;
        }
        if (!self->timer_armed || self->timer.expiry() > deadline)
            self->arm_timer(deadline);
        return 0;
    }

    void arm_timer(std::chrono::steady_clock::time_point at)
    {
        timer_armed = true;
        timer.expires_at(at);
        timer.async_wait([w = weak_from_this()](error_code ec) {
            if (ec)
                return;
            auto s = w.lock();
            if (!s)
                return;
            s->timer_armed = false;
            if (!s->wanted)
                return;  // curl has no deadline now
            if (*s->wanted > std::chrono::steady_clock::now())
            {
                s->arm_timer(*s->wanted);  // early: wait for curl's latest deadline
                return;
            }
            s->wanted.reset();
            s->socket_action(CURL_SOCKET_TIMEOUT, 0);
        });
    }

    static curl_socket_t on_open(void* clientp, curlsocktype purpose, curl_sockaddr* addr)
    {
        auto* self = static_cast<impl*>(clientp);
        if (purpose != CURLSOCKTYPE_IPCXN || (addr->family != AF_INET && addr->family != AF_INET6))
            return CURL_SOCKET_BAD;
        auto w = std::make_shared<sock_watch>(self->strand);
        error_code ec;
        w->socket.open(addr->family == AF_INET ? asio::ip::tcp::v4() : asio::ip::tcp::v6(), ec);
        if (ec)
            return CURL_SOCKET_BAD;
        const auto fd = w->socket.native_handle();
        self->sockets[fd] = std::move(w);
        return fd;
    }

    static int on_close(void* clientp, curl_socket_t s)
    {
        auto* self = static_cast<impl*>(clientp);
        auto it = self->sockets.find(s);
        if (it == self->sockets.end() || it->second->is_foreign)
            return ::close(s);
        it->second->closed = true;  // fd numbers are reused at once: handlers check this first
        error_code ec;
        it->second->socket.close(ec);
        self->sockets.erase(it);
        return 0;
    }

    static size_t on_body(char* data, size_t size, size_t n, void* userp)
    {
        auto* t = static_cast<transfer*>(userp);
        const std::string_view chunk(data, size * n);
        if (!t->admit(chunk.size()))
            return 0;  // != size * n: curl stops the transfer with CURLE_WRITE_ERROR
        t->resp.body.append(chunk);
        if (t->req.on_data)
            t->req.on_data(chunk);
        return size * n;
    }

    static size_t on_header(char* data, size_t size, size_t n, void* userp)
    {
        auto* t = static_cast<transfer*>(userp);
        std::string_view line(data, size * n);
        if (!t->admit(line.size()))
            return 0;
        const auto colon = line.find(':');
        if (colon != std::string_view::npos)
        {
            std::string name(line.substr(0, colon));
            std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) {
                return static_cast<char>(std::tolower(c));
            });
            std::string_view value = line.substr(colon + 1);
            while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
                value.remove_prefix(1);
            while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' '))
                value.remove_suffix(1);
            if (t->resp.headers.empty())
                t->resp.headers.reserve(8);
            t->resp.headers.emplace_back(std::move(name), std::string(value));
        }
        else if (line.rfind("HTTP/", 0) == 0)
            t->resp.headers.clear();  // a new response (after a 100 Continue or a redirect)
        return size * n;
    }

    // --- event loop glue -------------------------------------------------------------------------

    void arm(const std::shared_ptr<sock_watch>& w, curl_socket_t s)
    {
        auto wait = [&](bool read) {
            auto handler = [weak = weak_from_this(), w, s, read](error_code ec) {
                (read ? w->reading : w->writing) = false;
                if (w->closed)
                    return;
                auto self = weak.lock();
                if (!self)
                    return;
                const int bit = read ? CURL_POLL_IN : CURL_POLL_OUT;
                if (ec != asio::error::operation_aborted && (w->want & bit))
                    self->socket_action(
                        s, ec ? CURL_CSELECT_ERR : (read ? CURL_CSELECT_IN : CURL_CSELECT_OUT)
                    );
                if (!w->closed)
                    self->arm(w, s);  // keep watching while curl wants it (level semantics)
            };
            const auto type = read ? asio::socket_base::wait_read : asio::socket_base::wait_write;
            if (w->is_foreign)
                w->foreign.async_wait(
                    read ? asio::posix::stream_descriptor::wait_read
                         : asio::posix::stream_descriptor::wait_write,
                    handler
                );
            else
                w->socket.async_wait(type, handler);
        };
        if ((w->want & CURL_POLL_IN) && !w->reading)
        {
            w->reading = true;
            wait(true);
        }
        if ((w->want & CURL_POLL_OUT) && !w->writing)
        {
            w->writing = true;
            wait(false);
        }
    }

    void socket_action(curl_socket_t s, int ev)
    {
        int running = 0;
        curl_multi_socket_action(multi, s, ev, &running);
        check_done();
    }

    void check_done()
    {
        int pending = 0;
        while (CURLMsg* msg = curl_multi_info_read(multi, &pending))
        {
            if (msg->msg != CURLMSG_DONE)
                continue;
            CURL* easy = msg->easy_handle;  // copy before remove: msg is invalidated
            const CURLcode result = msg->data.result;
            void* priv = nullptr;
            curl_easy_getinfo(easy, CURLINFO_PRIVATE, &priv);
            const auto id = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(priv));
            long status = 0;
            curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
            auto it = transfers.find(id);
            if (it == transfers.end())
                continue;
            auto& t = *it->second;
            t.resp.status = status;
            if (t.too_large)
                finish(id, make_error_code(errc::response_too_large));
            else if (t.aborting && t.aborting->load(std::memory_order_relaxed))
                finish(id, asio::error::operation_aborted);
            else
                finish(id, from_curl(result));
        }
    }

    // Removes and frees the transfer, then completes its handler (never inline).
    void finish(std::uint64_t id, error_code ec)
    {
        auto it = transfers.find(id);
        if (it == transfers.end())
            return;
        std::unique_ptr<transfer> t = std::move(it->second);
        transfers.erase(it);
        curl_multi_remove_handle(multi, t->easy);
        recycle_easy(t->easy);  // resets CURLOPT_HTTPHEADER before the list may go
        auto h = std::move(*t->handler);
        t->handler.reset();
        complete(std::move(h), ec, std::move(t->resp));
    }

    // Keeps a finished handle for the next request (reset: no option of this one carries over).
    void recycle_easy(CURL* e)
    {
        if (shut_down || idle_easy.size() >= max_idle_easy)
        {
            curl_easy_cleanup(e);
            return;
        }
        curl_easy_reset(e);
        idle_easy.push_back(e);
    }

    CURL* take_easy()
    {
        if (idle_easy.empty())
            return curl_easy_init();
        CURL* e = idle_easy.back();
        idle_easy.pop_back();
        return e;
    }

    // Completes on the caller's executor, never inline. The cancellation slot is the caller's
    // and is emitted on its executor: it is cleared there too, not on this strand (a shared
    // client serves callers on other strands, and a slot is not thread-safe). A cancellation
    // emitted in between finds no transfer with its id and does nothing.
    void complete(asio::any_completion_handler<http_signature> h, error_code ec, http_response resp)
    {
        asio::post(strand, asio::append(clear_then_call{strand, std::move(h)}, ec, std::move(resp)));
    }

    // The caller's handler, run on its associated executor (this strand when it has none),
    // clearing its cancellation slot first.
    struct clear_then_call
    {
        using executor_type = asio::any_completion_executor;
        clear_then_call(
            const asio::strand<asio::any_io_executor>& fallback,
            asio::any_completion_handler<http_signature> handler
        )
            : ex(asio::get_associated_executor(handler, fallback)), h(std::move(handler))
        {}
        executor_type get_executor() const noexcept { return ex; }
        void operator()(error_code ec, http_response resp)
        {
            asio::get_associated_cancellation_slot(h).clear();
            std::move(h)(ec, std::move(resp));
        }
        executor_type ex;
        asio::any_completion_handler<http_signature> h;
    };

    void cancel(std::uint64_t id, asio::cancellation_type type)
    {
        auto it = transfers.find(id);  // by id: a late cancellation after completion is a no-op
        if (it == transfers.end())
            return;
        if ((type & (asio::cancellation_type::terminal | asio::cancellation_type::partial)) ==
            asio::cancellation_type::none)
        {
            curl_off_t pretransfer = 0;
            curl_easy_getinfo(it->second->easy, CURLINFO_PRETRANSFER_TIME_T, &pretransfer);
            if (pretransfer > 0)
                return;  // `total` only before anything can have been sent
        }
        finish(id, asio::error::operation_aborted);
    }

    void start(
        std::uint64_t id,
        http_request req,
        std::shared_ptr<std::atomic<bool>> aborting,
        asio::any_completion_handler<http_signature> h
    )
    {
        if (shut_down)
        {
            complete(std::move(h), asio::error::operation_aborted, http_response{});
            return;
        }
        auto t = std::make_unique<transfer>();
        t->id = id;
        t->req = std::move(req);
        t->aborting = std::move(aborting);
        t->handler.emplace(std::move(h));
        CURL* e = take_easy();
        t->easy = e;
        curl_easy_setopt(e, CURLOPT_URL, t->req.url.c_str());
        curl_easy_setopt(e, CURLOPT_PRIVATE, reinterpret_cast<void*>(static_cast<std::uintptr_t>(t->id)));
        curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &impl::on_body);
        curl_easy_setopt(e, CURLOPT_WRITEDATA, t.get());
        curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &impl::on_header);
        curl_easy_setopt(e, CURLOPT_HEADERDATA, t.get());
        curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, &impl::on_open);
        curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, this);
        curl_easy_setopt(e, CURLOPT_CLOSESOCKETFUNCTION, &impl::on_close);
        curl_easy_setopt(e, CURLOPT_CLOSESOCKETDATA, this);  // multi lifetime: may run after the transfer
        const auto d = deadlines_of(t->req);
        curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, d.connect_timeout_ms);
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, d.total_timeout_ms);
        curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, d.low_speed_time);
        curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, d.low_speed_limit);
        curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, d.tcp_keepalive);
        curl_easy_setopt(e, CURLOPT_TCP_KEEPIDLE, d.keepalive_idle);
        curl_easy_setopt(e, CURLOPT_TCP_KEEPINTVL, d.keepalive_interval);
        curl_easy_setopt(e, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS);  // HTTP/2 where offered
        curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");  // decoded bytes count against the cap
        curl_easy_setopt(
            e,
            CURLOPT_MAXFILESIZE_LARGE,
            static_cast<curl_off_t>(std::min<std::uint64_t>(t->req.max_response_bytes, INT64_MAX))
        );
        curl_easy_setopt(
            e, CURLOPT_FOLLOWLOCATION, 0L
        );  // a 3xx is the answer: never resend the key elsewhere
        curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
        if (t->req.method == "POST")
        {
            // Not copied: the transfer owns the request (and so the body) until it is removed.
            const std::string& body = t->req.shared_body ? *t->req.shared_body : t->req.body;
            curl_easy_setopt(e, CURLOPT_POST, 1L);
            curl_easy_setopt(e, CURLOPT_POSTFIELDS, body.data());
            curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
        }
        else if (t->req.method != "GET")
            curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, t->req.method.c_str());
        if (!last_headers || last_headers->source != t->req.headers)
            last_headers = std::make_shared<const header_list>(t->req.headers);
        t->headers = last_headers;
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->headers->list);

        transfers.emplace(id, std::move(t));
        if (curl_multi_add_handle(multi, e) != CURLM_OK)
            finish(id, make_error_code(errc::transient));
    }

    void shutdown()
    {
        shut_down = true;
        std::vector<std::uint64_t> ids;
        for (const auto& [id, t] : transfers)
            ids.push_back(id);
        for (auto id : ids)
            finish(id, asio::error::operation_aborted);
        timer.cancel();
        for (CURL* e : idle_easy)
            curl_easy_cleanup(e);
        idle_easy.clear();
        curl_multi_cleanup(multi);  // closes pooled connections through on_close
        multi = nullptr;
        --multi_handles;
        for (auto& [fd, w] : sockets)
        {
            w->closed = true;
            error_code ec;
            if (w->is_foreign)
            {
                w->foreign.cancel(ec);
                (void)w->foreign.release();
            }
            else
                w->socket.close(ec);
        }
        sockets.clear();
    }
};

http_client::http_client(asio::any_io_executor ex) : impl_(std::make_shared<impl>(std::move(ex))) {}

http_client::~http_client()
{
    impl_->shutdown();
}

void http_client::request_impl(http_request req, asio::any_completion_handler<http_signature> handler)
{
    // The cancellation hook is installed here, in the initiating function, so that an emission
    // right after initiation is not lost; it runs on the strand after start() (FIFO order).
    const auto id = impl_->next_id++;
    auto aborting = std::make_shared<std::atomic<bool>>(false);
    auto slot = asio::get_associated_cancellation_slot(handler);
    if (slot.is_connected())
        slot.assign(
            [weak = std::weak_ptr(impl_), id, s = impl_->strand, aborting](asio::cancellation_type type) {
                // The flag stops a body mid-burst (checked per chunk); the posted cancel completes it.
                if ((type & (asio::cancellation_type::terminal | asio::cancellation_type::partial)) !=
                    asio::cancellation_type::none)
                    aborting->store(true, std::memory_order_relaxed);
                asio::post(s, [weak, id, type] {
                    if (auto self = weak.lock())
                        self->cancel(id, type);
                });
            }
        );
    // Hop onto the strand; curl calls for this multi stay on it.
    asio::post(
        impl_->strand,
        [self = impl_, id, req = std::move(req), aborting = std::move(aborting), h = std::move(handler)](
        ) mutable { self->start(id, std::move(req), std::move(aborting), std::move(h)); }
    );
}

std::size_t http_client::live_transfers() const
{
    return impl_->transfers.size();
}

std::size_t http_client::live_sockets() const
{
    return impl_->sockets.size();
}

std::size_t http_client::live_multi_handles() noexcept
{
    return multi_handles.load();
}

}  // namespace agentctx::providers
