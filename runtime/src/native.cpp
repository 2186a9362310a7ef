// Provider-native compaction: select it or say why not, send the whole window once, check what returns.
#include "transaction.hpp"

#include <agentctx/compaction/cancelled.hpp>
#include <agentctx/compaction/llm_convert.hpp>
#include <agentctx/compaction/serialize.hpp>
#include <agentctx/compaction/summary_prompt.hpp>
#include <agentctx/runtime/error.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <spdlog/spdlog.h>

namespace agentctx::runtime {

namespace asio = boost::asio;
using namespace compaction;

namespace {

// The complete eligible window: the previous summary (replaced by its native state on the
// wire when that state is the provider's), everything summarized, the turn prefix.
std::vector<context_message> eligible_window(const compaction_preparation& prep, const std::optional<std::string>& previous)
{
    std::vector<context_message> w;
    w.reserve(prep.messages_to_summarize.size() + prep.turn_prefix_messages.size() + 1);
    if (prep.previous_summary && previous)
    {
        auto m = std::make_shared<message>();
        m->role = role::compaction_summary;
        m->summary = *prep.previous_summary;
        w.push_back({std::move(m), *previous});
    }
    w.insert(w.end(), prep.messages_to_summarize.begin(), prep.messages_to_summarize.end());
    w.insert(w.end(), prep.turn_prefix_messages.begin(), prep.turn_prefix_messages.end());
    return w;
}

std::size_t secrets_in(const redactor& r, const std::vector<context_message>& window)
{
    std::size_t n = 0;
    for (const auto& [rule, count] : r.redact(serialize_conversation(convert_to_llm(messages_of(window)))).counts)
        n += count;
    return n;
}

}  // namespace

asio::awaitable<transaction::step<std::optional<providers::native_reply>>> transaction::try_native(session_core& s,
                                                                                                   session_core::job& j,
                                                                                                   const plan& p)
{
    using chosen = std::optional<providers::native_reply>;
    auto& why = j.evidence.native_selection;
    auto& summarizer = *s.config_.summarizer;
    const auto caps = summarizer.capabilities();
    if (!caps.native_compaction)
    {
        why = "portable: " + summarizer.name() + " offers no native compaction";
        co_return chosen{};
    }
    const auto previous = previous_compaction_id(p.path);
    providers::native_request req;
    req.window = eligible_window(p.prep, previous);
    std::int64_t tokens = 0;
    for (const auto& m : req.window)
        tokens += static_cast<std::int64_t>(s.counter().count(*m.msg));
    const std::string approx = "~" + std::to_string(tokens) + " tokens";
    // Never split: a window that one request cannot carry goes to portable recovery directly.
    const auto budget = s.config_.model.context_window - s.config_.settings.reserve_tokens;
    if (s.config_.model.context_window > 0 && tokens > budget)
    {
        why = "portable: the eligible window (" + approx + ") is over what one request may carry (" +
              std::to_string(budget) + " = contextWindow - reserveTokens); native compaction is never split";
        co_return chosen{};
    }
    if (tokens < caps.native_min_tokens)
    {
        why = "portable: the eligible window (" + approx + ") is under the provider's minimum for native compaction (" +
              std::to_string(caps.native_min_tokens) + " tokens)";
        co_return chosen{};
    }
    // Portable requests are redacted; a native one sends the window as it is.
    if (const auto n = secrets_in(*s.redactor_, req.window); n > 0)
    {
        why = "portable: the eligible window holds " + std::to_string(n) +
              " secret(s) that native compaction would send unredacted";
        co_return chosen{};
    }
    const auto snap = s.current();
    if (snap->native && previous && snap->native->entry_id == *previous)
        req.previous = *snap->native;
    if (snap->system)
        req.system = content_text(snap->system->content);
    req.instructions = std::string(initial_summary_instructions) +
                       (j.request.instructions ? "\n\nAdditional focus: " + *j.request.instructions : std::string());
    req.model = s.config_.model.model_id;
    if (!still_wanted(s, j, (co_await asio::this_coro::cancellation_state).cancelled()))
        co_return failure{make_error_code(errc::cancelled), "cancelled"};
    ++j.model_calls;
    auto [ec, reply] = co_await summarizer.async_compact_native(std::move(req), asio::as_tuple(asio::use_awaitable));
    j.evidence.usage = combine_usage(j.evidence.usage, reply.usage);  // billed whether or not it is used
    if (agentctx::is_cancelled(ec) || !still_wanted(s, j, (co_await asio::this_coro::cancellation_state).cancelled()))
        co_return failure{make_error_code(errc::cancelled), "cancelled"};
    if (ec)
    {
        why = "portable: native compaction failed (" + ec.message() + "): " + reply.failure_detail;
        s.logger_->warn("compaction: {}", why);
        co_return chosen{};
    }
    if (reply.readable && !s.redactor_->redact(*reply.readable).counts.empty())
    {
        why = "portable: the native summary holds a secret, and the block is kept verbatim";
        co_return chosen{};
    }
    why = "native: " + summarizer.name() + " compacted the whole eligible window (" + approx + ") in one request";
    co_return chosen{std::move(reply)};
}

}  // namespace agentctx::runtime
