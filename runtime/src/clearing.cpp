// The tool-result clearing tier on the session: the plan on the snapshot, the host's evidence store, one
// batch of context edits, the event.
#include "append_batch.hpp"
#include "clearing_evidence.hpp"
#include "compaction_coordinator.hpp"
#include "reasoning_binding.hpp"
#include "session_core.hpp"

#include <agentctx/compaction/jobs.hpp>
#include <agentctx/compaction/tool_clearing.hpp>
#include <agentctx/runtime/error.hpp>

#include <boost/asio/append.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>

#include <spdlog/spdlog.h>

namespace agentctx::runtime::detail {

namespace asio = boost::asio;
using boost::system::error_code;
using namespace compaction;

namespace {

// Pinned or required by the host: never cleared.
bool host_protects(const session_core& s, const std::string& id)
{
    if (s.config().pins.empty() && s.config().required.empty())
        return false;
    diagnostics diag;
    const auto index = s.log().find(id);
    auto e = index ? s.log().get(*index, diag) : result<entry_ptr>(compaction::errc::entry_not_found);
    return e && (s.config().pins.pins(**e) || s.config().required.requires_entry(**e));
}

// An assistant entry's content as projected now: the last edit on the path that replaces it, else its own.
const boost::json::array* projected_content(
    const session_core& s, const std::string& id, std::vector<entry_ptr>& hold
)
{
    diagnostics diag;
    const auto path = s.log().active_path();
    for (std::size_t k = path.size(); k-- > 0;)
    {
        const auto& meta = s.log().meta(path[k]);
        if (meta.id == id)
            break;
        if (meta.type != entry_type::context_edit || meta.target_id != id)
            continue;
        auto e = s.log().get(path[k], diag);
        if (!e)
            return nullptr;
        hold.push_back(*e);
        const auto* r = (*e)->raw.if_contains("replacement");
        const auto* c = r && r->is_object() ? r->get_object().if_contains("content") : nullptr;
        return c && c->is_array() ? &c->get_array() : nullptr;
    }
    const auto index = s.log().find(id);
    auto e = index ? s.log().get(*index, diag) : result<entry_ptr>(compaction::errc::entry_not_found);
    if (!e || !(*e)->raw.contains("message"))
        return nullptr;
    hold.push_back(*e);
    const auto* c = (*e)->raw.at("message").as_object().if_contains("content");
    return c && c->is_array() ? &c->get_array() : nullptr;
}

// For a model that binds reasoning: the clearing waits for the next compaction (one prefix break
// instead of two) unless it frees more than the reasoning after its first edit that it drops.
std::optional<clearing_deferred_event> defer_for_reasoning(
    const session_core& s,
    std::span<const context_message> context,
    const clearing_plan& plan,
    std::int64_t tokens
)
{
    if (!binds_reasoning(s.budgets().serving().provider))
        return std::nullopt;
    std::size_t first = context.size();
    for (std::size_t i = 0; i < context.size() && first == context.size(); ++i)
        for (const auto& e : plan.edits)
            if (context[i].entry_id == e.target_id)
                first = i;
    const auto loss = reasoning_lost(s.log(), context, first);
    if (loss.blocks == 0 || plan.tokens > loss.tokens)
        return std::nullopt;
    return clearing_deferred_event{plan.results, plan.tokens, loss.blocks, loss.tokens, tokens};
}

}  // namespace

namespace {

using next_handler = asio::any_completion_handler<void(std::int64_t)>;

// One batch of context edits, then the event; `next` gets the context's size as it is now.
void write_clearing(
    std::shared_ptr<session_core> self,
    std::vector<boost::json::object> fields,
    context_cleared_event event,
    std::int64_t tokens,
    next_handler next
)
{
    append_entries(
        self,
        std::move(fields),
        [self, event = std::move(event), next = std::move(next), tokens](
            error_code ec, append_batch_result r
        ) mutable {
            if (ec)
            {
                // The session goes on without clearing; the next check tries again.
                self->logger().warn("clearing tool results failed: {}", r.reason);
                return std::move(next)(tokens);
            }
            event.edit_ids = std::move(r.ids);
            self->emit(event);
            std::move(next)(self->current()->context_tokens());
        }
    );
}

// The host's answer for the batch's originals: a refusal pauses those entries and writes nothing;
// references go into each edit's details.agentctx.evidenceRefs. Clearing is an optimisation: in
// every case the check goes on.
void after_evidence(
    std::shared_ptr<session_core> self,
    clearing_evidence ev,
    std::vector<boost::json::object> fields,
    context_cleared_event event,
    std::int64_t tokens,
    std::optional<std::size_t> leaf,
    next_handler next
)
{
    session_core& s = *self;
    if (ev.cancelled || s.closed())
        return std::move(next)(tokens);
    if (!ev.refused.empty())
    {
        s.logger().warn(
            "clearing tool results paused for {} entries: {}", event.target_ids.size(), ev.refused
        );
        s.ledger().suppression().clearing_refused(event.target_ids);
        s.emit(clearing_refused_event{event.target_ids, std::move(ev.refused), tokens});
        return std::move(next)(tokens);
    }
    // The plan was made on the history before the host answered: only that history is edited.
    if (ev.failed.empty() &&
        (s.log().leaf() != leaf || s.coordinator().running() || s.coordinator().prepared()))
        ev.failed = "the session changed while the evidence store was asked";
    if (!ev.failed.empty())
    {
        s.logger().warn("clearing tool results skipped: {}", ev.failed);
        return std::move(next)(tokens);
    }
    for (std::size_t k = 0; k < fields.size() && k < ev.references.size(); ++k)
    {
        boost::json::array refs;
        for (const auto& r : ev.references[k])
            refs.push_back(to_json(r));
        fields[k]["details"] =
            boost::json::object{{"agentctx", boost::json::object{{"evidenceRefs", std::move(refs)}}}};
    }
    write_clearing(std::move(self), std::move(fields), std::move(event), tokens, std::move(next));
}

// Asks the host's evidence store on the strand (close() cancels it), then after_evidence.
void ask_then_write(
    std::shared_ptr<session_core> self,
    std::vector<boost::json::object> fields,
    context_cleared_event event,
    std::int64_t tokens,
    next_handler next
)
{
    session_core& s = *self;
    s.set_clearing_asking(true);
    auto targets = event.target_ids;
    asio::co_spawn(
        s.strand(),
        ask_clearing_evidence(self, std::move(targets)),
        asio::bind_cancellation_slot(
            s.clearing_abort_slot(),
            [self,
             fields = std::move(fields),
             event = std::move(event),
             tokens,
             leaf = s.log().leaf(),
             next = std::move(next)](std::exception_ptr ep, clearing_evidence ev) mutable {
                self->set_clearing_asking(false);
                self->clearing_abort_slot().clear();
                if (ep)
                    ev.failed = "the evidence store's answer failed unexpectedly";
                after_evidence(
                    std::move(self),
                    std::move(ev),
                    std::move(fields),
                    std::move(event),
                    tokens,
                    leaf,
                    std::move(next)
                );
            }
        )
    );
}

}  // namespace

void session_core::clear_then(std::int64_t tokens, asio::any_completion_handler<void(std::int64_t)> next)
{
    const auto& settings = config().settings.clear_tool_results;
    // A running or held compaction is not disturbed: its covered prefix would no longer hold.
    // One clearing at a time: another check's clearing may be waiting for the evidence store.
    if (!clearing_enabled(settings, config().compat) || config().model.context_window <= 0 ||
        coordinator().running() || coordinator().prepared() || clearing_asking())
        return std::move(next)(tokens);
    const auto snap = current();
    const auto context = snap->messages.to_vector();
    std::vector<entry_ptr> hold;  // keeps the entries whose content the plan reads alive
    clearing_input in;
    in.context = context;
    in.context_tokens = tokens;
    in.threshold = threshold();
    in.counter = &counter();
    // Entries whose originals the evidence store refused are left alone, as the host's own.
    // A running job's launch exchange is never cleared: its result may carry the job's id.
    std::vector<running_job> jobs;
    if (!config().jobs.empty())
    {
        diagnostics diag;
        if (auto ctx = build_session_context(log(), diag))
            jobs = find_running_jobs(ctx->entries, config().jobs);
    }
    in.protected_entry = [this, &jobs](const std::string& id) {
        return ledger_.suppression().clearing_paused(id) || host_protects(*this, id) ||
               in_running_job(jobs, id);
    };
    in.assistant_content = [this, &hold](const std::string& id) {
        return projected_content(*this, id, hold);
    };
    auto plan = plan_tool_clearing(settings, in);
    if (plan.edits.empty())
        return std::move(next)(tokens);
    if (auto deferred = defer_for_reasoning(*this, context, plan, tokens))
    {
        logger().debug(
            "clearing deferred: it frees ~{} tokens and would drop {} thinking blocks (~{} tokens)",
            plan.tokens,
            deferred->reasoning_blocks,
            deferred->reasoning_tokens
        );
        emit(*deferred);
        return std::move(next)(tokens);
    }
    std::vector<boost::json::object> fields;
    context_cleared_event event{plan.results, plan.tokens, tokens, {}, {}};
    for (auto& e : plan.edits)
    {
        event.target_ids.push_back(e.target_id);
        fields.push_back(
            {{"type", "context_edit"}, {"targetId", e.target_id}, {"replacement", std::move(e.replacement)}}
        );
    }
    if (!config().preserve_evidence)
        return write_clearing(
            shared_from_this(), std::move(fields), std::move(event), tokens, std::move(next)
        );
    ask_then_write(shared_from_this(), std::move(fields), std::move(event), tokens, std::move(next));
}

void session_core::original_impl(std::string id, asio::any_completion_handler<original_signature> h)
{
    asio::post(strand_, [self = shared_from_this(), id = std::move(id), h = std::move(h)]() mutable {
        session_core& s = *self;
        diagnostics diag;
        error_code ec;
        boost::json::object out;
        const auto index = s.closed() ? std::nullopt : s.log().find(id);
        if (s.closed())
            ec = make_error_code(runtime::errc::session_closed);
        else if (!index)
            ec = make_error_code(compaction::errc::entry_not_found);
        else if (auto e = s.log().get(*index, diag); !e)
            ec = e.error();
        else
            out = (*e)->raw;
        asio::get_associated_cancellation_slot(h).clear();
        asio::post(s.strand(), asio::append(std::move(h), ec, std::move(out)));
    });
}

}  // namespace agentctx::runtime::detail
