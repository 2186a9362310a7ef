// The server's shared state: building the registry, the request record, authorization, session observers.
#include "server_state.hpp"

#include "auth.hpp"

#include <spdlog/spdlog.h>

#include <filesystem>

namespace agentctx::server {

namespace http = boost::beast::http;

std::shared_ptr<server_state> server_state::make(boost::asio::io_context& ioc, server_options opts)
{
    auto s = std::make_shared<server_state>(ioc, std::move(opts));
    std::weak_ptr<server_state> weak = s;
    registry_options r;
    r.data_dir = s->opts.data_dir;
    r.pg = s->opts.pg;
    r.max_open_sessions = s->opts.max_open_sessions;
    r.open_threads = s->opts.open_threads;
    r.create_threads = s->opts.create_threads;
    r.before_load = s->opts.before_load;
    r.session_config = [weak] {
        auto self = weak.lock();
        return self ? self->session_config() : runtime::session_config{};
    };
    r.configure = [weak](const std::string& id, runtime::session_config& c) {
        if (auto self = weak.lock())
            self->configure(id, c);
    };
    r.on_open = [weak](const std::shared_ptr<session_slot>& slot) {
        if (auto self = weak.lock())
            self->observe(slot);
    };
    r.free_descriptors = [weak] {
        if (auto self = weak.lock())
            self->free_descriptors();
    };
    s->sessions = std::make_shared<session_registry>(ioc, std::move(r));
    return s;
}

server_state::server_state(boost::asio::io_context& c, server_options o)
    : ioc(c), opts(std::move(o)),
      data_dir_prefix(std::filesystem::absolute(opts.data_dir).lexically_normal().string() + "/"), acceptor(c)
{}

void server_state::record(
    const http_request& req, unsigned status, std::chrono::steady_clock::time_point started
)
{
    const auto route = route_label(req.method_string(), req.target());
    metrics.request(route, status);
    spdlog::debug(
        "request route=\"{}\" status={} body_bytes={} duration_ms={:.3f}",
        route,
        status,
        req.body().size(),
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count()
    );
}

bool server_state::authorized(const http_request& req) const
{
    return !opts.token || bearer_matches(req[http::field::authorization], *opts.token);
}

void server_state::free_descriptors()
{
    constexpr std::size_t sessions_per_attempt = 4;
    const auto closed = sessions->shed_idle(sessions_per_attempt);
    // An unauthenticated connection first, as when the connection cap is reached.
    const bool connection = idle.close_unauthenticated() || idle.close_longest();
    spdlog::warn(
        "out of descriptors: closed {} idle sessions{}",
        closed,
        connection ? " and an unauthenticated or idle connection" : ""
    );
}

runtime::session_config server_state::session_config() const
{
    return runtime::make_session_config(opts.host, ioc.get_executor());
}

void server_state::declare_jobs(const std::string& id, compaction::job_rules jobs)
{
    std::lock_guard lock(jobs_mu_);
    session_jobs_[id] = std::move(jobs);
}

void server_state::forget_jobs(const std::string& id)
{
    std::lock_guard lock(jobs_mu_);
    session_jobs_.erase(id);
}

void server_state::configure(const std::string& id, runtime::session_config& c) const
{
    std::lock_guard lock(jobs_mu_);
    if (const auto it = session_jobs_.find(id); it != session_jobs_.end())
        c.jobs = it->second;
}

namespace {

// A compaction's end in the metrics: its outcome, its duration, and a background one's step.
void count_end(
    server_metrics& m, const runtime::compaction_end_event& end, std::chrono::steady_clock::time_point started
)
{
    const char* outcome = end.result      ? "committed"
                          : end.discarded ? "discarded"
                          : end.aborted   ? "cancelled"
                                          : "failed";
    m.compaction(
        runtime::to_string(end.reason),
        outcome,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()
    );
    if (end.recall)
        m.recall(end.recall->probes, end.recall->found, end.recall->repaired, end.recall->verbatim);
    if (end.reason == runtime::compaction_reason::background && (end.result || end.discarded))
        m.background(outcome, end.discarded.value_or(""));
}

}  // namespace

void server_state::observe(const std::shared_ptr<session_slot>& slot)
{
    if (opts.after_open)
        opts.after_open(*slot->session);
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
    slot->session->on_event([weak = std::weak_ptr(slot),
                             owner = weak_from_this(),
                             dir = data_dir_prefix](const runtime::session_event& e) {
        auto s = weak.lock();
        if (!s)
            return;
        if (std::holds_alternative<runtime::compaction_start_event>(e))
            s->compaction_started = std::chrono::steady_clock::now();
        else if (std::holds_alternative<runtime::budget_exceeded_event>(e))
        {
            if (auto self = owner.lock())
                self->metrics.budget_exceeded();
        }
        else if (const auto* r = std::get_if<runtime::reasoning_transformed_event>(&e))
        {
            if (auto self = owner.lock())
                self->metrics.reasoning_transformed(r->removed, r->allowed, r->reasons);
        }
        else if (std::holds_alternative<runtime::clearing_deferred_event>(e))
        {
            if (auto self = owner.lock())
                self->metrics.clearing_deferred();
        }
        else if (std::holds_alternative<runtime::compaction_prepared_event>(e))
        {
            if (auto self = owner.lock())
                self->metrics.background("prepared");
        }
        else if (const auto* end = std::get_if<runtime::compaction_end_event>(&e))
            if (auto self = owner.lock())
                count_end(self->metrics, *end, s->compaction_started);
        s->subscribers.publish(sse_frame(e, dir));
    });
}

}  // namespace agentctx::server
