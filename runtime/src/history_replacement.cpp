// History replacement: a host's whole transcript compared with the context, the difference appended as a
// branch.
#include "history_replacement.hpp"

#include "append_batch.hpp"
#include "session_core.hpp"

#include <agentctx/compaction/llm_convert.hpp>
#include <agentctx/compaction/unresolved_calls.hpp>
#include <agentctx/runtime/error.hpp>

#include <boost/asio/append.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/post.hpp>
#include <boost/json/array.hpp>

#include <spdlog/spdlog.h>

#include <unordered_set>
#include <utility>

namespace agentctx::runtime::detail {

namespace asio = boost::asio;
namespace json = boost::json;
using boost::system::error_code;
using namespace compaction;

namespace {

using replace_handler = asio::any_completion_handler<replace_history_signature>;

// Never inside the initiating call: through the strand's queue.
void finish(
    replace_handler h,
    const asio::strand<asio::any_io_executor>& strand,
    error_code ec,
    replace_history_result r
)
{
    asio::get_associated_cancellation_slot(h).clear();
    asio::post(strand, asio::append(std::move(h), ec, std::move(r)));
}

// A content as blocks: a string is one text block; empty text and thinking are left out.
json::array comparable_content(const content& c)
{
    json::array out;
    if (c.is_string)
    {
        if (!c.text.empty())
            out.push_back(json::object{{"type", "text"}, {"text", c.text}});
        return out;
    }
    for (const auto& b : c.blocks)
    {
        if (const auto* t = std::get_if<text_block>(&b); t && !t->text.empty())
            out.push_back(json::object{{"type", "text"}, {"text", t->text}});
        else if (const auto* i = std::get_if<image_block>(&b))
            out.push_back(json::object{{"type", "image"}, {"data", i->data}, {"mimeType", i->mime_type}});
        else if (const auto* call = std::get_if<tool_call_block>(&b))
            out.push_back(json::object{
                {"type", "toolCall"}, {"id", call->id}, {"name", call->name}, {"arguments", call->arguments}}
            );
        else if (const auto* other = std::get_if<other_block>(&b))
            out.push_back(json::object{{"type", other->type}});
    }
    return out;
}

bool is_system(const message& m)
{
    return m.role == role::system;
}

}  // namespace

json::value comparable_message(const message& m)
{
    json::object o{{"role", m.role == role::other ? std::string_view(m.role_name) : to_string(m.role)}};
    switch (m.role)
    {
    case role::compaction_summary:
    case role::branch_summary:
        o["summary"] = m.summary;
        break;
    case role::bash_execution:
        o["command"] = m.command;
        o["output"] = m.output;
        break;
    case role::system:
        o["content"] = content_text(m.content);
        break;
    default:
        o["content"] = comparable_content(m.content);
        break;
    }
    if (m.role == role::tool_result)
    {
        o["toolCallId"] = m.tool_call_id;
        o["isError"] = m.is_error;
    }
    if (m.role == role::custom)
        o["customType"] = m.custom_type;
    return o;
}

bool same_message(const std::shared_ptr<const message>& ctx, const message& host)
{
    const auto theirs = comparable_message(host);
    if (comparable_message(*ctx) == theirs)
        return true;
    for (const auto framing : {summary_framing::pi, summary_framing::reference_history})
    {
        const auto sent = convert_to_llm(std::span(&ctx, 1), framing);
        if (sent.size() == 1 && comparable_message(*sent.front()) == theirs)
            return true;
    }
    return false;
}

namespace {

// How many context messages from `i` the host's message stands for: one the same message, or a
// run of user-like messages a wire view merged into one user turn (Anthropic alternates roles),
// whose contents in a row are the host message's; 0 for none.
std::size_t matched_run(std::span<const context_message> view, std::size_t i, const message& host)
{
    if (same_message(view[i].msg, host))
        return 1;
    if (host.role != role::user)
        return 0;
    const auto want = comparable_content(host.content);
    for (const auto framing : {summary_framing::pi, summary_framing::reference_history})
    {
        json::array got;
        for (std::size_t p = i; p < view.size() && got.size() < want.size(); ++p)
        {
            const auto sent = convert_to_llm(std::span(&view[p].msg, 1), framing);
            if (sent.size() != 1 || sent.front()->role != role::user)
                break;
            for (auto& b : comparable_content(sent.front()->content))
                got.push_back(std::move(b));
            if (got == want)
                return p - i + 1;
        }
    }
    return 0;
}

}  // namespace

result<replacement_plan> plan_replacement(
    const session_log& log,
    std::span<const context_message> view,
    const std::vector<bool>& own,
    std::span<const message> host,
    diagnostics& diag
)
{
    replacement_plan p;
    std::size_t i = 0;  // the context's next message
    std::size_t j = 0;  // the host's message after the last matched one
    for (;;)
    {
        while (i < view.size() && is_system(*view[i].msg))
            ++i;
        std::size_t k = j;
        while (k < host.size() && is_system(host[k]))
            ++k;
        const std::size_t n = i == view.size() || k == host.size() ? 0 : matched_run(view, i, host[k]);
        if (n == 0)
            break;
        i += n;
        j = k + 1;
        ++p.shared;
    }
    p.tail_from = j;
    // The first differing message an entry holds (observations have none; system messages are
    // kept where they are): the branch grows from the entry before it.
    std::size_t d = i;
    while (d < view.size() && (!own[d] || is_system(*view[d].msg)))
        ++d;
    if (d == view.size())
    {
        p.changed = j < host.size();
        p.fork = log.leaf_id();
        return p;
    }
    p.changed = true;
    const auto at = log.find(view[d].entry_id);
    if (!at)
    {
        diag.message = "the context's entry '" + view[d].entry_id + "' is not in the log";
        return compaction::errc::entry_not_found;
    }
    if (log.type_of(*at) == entry_type::compaction)
    {
        p.refused = true;
        return p;
    }
    if (const auto parent = log.meta(*at).parent; parent >= 0)
        p.fork = log.meta(static_cast<std::size_t>(parent)).id;
    return p;
}

namespace {

// The host's messages decoded (nothing written yet); a bad one names its index and field.
result<std::vector<message>> decode_all(const std::vector<json::object>& messages, std::string& reason)
{
    std::vector<message> out;
    out.reserve(messages.size());
    for (std::size_t i = 0; i < messages.size(); ++i)
    {
        diagnostics diag;
        auto m = decode_message(messages[i], "message", diag);
        if (!m)
        {
            reason = "[" + std::to_string(i) + "] " + diag.message;
            return m.error();
        }
        out.push_back(std::move(*m));
    }
    return out;
}

// The entries the replacement appends: the tail as message entries, or, when the list only
// shortens the context, one marker entry so that the leaf's move survives a reopen.
std::vector<json::object> tail_fields(
    std::vector<json::object>& messages, std::size_t from, const std::string& old_leaf
)
{
    std::vector<json::object> fields;
    for (std::size_t i = from; i < messages.size(); ++i)
        fields.push_back(json::object{{"type", "message"}, {"message", std::move(messages[i])}});
    if (fields.empty())
        fields.push_back(json::object{
            {"type", "custom"},
            {"customType", history_replaced_type},
            {"data", json::object{{"fromId", old_leaf}}}});
    return fields;
}

// prepare_batch's `[i] …` counts from the tail: the same reason with the index in the host's list.
std::string in_host_list(const std::string& reason, std::size_t tail_from)
{
    const auto close = reason.find(']');
    if (reason.size() < 3 || reason.front() != '[' || close == std::string::npos ||
        reason.find_first_not_of("0123456789", 1) != close)
        return reason;
    return "[" + std::to_string(tail_from + std::stoul(reason.substr(1, close - 1))) + reason.substr(close);
}

// Inside the write turn: the host's list compared with the context, then the tail prepared as
// a batch (or nothing to write). A refusal fills `r` and returns its code.
compaction::result<commit_plan> plan_in_turn(
    const session_core& s, std::vector<json::object>& messages, replace_history_result& r
)
{
    r.old_leaf_id = s.log().leaf_id().value_or(std::string());
    if (s.closed())
        return make_error_code(errc::session_closed);
    auto host = decode_all(messages, r.reason);
    if (!host)
        return host.error();
    const auto snap = s.current();
    const auto ctx = snap->messages.to_vector();
    std::unordered_set<const message*> own_messages;
    for (const auto& m : ctx)
        own_messages.insert(m.msg.get());
    const auto view = with_unknown_outcomes(ctx, s.config().compat);
    std::vector<bool> own;
    for (const auto& m : view)
        own.push_back(own_messages.count(m.msg.get()) > 0);
    diagnostics diag;
    auto plan = plan_replacement(s.log(), view, own, *host, diag);
    if (!plan)
    {
        r.reason = diag.message;
        return plan.error();
    }
    r.shared = plan->shared;
    if (plan->refused)
    {
        r.reason = "message [" + std::to_string(plan->shared) +
                   "] differs inside the latest compaction's summary: summarized history cannot be replaced";
        return make_error_code(errc::summarized_history);
    }
    if (!plan->changed)
        return commit_plan{};
    auto fields = tail_fields(messages, plan->tail_from, r.old_leaf_id);
    std::string reason;
    auto entries = prepare_batch(s.log(), std::move(fields), plan->fork, reason);
    if (!entries)
    {
        r.reason = in_host_list(reason, plan->tail_from);
        return entries.error();
    }
    r.fork_id = plan->fork.value_or(std::string());
    for (const auto& e : *entries)
        r.ids.push_back(e->id);
    return commit_plan{std::move(*entries), std::nullopt, nullptr};
}

}  // namespace

void replace_history(
    std::shared_ptr<session_core> core, std::vector<json::object> messages, replace_handler h
)
{
    auto strand = core->strand();
    asio::post(strand, [self = std::move(core), messages = std::move(messages), h = std::move(h)]() mutable {
        if (self->closed())
            return finish(std::move(h), self->strand(), make_error_code(errc::session_closed), {});
        auto r = std::make_shared<replace_history_result>();
        auto prepare = [self, messages = std::move(messages), r](diagnostics&) mutable {
            return plan_in_turn(*self, messages, *r);
        };
        self->writes().async_commit(
            std::move(prepare),
            [self, r, h = std::move(h)](error_code ec, std::string message) mutable {
                // The plan names its entries only once it is ready to write them: a refusal
                // before that leaves none, and a failure with entries named is the store's.
                if (ec && !r->ids.empty())
                {
                    r->ids.clear();  // the store refused: nothing was appended
                    r->reason = std::move(message);
                }
                r->changed = !ec && !r->ids.empty();
                if (r->changed)
                    self->logger().debug(
                        "history replaced: {} messages shared, branch from '{}'", r->shared, r->fork_id
                    );
                finish(std::move(h), self->strand(), ec, std::move(*r));
            }
        );
    });
}

}  // namespace agentctx::runtime::detail
