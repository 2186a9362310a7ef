// Pi 1.6's tree navigation with a branch summary: summarize the branch being left, then move the leaf and write the entry.
#include "session_core.hpp"

#include "compaction_coordinator.hpp"

#include <agentctx/compaction/branch_summary.hpp>
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
// returns to the host's editor), anything else is the new leaf itself.
std::optional<std::string> new_leaf_for(const entry& target)
{
    const bool user = target.type == entry_type::message && target.message && target.message->role == role::user;
    if (user || target.type == entry_type::custom_message)
        return target.parent_id;
    return target.id;
}

// The branch_summary entry's fields (Pi's order after the base fields).
boost::json::object summary_fields(const std::string& from_id, const branch_summary_text& text,
                                   const std::optional<compaction::usage>& usage)
{
    boost::json::object f{{"type", "branch_summary"}, {"fromId", from_id}, {"summary", text.summary}, {"details", text.details}};
    if (usage)
        f["usage"] = usage_to_json(*usage);
    f["fromHook"] = false;
    return f;
}

// The model's summary of `prep`'s messages (redacted both ways, as a compaction's).
asio::awaitable<result<std::pair<branch_summary_text, std::optional<compaction::usage>>>> summarize_branch(
    session_core& s, const branch_preparation& prep, std::string& why)
{
    const auto& model = s.config_.model;
    auto prompt = branch_summary_prompt(prep.messages, std::nullopt, false, model.context_window, model.max_output_tokens);
    prompt.prompt = s.redactor_->redact(prompt.prompt).text;
    const auto cap = prompt.max_output_tokens;
    auto [ec, out] = co_await s.config_.summarizer->async_summarize(std::move(prompt), asio::as_tuple(asio::use_awaitable));
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
        !ok && !(ok.error() == compaction::errc::summary_empty && s.config_.compat == compat_mode::pi))
    {
        why = d.message;
        co_return ok.error();
    }
    const auto text = s.redactor_->redact(out.text).text;
    co_return std::pair{finish_branch_summary(text, prep.file_ops, s.config_.compat), out.usage};
}

using branch_written = std::optional<std::pair<branch_summary_text, std::optional<compaction::usage>>>;

// What the branch summary entry will say about the entries `range` (none: no entry): the model's
// summary, or Pi's fixed text when the range holds no message.
asio::awaitable<result<branch_written>> branch_summary_for(session_core& s, const std::vector<std::uint32_t>& range,
                                                           std::string& why)
{
    if (range.empty())
        co_return branch_written{};
    diagnostics diag;
    std::vector<entry_ptr> entries;
    for (const auto i : range)
    {
        auto e = s.log_.get(i, diag);
        if (!e)
        {
            why = diag.message;
            co_return e.error();
        }
        entries.push_back(std::move(*e));
    }
    const auto window = s.config_.model.context_window > 0 ? s.config_.model.context_window : 128000;
    const auto prep = prepare_branch_entries(entries, window - default_branch_reserve_tokens);
    if (prep.messages.empty())
        co_return branch_written{std::pair{
            branch_summary_text{std::string(branch_nothing_to_summarize),
                                boost::json::object{{"readFiles", boost::json::array{}}, {"modifiedFiles", boost::json::array{}}}},
            std::optional<compaction::usage>{}}};
    if (!s.config_.summarizer)
    {
        why = "no summarizer is configured";
        co_return make_error_code(errc::no_summarizer);
    }
    auto r = co_await summarize_branch(s, prep, why);
    if (!r)
        co_return r.error();
    co_return branch_written{std::move(*r)};
}

asio::awaitable<navigation_result> navigate(std::shared_ptr<session_core> self, std::string id, bool summarize)
{
    session_core& s = *self;
    co_await asio::this_coro::throw_if_cancelled(false);
    if (s.closed_)
        co_return navigation_result{make_error_code(errc::session_closed), "the session was closed"};
    if (s.coordinator_->running())
        co_return navigation_result{make_error_code(errc::compaction_running), "a compaction is running"};
    diagnostics diag;
    const auto target = s.log_.find(id);
    auto target_entry = target ? s.log_.get(*target, diag) : result<entry_ptr>(compaction::errc::entry_not_found);
    if (!target_entry)
        co_return navigation_result{target_entry.error(), "entry '" + id + "' is not in the session"};
    const auto old_leaf = s.log_.leaf();
    if (old_leaf == target)
        co_return navigation_result{};
    const auto new_leaf = new_leaf_for(**target_entry);
    // Named, not a temporary in the co_await: GCC 12 may destroy such a temporary too early.
    const auto range = summarize ? branch_entries_to_summarize(s.log_, old_leaf, *target) : std::vector<std::uint32_t>{};
    std::string why;
    auto written = co_await branch_summary_for(s, range, why);
    if (!written)
        co_return navigation_result{written.error(), why};
    // The leaf moves and the entry is written in one write turn: no append comes between them.
    co_await awaited<void()>([&s](auto h) { s.enter_writes(std::move(h)); }, asio::use_awaitable);
    auto give_up = [&s](error_code ec, std::string message) {
        s.leave_writes();
        return navigation_result{ec, std::move(message)};
    };
    // Appended to meanwhile: the branch left is not the one summarized.
    if (s.closed_ || s.log_.leaf() != old_leaf)
        co_return give_up(make_error_code(errc::stale_plan), "the session changed during the branch summary");
    if (!new_leaf)
        co_return give_up(make_error_code(compaction::errc::entry_not_found), "the first entry has no parent to return to");
    if (auto b = s.log_.branch(*new_leaf, diag); !b)
        co_return give_up(b.error(), diag.message);
    auto snap = make_snapshot(s.log_, s.counter(), diag);
    if (!snap)
    {
        if (old_leaf)
            (void)s.log_.branch(s.log_.meta(*old_leaf).id, diag);
        co_return give_up(snap.error(), diag.message);
    }
    s.publish(std::move(*snap));
    if (!*written)
        co_return give_up(error_code{}, std::string());
    const std::string from_id = old_leaf ? s.log_.meta(*old_leaf).id : std::string("root");
    auto fields = summary_fields(from_id, (*written)->first, (*written)->second);
    // append_async leaves the write turn itself.
    auto [ec, entry_id] = co_await awaited<append_signature>(
        [&s, &fields](auto h) { s.append_async(std::move(fields), std::move(h)); }, asio::as_tuple(asio::use_awaitable));
    co_return navigation_result{ec, std::move(entry_id)};
}

}  // namespace

void session_core::navigate_impl(std::string id, bool summarize, asio::any_completion_handler<append_signature> h)
{
    auto slot = asio::get_associated_cancellation_slot(h);
    asio::co_spawn(strand_, navigate(shared_from_this(), std::move(id), summarize),
                   asio::bind_cancellation_slot(slot, [h = std::move(h)](std::exception_ptr ep, navigation_result r) mutable {
                       if (ep)
                           r = {make_error_code(errc::io_error), "the branch summary failed unexpectedly"};
                       asio::get_associated_cancellation_slot(h).clear();
                       asio::dispatch(asio::append(std::move(h), r.first, std::move(r.second)));
                   }));
}

}  // namespace agentctx::runtime::detail
