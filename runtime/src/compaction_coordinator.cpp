// The compaction lifecycle state machine (see compaction_coordinator.hpp).
#include "compaction_coordinator.hpp"

#include <algorithm>
#include <utility>

namespace agentctx::runtime::detail {

namespace asio = boost::asio;

bool honours(asio::cancellation_type t) noexcept
{
    constexpr auto accepted =
        asio::cancellation_type::terminal | asio::cancellation_type::partial | asio::cancellation_type::total;
    return (t & accepted) != asio::cancellation_type::none;
}

std::optional<compaction_reason> compaction_coordinator::running_reason() const
{
    if (!current_)
        return std::nullopt;
    return current_->request.reason;
}

const operation_request* compaction_coordinator::request(operation_id id) const
{
    const auto* op = find(id);
    return op ? &op->request : nullptr;
}

bool compaction_coordinator::aborted(operation_id id) const
{
    const auto* op = find(id);
    return op && op->aborted;
}

compaction_coordinator::operation compaction_coordinator::make(
    caller_id initiator, operation_request req, bool cancelled_early
)
{
    operation op;
    op.id = next_id_++;
    op.request = std::move(req);
    op.initiator = initiator;
    if (initiator != 0)  // a background operation has no caller
        op.waiters.push_back(initiator);
    op.aborted = cancelled_early;  // the run then unwinds at once with `cancelled`
    return op;
}

coordinator_effects compaction_coordinator::start(
    caller_id caller, operation_request req, bool cancelled_early
)
{
    current_ = make(caller, std::move(req), cancelled_early);
    return {.launch = current_->id};
}

coordinator_effects compaction_coordinator::adopt(
    caller_id caller, operation_request req, bool cancelled_early
)
{
    coordinator_effects fx;
    if (prepared_)
    {
        prepared_ = false;  // the provider's compaction replaces the prefix a prepared one covers
        fx.discard_prepared = discard_reason::superseded;
    }
    auto started = start(caller, std::move(req), cancelled_early);
    started.discard_prepared = fx.discard_prepared;
    return started;
}

coordinator_effects compaction_coordinator::compact(
    caller_id caller, std::optional<std::string> instructions, bool cancelled_early
)
{
    const bool manual_running = current_ && current_->request.reason == compaction_reason::manual;
    const bool manual_pending = next_ && next_->request.reason == compaction_reason::manual;
    if (manual_pending || manual_running)
    {
        // Join the pending (or running) manual compaction.
        if (cancelled_early)
            return {.cancelled = {caller}};
        (manual_pending ? *next_ : *current_).waiters.push_back(caller);
        return {};
    }
    coordinator_effects fx;
    if (prepared_)
    {
        prepared_ = false;  // a manual compaction plans afresh, with its own instructions
        fx.discard_prepared = discard_reason::superseded;
    }
    operation_request req{.reason = compaction_reason::manual, .instructions = std::move(instructions)};
    if (!current_)
    {
        auto started = start(caller, std::move(req), cancelled_early);
        started.discard_prepared = fx.discard_prepared;
        return started;
    }
    // An automatic compaction is running: abort it; ours starts once it has unwound.
    if (next_)
    {
        // A check queued behind a background compaction: its callers wait for ours instead.
        next_->request = std::move(req);
        next_->initiator = caller;
        next_->waiters.push_back(caller);
        next_->aborted = next_->aborted || cancelled_early;
    }
    else
        next_ = make(caller, std::move(req), cancelled_early);
    current_->aborted = true;
    current_->superseded = true;
    fx.interrupt = current_->id;
    return fx;
}

coordinator_effects compaction_coordinator::cancel(caller_id caller, asio::cancellation_type type)
{
    if (!honours(type))
        return {};
    if (next_ && current_ && current_->request.reason == compaction_reason::background && !current_->aborted)
        return leave_queue(caller);
    for (auto* op : {current_ ? &*current_ : nullptr, next_ ? &*next_ : nullptr})
    {
        if (!op)
            continue;
        if (op->initiator == caller)
        {
            op->aborted = true;
            if (op == &*current_)
                return {.interrupt = op->id};
            return {};  // pending: it unwinds at once when it is launched
        }
        const auto it = std::find(op->waiters.begin(), op->waiters.end(), caller);
        if (it != op->waiters.end())
        {
            op->waiters.erase(it);  // a joined caller: only its wait ends
            return {.cancelled = {caller}};
        }
    }
    return {};  // not linked (yet, or any more): `cancelled_early` covers the first case
}

coordinator_effects compaction_coordinator::leave_queue(caller_id caller)
{
    auto& waiters = next_->waiters;
    const auto it = std::find(waiters.begin(), waiters.end(), caller);
    if (it == waiters.end())
        return {};
    waiters.erase(it);
    if (waiters.empty())
        next_.reset();  // nobody waits: the background compaction's result stays prepared
    else if (next_->initiator == caller)
        next_->initiator = waiters.front();
    return {.cancelled = {caller}};
}

coordinator_effects compaction_coordinator::abort_all(bool closing)
{
    coordinator_effects fx;
    if (closing && prepared_)
    {
        prepared_ = false;
        fx.discard_prepared = discard_reason::closed;
    }
    if (next_)
        next_->aborted = true;
    if (!current_)
        return fx;
    current_->aborted = true;
    fx.interrupt = current_->id;
    return fx;
}

finished_operation compaction_coordinator::finish(operation_id id, bool held, bool commit_now)
{
    finished_operation out;
    if (!current_ || current_->id != id)
        return out;
    // An aborted background operation never holds a result, even one it had prepared.
    if (held && current_->request.reason == compaction_reason::background && !current_->aborted)
        prepared_ = true;
    out.waiters = std::move(current_->waiters);
    current_.reset();
    if (next_)
    {
        current_ = std::move(next_);
        next_.reset();
        out.launch = current_->id;
    }
    else if (held && prepared_ && commit_now)
    {
        current_ = make(0, {.reason = compaction_reason::background, .prepared_only = true}, false);
        out.launch = current_->id;
    }
    return out;
}

bool compaction_coordinator::background_running() const noexcept
{
    return current_ && current_->request.reason == compaction_reason::background &&
           !current_->request.prepared_only;
}

bool compaction_coordinator::superseded(operation_id id) const
{
    const auto* op = find(id);
    return op && op->superseded;
}

coordinator_effects compaction_coordinator::start_background()
{
    current_ = make(0, {.reason = compaction_reason::background}, false);
    return {.launch = current_->id};
}

coordinator_effects compaction_coordinator::await_background(
    caller_id caller, operation_request req, bool cancelled_early
)
{
    if (cancelled_early)
        return {.cancelled = {caller}};
    if (next_)
        next_->waiters.push_back(caller);
    else
        next_ = make(caller, std::move(req), false);
    return {};
}

compaction_coordinator::operation* compaction_coordinator::find(operation_id id)
{
    if (current_ && current_->id == id)
        return &*current_;
    if (next_ && next_->id == id)
        return &*next_;
    return nullptr;
}

const compaction_coordinator::operation* compaction_coordinator::find(operation_id id) const
{
    return const_cast<compaction_coordinator*>(this)->find(id);
}

}  // namespace agentctx::runtime::detail
