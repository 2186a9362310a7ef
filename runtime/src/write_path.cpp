// The write path: one write turn, one store write per commit, then the log and the snapshot.
#include "write_path.hpp"

#include <agentctx/compaction/message.hpp>
#include <agentctx/runtime/error.hpp>

#include <boost/asio/append.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <tuple>
#include <utility>

namespace agentctx::runtime::detail {

namespace asio = boost::asio;
using boost::system::error_code;
using namespace compaction;

/// The write turn, held: its destructor (or release()) gives the turn to the next writer.
class write_path::turn
{
public:
    explicit turn(write_path& w) : w_(&w) {}
    turn(turn&& o) noexcept : w_(std::exchange(o.w_, nullptr)) {}
    turn& operator=(turn&&) = delete;
    ~turn() { release(); }
    /// Gives the turn on now: before the caller's completion, as the order of writers requires.
    void release()
    {
        if (auto* w = std::exchange(w_, nullptr))
            w->leave();
    }

private:
    write_path* w_;
};

write_path::write_path(
    asio::strand<executor_type> strand,
    std::unique_ptr<store> st,
    session_log log,
    publish_rules rules,
    observers obs,
    std::shared_ptr<spdlog::logger> logger
)
    : strand_(std::move(strand)), store_(std::move(st)), log_(std::move(log)), rules_(std::move(rules)),
      obs_(std::move(obs)), logger_(std::move(logger))
{}

write_path::~write_path()
{
    if (store_)
        store_->on_remote_change({});
}

result<void> write_path::project(diagnostics& diag)
{
    auto snap = make_snapshot(log_, *rules_.counter, diag);
    if (!snap)
        return snap.error();
    publish(std::move(*snap));
    return {};
}

void write_path::publish(std::shared_ptr<const snapshot> next, const entry* appended)
{
    // Reminder snapshots replace each other in every view at once, not only at a compaction.
    // An appended entry that is not one cannot replace anything: no walk over the context.
    if (const auto* pins = rules_.pins;
        pins && rules_.compat != compat_mode::pi && !pins->snapshot_types.empty())
    {
        const auto added = appended ? message_of_entry(*appended) : nullptr;
        if (!appended || (added && is_reminder_snapshot(*pins, *added)))
            if (auto fewer = without_replaced_snapshots(*next, *pins, *rules_.counter))
                next = std::move(fewer);
    }
    const auto prev = snapshot_.exchange(next, std::memory_order_acq_rel);
    for (const auto& note : next->dropped_derived)
    {
        if (prev && std::find(prev->dropped_derived.begin(), prev->dropped_derived.end(), note) !=
                        prev->dropped_derived.end())
            continue;
        logger_->warn(
            "compaction {}: its {} state is not used: {}", note.compaction_id, note.part, note.reason
        );
        obs_.emit(derived_state_dropped_event{note});
    }
}

result<void> write_path::move_leaf(const std::optional<std::string>& id, diagnostics& diag)
{
    if (!id)
    {
        log_.reset_leaf();
        return {};
    }
    return log_.branch(*id, diag);
}

void write_path::enter(asio::any_completion_handler<void()> next)
{
    if (writing_)
    {
        queue_.push_back(std::move(next));
        return;
    }
    writing_ = true;
    std::move(next)();
}

void write_path::leave()
{
    if (queue_.empty())
    {
        writing_ = false;
        return;
    }
    // The turn passes to the next writer (writing_ stays set), on a fresh strand handler.
    auto next = std::move(queue_.front());
    queue_.pop_front();
    asio::post(strand_, std::move(next));
}

void write_path::async_commit(prepare_fn prepare, commit_handler h)
{
    asio::dispatch(strand_, [this, prepare = std::move(prepare), h = std::move(h)]() mutable {
        enter([this, prepare = std::move(prepare), h = std::move(h)]() mutable {
            turn t(*this);
            diagnostics diag;
            auto plan = prepare(diag);
            if (!plan)
            {
                t.release();
                return std::move(h)(plan.error(), std::move(diag.message));
            }
            if (plan->entries.empty())
            {
                // Nothing to store; a leaf move (a navigation with nothing to record) still happens.
                auto moved = adopt(*plan, diag);
                t.release();
                return std::move(h)(moved ? error_code{} : moved.error(), std::move(diag.message));
            }
            write(std::move(t), std::move(*plan), std::move(h));
        });
    });
}

void write_path::write(turn t, commit_plan plan, commit_handler h)
{
    auto entries = plan.entries;
    // The one call of the store's write: a single entry is a batch of one.
    store_->async_write_batch(
        strand_,
        std::move(entries),
        log_.size(),
        [this, t = std::move(t), plan = std::move(plan), h = std::move(h)](
            error_code ec, std::string message
        ) mutable {
            diagnostics diag;
            if (!ec)
                if (auto r = adopt(plan, diag); !r)
                    std::tie(ec, message) = std::pair(r.error(), diag.message);
            if (ec != make_error_code(errc::stale_leaf))
            {
                if (ec)
                    logger_->warn("write of {} entries failed: {}", plan.entries.size(), message);
                t.release();
                return std::move(h)(ec, std::move(message));
            }
            // Another node appended first: catch up in the same turn, so a retry sees its entries.
            reload_in_turn(std::move(t), [h = std::move(h), ec, message](error_code) mutable {
                std::move(h)(ec, std::move(message));
            });
        }
    );
}

result<void> write_path::adopt(const commit_plan& plan, diagnostics& diag)
{
    if (plan.leaf)
        if (auto r = move_leaf(*plan.leaf, diag); !r)
            return r.error();
    for (const auto& e : plan.entries)
    {
        const auto previous_leaf = log_.leaf_id();
        if (auto r = log_.append(e, diag); !r)
            return r.error();  // validated before the write: only a broken log gets here
        if (plan.next)
            continue;
        if (e->type == entry_type::context_edit || e->parent_id != previous_leaf)
        {
            // An edit changes an earlier entry's contribution, and an entry off the leaf (a history
            // replacement's new branch) leaves the old path: project again.
            if (auto r = project(diag); !r)
                return r.error();
        }
        else
            publish(extend_snapshot(*current(), *e, *rules_.counter), e.get());
        obs_.adopted(*e);
    }
    if (plan.next)
        publish(plan.next);
    return {};
}

void write_path::async_reload(std::function<bool()> wanted, reload_handler h)
{
    asio::dispatch(strand_, [this, wanted = std::move(wanted), h = std::move(h)]() mutable {
        enter([this, wanted = std::move(wanted), h = std::move(h)]() mutable {
            turn t(*this);
            if (wanted && !wanted())
            {
                t.release();
                return std::move(h)(error_code{});
            }
            reload_in_turn(std::move(t), std::move(h));
        });
    });
}

void write_path::reload_in_turn(turn t, reload_handler h)
{
    store_->async_reload(
        strand_,
        [this, t = std::move(t), h = std::move(h)](error_code ec, std::string text) mutable {
            auto done = [&](error_code result) {
                t.release();
                std::move(h)(result);
            };
            if (ec)
            {
                logger_->warn("reloading the session failed: {}", text);
                return done(ec);
            }
            if (text.empty())
                return done(error_code{});  // a single writer: nothing can be new
            diagnostics diag;
            load_report report;
            auto log = store_->load_text(std::move(text), rules_.load, report, diag);
            auto snap = log ? make_snapshot(*log, *rules_.counter, diag)
                            : result<std::shared_ptr<const snapshot>>(log.error());
            if (!snap)
            {
                logger_->warn("the stored session does not load: {}", diag.message);
                return done(snap.error());
            }
            const std::size_t before = log_.size();
            if (log->size() <= before)
                return done(error_code{});
            remote_change_event changed{log->size(), {}};
            for (std::size_t i = before; i < log->size(); ++i)
                if (log->meta(i).type == entry_type::compaction)
                    changed.compactions.push_back(log->meta(i).id);
            log_ = std::move(*log);
            publish(std::move(*snap));
            obs_.reloaded();
            obs_.emit(changed);
            done(error_code{});
        }
    );
}

void write_path::async_lease(asio::any_completion_handler<store_lease_signature> h)
{
    store_->async_lease(strand_, std::move(h));
}

void write_path::on_remote_change(std::function<void(std::size_t)> callback)
{
    store_->on_remote_change(std::move(callback));
}

}  // namespace agentctx::runtime::detail
