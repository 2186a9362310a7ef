// The hook set: registration wraps synchronous hooks; each list runs in order, a throwing callback is
// skipped.
#include "hook_set.hpp"

#include <spdlog/spdlog.h>

namespace agentctx::runtime::detail {

namespace asio = boost::asio;

namespace {

// Awaits each of the host's hooks in order; one that throws is logged and the next still runs.
template <class Hooks, class Event>
asio::awaitable<void> await_each(const Hooks& hooks, const Event& e, spdlog::logger& log, const char* what)
{
    for (const auto& h : hooks)
    {
        try
        {
            co_await h(e);
        }
        catch (const std::exception& ex)
        {
            log.error("{} threw: {}", what, ex.what());
        }
    }
}

}  // namespace

hook_set::hook_set(std::shared_ptr<spdlog::logger> logger, std::function<void(const session_event&)> observer)
    : logger_(std::move(logger)), observer_(std::move(observer))
{}

void hook_set::add(event_listener l)
{
    listeners_.push_back(std::move(l));
}

void hook_set::add(before_compact_hook h)
{
    // The closure lives in the list, which is not changed while operations run.
    before_.push_back(
        [h = std::move(h)](const before_compact_event& e) -> asio::awaitable<before_compact_decision> {
            co_return h(e);
        }
    );
}

void hook_set::add(async_before_compact_hook h)
{
    before_.push_back(std::move(h));
}

void hook_set::add(compacted_hook h)
{
    compacted_.push_back([h = std::move(h)](const compacted_event& e) -> asio::awaitable<void> {
        h(e);
        co_return;
    });
}

void hook_set::add(async_compacted_hook h)
{
    compacted_.push_back(std::move(h));
}

void hook_set::add(compact_failed_hook h)
{
    failed_.push_back([h = std::move(h)](const compact_failed_event& e) -> asio::awaitable<void> {
        h(e);
        co_return;
    });
}

void hook_set::add(async_compact_failed_hook h)
{
    failed_.push_back(std::move(h));
}

void hook_set::emit(const session_event& e) const
{
    if (observer_)
        observer_(e);
    for (const auto& l : listeners_)
    {
        try
        {
            l(e);
        }
        catch (const std::exception& ex)
        {
            logger_->error("event listener threw: {}", ex.what());
        }
    }
}

asio::awaitable<void> hook_set::run_compacted(const compacted_event& e) const
{
    co_await await_each(compacted_, e, *logger_, "compacted hook");
}

asio::awaitable<void> hook_set::run_failed(const compact_failed_event& e) const
{
    co_await await_each(failed_, e, *logger_, "compact_failed hook");
}

}  // namespace agentctx::runtime::detail
