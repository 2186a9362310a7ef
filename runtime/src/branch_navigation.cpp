// Pi 1.6's tree navigation: the before_branch hooks, the branch summary, the leaf's move, the summary and
// label entries, the branched hooks.
#include "session_core.hpp"

#include "append_check.hpp"
#include "compaction_coordinator.hpp"

#include <agentctx/compaction/branch_summary.hpp>
#include <agentctx/compaction/json_text.hpp>
#include <agentctx/compaction/cancelled.hpp>
#include <agentctx/compaction/summary.hpp>
#include <agentctx/runtime/error.hpp>

#include <boost/asio/append.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <spdlog/spdlog.h>

namespace agentctx::runtime::detail {

namespace asio = boost::asio;
using boost::system::error_code;
using namespace compaction;

namespace {

using navigation_result = std::pair<error_code, std::string>;

// An operation of the session as an awaitable with the given token.
template <class Signature, class Initiation, class Token>
auto awaited(Initiation init, Token token)
{
    return asio::async_initiate<Token, Signature>(std::move(init), token);
}

// Where the leaf goes: a user message or a custom message goes back to its parent (its text
// returns to the host's editor; none for a first entry), anything else is the new leaf itself.
std::optional<std::string> new_leaf_for(const entry& target)
{
    const bool user =
        target.type == entry_type::message && target.message && target.message->role == role::user;
    if (user || target.type == entry_type::custom_message)
        return target.parent_id;
    return target.id;
}

// What the branch_summary entry will say.
struct branch_text
{
    std::string summary;
    boost::json::value details;  ///< null: no `details` field (a hook's summary without one)
    std::optional<compaction::usage> usage;
    bool from_hook = false;
};

// The branch_summary entry's fields (Pi's order after the base fields; absent ones left out).
boost::json::object summary_fields(const std::string& from_id, const branch_text& text)
{
    boost::json::object f{{"type", "branch_summary"}, {"fromId", from_id}, {"summary", text.summary}};
    if (!text.details.is_null())
        f["details"] = text.details;
    if (text.usage)
        f["usage"] = usage_to_json(*text.usage);
    f["fromHook"] = text.from_hook;
    return f;
}

// The instructions as the options and the hooks left them.
struct instructions
{
    std::optional<std::string> custom;
    bool replace = false;
};

// The model's summary of `prep`'s messages (redacted both ways, as a compaction's), asked with
// the session's thinking level.
asio::awaitable<result<branch_text>> summarize_branch(
    session_core& s, const branch_preparation& prep, const instructions& instr, std::string& why
)
{
    const auto& model = s.config().model;
    auto prompt = branch_summary_prompt(
        prep.messages, instr.custom, instr.replace, model.context_window, model.max_output_tokens
    );
    prompt.prompt = s.redaction().redact(prompt.prompt).text;
    if (const auto snap = s.current(); snap->thinking_level != "off")
        prompt.reasoning_effort = snap->thinking_level;
    const auto cap = prompt.max_output_tokens;
    auto [ec, out] = co_await s.config().summarizer->async_summarize(
        std::move(prompt), asio::as_tuple(asio::use_awaitable)
    );
    if (agentctx::is_cancelled(ec))
        co_return make_error_code(errc::cancelled);
    if (ec)
    {
        why = "branch summary request failed: " + ec.message();
        co_return ec;
    }
    diagnostics d;
    // Pi accepts an empty branch summary (the preamble stands alone); agentctx does not.
    if (auto ok = check_summary_output(out, cap, d, summary_kind::branch);
        !ok && !(ok.error() == compaction::errc::summary_empty && s.config().compat == compat_mode::pi))
    {
        why = d.message;
        co_return ok.error();
    }
    const auto text = s.redaction().redact(out.text).text;
    auto finished = finish_branch_summary(text, prep.file_ops, s.config().compat);
    co_return branch_text{std::move(finished.summary), std::move(finished.details), out.usage, false};
}

// The model's summary of `entries` (not empty), or Pi's fixed text when they hold no message.
asio::awaitable<result<branch_text>> model_summary(
    session_core& s, const std::vector<entry_ptr>& entries, const instructions& instr, std::string& why
)
{
    const auto window = s.config().model.context_window > 0 ? s.config().model.context_window : 128000;
    const auto prep = prepare_branch_entries(entries, window - default_branch_reserve_tokens);
    if (prep.messages.empty())
        co_return branch_text{
            std::string(branch_nothing_to_summarize),
            boost::json::object{{"readFiles", boost::json::array{}}, {"modifiedFiles", boost::json::array{}}},
            std::nullopt,
            false};
    co_return co_await summarize_branch(s, prep, instr, why);
}

// A hook's summary, redacted as the model's would be.
branch_text hook_summary(const session_core& s, hook_branch_summary h)
{
    return branch_text{s.redaction().redact(h.summary).text, std::move(h.details), h.usage, true};
}

// The navigation's state between its steps.
struct navigation
{
    std::string target_id;
    entry_ptr target;
    std::optional<std::size_t> old_leaf;
    std::optional<std::string> old_leaf_id;
    std::vector<entry_ptr> entries;  ///< the branch being left, oldest first
    std::optional<std::string> common_ancestor_id;
};

// Pi's collectEntriesForBranchSummary: the entries and the entry both paths share last.
result<void> collect(const session_core& s, navigation& n, std::string& why)
{
    diagnostics diag;
    const auto target = s.log().find(n.target_id);
    for (const auto i : branch_entries_to_summarize(s.log(), n.old_leaf, *target))
    {
        auto e = s.log().get(i, diag);
        if (!e)
        {
            why = diag.message;
            return e.error();
        }
        n.entries.push_back(std::move(*e));
    }
    if (!n.entries.empty())
        n.common_ancestor_id = n.entries.front()->parent_id;
    else
        n.common_ancestor_id = n.old_leaf_id;  // the old leaf is on the target's path
    return {};
}

// The summary and label entries, chained from `new_leaf` (the label on the summary, else on the
// target), each validated as an append would be; nothing is written. Pi's field order.
result<std::vector<entry_ptr>> navigation_entries(
    const session_core& s,
    const navigation& n,
    const std::optional<std::string>& new_leaf,
    const std::optional<branch_text>& text,
    const std::string& label,
    diagnostics& diag
)
{
    std::vector<entry_ptr> out;
    std::optional<std::string> parent = new_leaf;
    const std::string now = iso_timestamp_now();
    auto add = [&](boost::json::object f) -> result<void> {
        std::string id = s.log().new_id();
        while (!out.empty() && out.front()->id == id)
            id = s.log().new_id();
        boost::json::object raw{
            {"type", f["type"]},
            {"id", id},
            {"parentId", parent ? boost::json::value(*parent) : boost::json::value(nullptr)},
            {"timestamp", now}};
        for (auto& kv : f)
            if (kv.key() != "type")
                raw[kv.key()] = std::move(kv.value());
        auto e = decode_entry(std::move(raw), diag);
        if (!e)
            return e.error();
        // The first is checked against the log; a label on the summary has its parent and
        // target in this batch.
        if (out.empty())
            if (auto ok = check_appendable(s.log(), *e, diag); !ok)
                return ok.error();
        parent = id;
        out.push_back(std::make_shared<const entry>(std::move(*e)));
        return {};
    };
    if (text)
        if (auto r = add(summary_fields(n.old_leaf_id.value_or("root"), *text)); !r)
            return r.error();
    if (!label.empty())
    {
        boost::json::object f{
            {"type", "label"}, {"targetId", text ? out.front()->id : n.target_id}, {"label", label}};
        if (auto r = add(std::move(f)); !r)
            return r.error();
    }
    return out;
}

// What the navigation installs: the new leaf's snapshot and the entries written after it.
struct planned_move
{
    std::optional<std::string> new_leaf;
    std::shared_ptr<const snapshot> snap;
    std::vector<entry_ptr> entries;
};

// Puts the log's leaf at `id` (none: before the first entry).
result<void> set_leaf(session_core& s, const std::optional<std::string>& id, diagnostics& diag)
{
    return s.writes().move_leaf(id, diag);
}

// The move computed at the new leaf, then the leaf put back where it was: nothing is moved
// until the entries are stored.
result<planned_move> plan_move(
    session_core& s,
    const navigation& n,
    const std::optional<branch_text>& text,
    const std::string& label,
    diagnostics& diag
)
{
    planned_move m{new_leaf_for(*n.target), nullptr, {}};
    if (auto b = set_leaf(s, m.new_leaf, diag); !b)
        return b.error();
    auto snap = make_snapshot(s.log(), s.counter(), diag);
    auto entries = snap ? navigation_entries(s, n, m.new_leaf, text, label, diag)
                        : result<std::vector<entry_ptr>>(snap.error());
    diagnostics ignored;
    (void)set_leaf(s, n.old_leaf_id, ignored);
    if (!entries)
        return entries.error();
    m.snap = std::move(*snap);
    m.entries = std::move(*entries);
    return m;
}

// In one write turn: the summary and label entries are written in one store write, and only
// then does the leaf move and the new snapshot go out; a refusal or a failed write leaves the
// leaf where it was. Completes with the summary's id.
asio::awaitable<navigation_result> move_and_write(
    session_core& s, const navigation& n, const std::optional<branch_text>& text, const std::string& label
)
{
    const auto cs = co_await asio::this_coro::cancellation_state;
    std::string summary_id;
    auto prepare = [&](diagnostics& diag) -> result<commit_plan> {
        // Cancelled or closed while another write held the turn: nothing moves, nothing is written.
        if (cs.cancelled() != asio::cancellation_type::none)
        {
            diag.message = "cancelled";
            return make_error_code(errc::cancelled);
        }
        if (s.closed())
        {
            diag.message = "the session was closed";
            return make_error_code(errc::session_closed);
        }
        // Appended to meanwhile: the branch left is not the one summarized.
        if (s.log().leaf() != n.old_leaf)
        {
            diag.message = "the session changed during the branch summary";
            return make_error_code(errc::stale_plan);
        }
        auto m = plan_move(s, n, text, label, diag);
        if (!m)
            return m.error();
        // Stored: the leaf moves and the entries join the log (validated here, so this holds).
        auto snap = m->snap;
        for (const auto& e : m->entries)
            snap = extend_snapshot(*snap, *e, s.counter());
        if (text && !m->entries.empty())
            summary_id = m->entries.front()->id;
        return commit_plan{std::move(m->entries), m->new_leaf, std::move(snap)};
    };
    // Not cancellable once the write is sent: only the store's answer says whether it committed.
    auto [ec, message] = co_await awaited<void(error_code, std::string)>(
        [&](auto h) { s.writes().async_commit(prepare, std::move(h)); },
        asio::bind_cancellation_slot(asio::cancellation_slot(), asio::as_tuple(asio::use_awaitable))
    );
    if (ec)
        co_return navigation_result{ec, std::move(message)};
    co_return navigation_result{error_code{}, std::move(summary_id)};
}

// The checks Pi makes before anything runs; fills `n`. A set error code ends the navigation
// (`done` with no error: already at the target).
navigation_result start(session_core& s, navigation& n, const branch_options& opts, bool& done)
{
    if (s.closed())
        return {make_error_code(errc::session_closed), "the session was closed"};
    if (s.coordinator().running())
        return {make_error_code(errc::compaction_running), "a compaction is running"};
    n.old_leaf = s.log().leaf();
    n.old_leaf_id = s.log().leaf_id();
    if (n.old_leaf_id == n.target_id)
    {
        done = true;
        return {};
    }
    if (opts.summarize && !s.config().summarizer)
        return {make_error_code(errc::no_summarizer), "no summarizer is configured"};
    diagnostics diag;
    const auto target = s.log().find(n.target_id);
    auto target_entry =
        target ? s.log().get(*target, diag) : result<entry_ptr>(compaction::errc::entry_not_found);
    if (!target_entry)
        return {target_entry.error(), "entry '" + n.target_id + "' is not in the session"};
    n.target = std::move(*target_entry);
    std::string why;
    if (auto c = collect(s, n, why); !c)
        return {c.error(), why};
    return {};
}

// What the navigation goes on with once the before_branch hooks have answered.
struct after_hooks
{
    instructions instr;
    std::string label;
    std::optional<hook_branch_summary> supplied;  ///< a hook's summary, when one was asked for
};

// The before_branch hooks (Pi's session_before_tree) and their answer applied to the options.
// A set error code ends the navigation: cancelled meanwhile, or a hook's cancel.
asio::awaitable<navigation_result> run_before_hooks(
    session_core& s, const navigation& n, const branch_options& opts, after_hooks& out
)
{
    out = after_hooks{
        {opts.custom_instructions, opts.replace_instructions},
        opts.label.value_or(std::string()),
        std::nullopt};
    if (!s.hooks().branch().has_before())
        co_return navigation_result{};
    auto cs = co_await asio::this_coro::cancellation_state;
    const before_branch_event e{
        n.target_id,
        n.old_leaf_id,
        n.common_ancestor_id,
        n.entries,
        opts.summarize,
        opts.custom_instructions,
        opts.replace_instructions,
        opts.label,
        cs.slot()};
    auto r = co_await s.hooks().branch().run_before(e, s.logger(), [&s, cs] {
        return s.closed() || cs.cancelled() != asio::cancellation_type::none;
    });
    if (r.stopped)
        co_return navigation_result{make_error_code(errc::cancelled), "cancelled"};
    auto& d = r.decision;
    if (d.cancel)
        co_return navigation_result{
            make_error_code(errc::hook_cancelled), "cancelled by a before_branch hook"};
    if (opts.summarize)
        out.supplied = std::move(d.summary);
    if (d.custom_instructions)
        out.instr.custom = std::move(d.custom_instructions);
    if (d.replace_instructions)
        out.instr.replace = *d.replace_instructions;
    if (d.label)
        out.label = std::move(*d.label);
    co_return navigation_result{};
}

// The branched hooks (Pi's session_tree), once the context is installed; awaited.
asio::awaitable<void> run_after_hooks(
    session_core& s,
    const navigation& n,
    const std::optional<branch_text>& text,
    const std::string& summary_id
)
{
    diagnostics diag;
    entry_ptr summary;
    if (const auto i = summary_id.empty() ? std::nullopt : s.log().find(summary_id))
        if (auto e = s.log().get(*i, diag))
            summary = std::move(*e);
    const auto new_leaf_id = s.log().leaf_id();
    const branched_event after{
        new_leaf_id,
        n.old_leaf_id,
        summary.get(),
        text ? std::optional<bool>(text->from_hook) : std::nullopt};
    co_await s.hooks().branch().run_after(after, s.logger());
}

asio::awaitable<navigation_result> navigate(
    std::shared_ptr<session_core> self, std::string id, branch_options opts
)
{
    session_core& s = *self;
    co_await asio::this_coro::throw_if_cancelled(false);
    navigation n;
    n.target_id = std::move(id);
    bool done = false;
    if (auto r = start(s, n, opts, done); r.first || done)
        co_return r;
    after_hooks h;
    if (auto r = co_await run_before_hooks(s, n, opts, h); r.first)
        co_return r;
    std::optional<branch_text> text;
    if (h.supplied)
        text = hook_summary(s, std::move(*h.supplied));
    else if (opts.summarize && !n.entries.empty())
    {
        std::string why;
        auto r = co_await model_summary(s, n.entries, h.instr, why);
        if (!r)
            co_return navigation_result{r.error(), why};
        text = std::move(*r);
    }
    // An empty summary (a hook's) writes no entry, as Pi.
    if (text && text->summary.empty())
        text.reset();
    auto [ec, summary_id] = co_await move_and_write(s, n, text, h.label);
    if (ec)
        co_return navigation_result{ec, std::move(summary_id)};
    // Written and moved: a cancellation while a hook runs reaches the hook, not the outcome.
    co_await run_after_hooks(s, n, text, summary_id);
    co_return navigation_result{error_code{}, std::move(summary_id)};
}

}  // namespace

void session_core::navigate_impl(
    std::string id, branch_options opts, asio::any_completion_handler<append_signature> h
)
{
    // A signal of its own, so that hooks always get a connected slot; the caller's cancellation
    // is forwarded to it.
    auto signal = std::make_shared<asio::cancellation_signal>();
    if (auto slot = asio::get_associated_cancellation_slot(h); slot.is_connected())
        slot.assign([signal](asio::cancellation_type t) { signal->emit(t); });
    asio::co_spawn(
        strand_,
        navigate(shared_from_this(), std::move(id), std::move(opts)),
        asio::bind_cancellation_slot(
            signal->slot(),
            [h = std::move(h), signal](std::exception_ptr ep, navigation_result r) mutable {
                if (ep)
                    r = {make_error_code(errc::io_error), "the branch summary failed unexpectedly"};
                asio::get_associated_cancellation_slot(h).clear();
                asio::dispatch(asio::append(std::move(h), r.first, std::move(r.second)));
            }
        )
    );
}

}  // namespace agentctx::runtime::detail
