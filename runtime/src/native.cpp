// Provider-native compaction: select it or say why not, send the whole window once, check what returns.
#include "compaction_run.hpp"

#include <agentctx/compaction/cancelled.hpp>
#include <agentctx/compaction/llm_convert.hpp>
#include <agentctx/compaction/serialize.hpp>
#include <agentctx/compaction/summary_prompt.hpp>
#include <agentctx/runtime/error.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <spdlog/spdlog.h>

namespace agentctx::runtime::detail {

namespace asio = boost::asio;
using namespace compaction;

namespace {

// The complete eligible window: the previous summary (replaced by its native state on the
// wire when that state is the provider's), everything summarized, the turn prefix.
std::vector<context_message> eligible_window(
    const compaction_preparation& prep, const std::optional<std::string>& previous
)
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
    for (const auto& [rule, count] :
         r.redact(serialize_conversation(convert_to_llm(messages_of(window)))).counts)
        n += count;
    return n;
}

// Why the summarizer may not compact natively for this session: native compaction replaces the
// loop's own context with a block only the loop's model reads, so it runs on that model only.
std::optional<std::string> other_model_because(
    const model_identity& serving, const providers::summarizer_capabilities& caps
)
{
    if (caps.provider == serving.provider && caps.model == serving.model_id)
        return std::nullopt;
    return "portable: the summarizer (" + caps.provider + ":" + caps.model + ") is not the serving model (" +
           serving.provider + ":" + serving.model_id +
           "); native compaction runs only on the loop's own model";
}

// Why the window goes portable after it was measured; nullopt when native may be tried.
std::optional<std::string> portable_because(
    const session_config& config,
    const providers::summarizer_capabilities& caps,
    std::int64_t tokens,
    const std::string& measured
)
{
    // Never split: a window that one request cannot carry goes to portable recovery directly.
    const auto budget = config.model.context_window - config.settings.reserve_tokens;
    if (config.model.context_window > 0 && tokens > budget)
        return "portable: the eligible window (" + measured + ") is over what one request may carry (" +
               std::to_string(budget) + " = contextWindow - reserveTokens); native compaction is never split";
    if (tokens < caps.native_min_tokens)
        return "portable: the eligible window (" + measured +
               ") is under the provider's minimum for native compaction (" +
               std::to_string(caps.native_min_tokens) + " tokens)";
    return std::nullopt;
}

// The loop's own request around the window: its system prompt, tools, tool_choice and parameters
// (session_config::conversation), else the replayed system prompt alone.
void add_loop_request(const session_config& config, const snapshot& snap, providers::native_request& req)
{
    if (snap.system)
        req.system = content_text(snap.system->content);
    if (!config.conversation)
        return;
    auto host = config.conversation();
    if (!host)
        return;
    if (host->system.is_string())
        req.system = std::string(host->system.get_string());
    req.tools = std::move(host->tools);
    req.tool_choice = std::move(host->tool_choice);
    req.parameters = std::move(host->parameters);
}

bool holds_tool_results(const std::vector<context_message>& window)
{
    for (const auto& m : window)
        if (m.msg->role == role::tool_result)
            return true;
    return false;
}

}  // namespace

// The window's size in tokens and how it was measured: the provider's exact count of the native
// request where the summarizer counts, else (and when the count fails) the estimate, said so.
asio::awaitable<compaction_run::step<std::pair<std::int64_t, std::string>>> compaction_run::measure_native(
    const providers::native_request& req
)
{
    using measured = std::pair<std::int64_t, std::string>;
    std::int64_t estimate = 0;
    for (const auto& m : req.window)
        estimate += static_cast<std::int64_t>(cx_.counter().count(*m.msg));
    const std::string approx = "~" + std::to_string(estimate) + " tokens, estimated";
    auto& summarizer = *cx_.config().summarizer;
    if (!summarizer.capabilities().exact_counting)
        co_return measured{estimate, approx + ": the provider offers no exact count"};
    ++j_.evidence.counting_calls;
    auto [ec, tokens] = co_await summarizer.async_count_native(req, asio::as_tuple(asio::use_awaitable));
    if (agentctx::is_cancelled(ec) ||
        !still_wanted((co_await asio::this_coro::cancellation_state).cancelled()))
        co_return failure{make_error_code(errc::cancelled), "cancelled"};
    if (ec || tokens <= 0)
    {
        const std::string why = ec ? ec.message() : std::string("no tokens");
        cx_.logger().warn("compaction: the native window's count failed ({}); the estimate decides", why);
        co_return measured{estimate, approx + ": the count failed (" + why + ")"};
    }
    co_return measured{tokens, std::to_string(tokens) + " tokens, counted by the provider"};
}

asio::awaitable<compaction_run::step<std::optional<providers::native_reply>>> compaction_run::try_native(
    const plan& p
)
{
    using chosen = std::optional<providers::native_reply>;
    auto& why = j_.evidence.native_selection;
    if (j_.request.adopted)
        co_return adopted_reply();
    auto& summarizer = *cx_.config().summarizer;
    const auto caps = summarizer.capabilities();
    if (!caps.native_compaction)
    {
        why = "portable: " + summarizer.name() + " offers no native compaction";
        co_return chosen{};
    }
    const auto serving = cx_.budgets().serving();
    if (auto other = other_model_because(serving, caps))
    {
        why = std::move(*other);
        co_return chosen{};
    }
    const auto previous = previous_compaction_id(p.path);
    providers::native_request req;
    req.window = eligible_window(p.prep, previous);
    // Portable requests are redacted; a native one sends the window as it is.
    if (const auto n = secrets_in(cx_.redaction(), req.window); n > 0)
    {
        why = "portable: the eligible window holds " + std::to_string(n) +
              " secret(s) that native compaction would send unredacted";
        co_return chosen{};
    }
    const auto snap = cx_.current();
    if (snap->native && previous && snap->native->entry_id == *previous)
        req.previous = *snap->native;
    add_loop_request(cx_.config(), *snap, req);
    if (caps.head_format == providers::wire_format::anthropic && req.tools.empty() &&
        holds_tool_results(req.window))
    {
        why = "portable: the eligible window holds tool calls and the session names no tools "
              "(session_config::conversation); Anthropic refuses tool_use blocks without them";
        co_return chosen{};
    }
    req.instructions =
        std::string(initial_summary_instructions) +
        (j_.request.instructions ? "\n\nAdditional focus: " + *j_.request.instructions : std::string());
    req.model = serving.model_id;
    if (caps.inline_compaction)  // OpenAI inline: the loop's own context_management threshold
        req.compact_threshold = cx_.threshold();
    auto size = co_await measure_native(req);
    if (!size)
        co_return size.error();
    const auto& [tokens, measured] = *size;
    if (auto portable = portable_because(cx_.config(), caps, tokens, measured))
    {
        why = std::move(*portable);
        co_return chosen{};
    }
    co_return co_await call_native(std::move(req), measured);
}

// The provider's compaction item from the loop's own reply, as the reply a native request would
// have returned: validated as a stored state is, billed with the loop's reply (no usage here).
compaction_run::step<std::optional<providers::native_reply>> compaction_run::adopted_reply()
{
    // Only a session whose views advertise inline compaction adopts: its summarizer is the
    // provider's, so the state is replayed (a snapshot drops another writer's native state).
    const auto& summarizer = *cx_.config().summarizer;
    if (!summarizer.capabilities().inline_compaction)
        return failure{
            make_error_code(providers::errc::not_configured),
            "the provider's compaction item cannot be adopted: the summarizer (" + summarizer.name() +
                ") does not use OpenAI inline compaction (provider.native.openai inline or auto)"};
    const auto serving = cx_.budgets().serving();
    const boost::json::object stored{
        {"provider", "openai"},
        {"model", serving.model_id},
        {"output", boost::json::array{j_.request.adopted->item}}};
    providers::diagnostics diag;
    auto state = providers::parse_native_state(stored, diag);
    if (!state)
        return failure{state.error(), "the provider's compaction item is not valid: " + diag.message};
    j_.evidence.native_selection =
        "native: adopted the compaction item of the loop's own reply (the provider compacted the "
        "history before entry '" +
        j_.request.adopted->first_kept + "' inside that request)";
    providers::native_reply reply;
    reply.state = std::move(*state);
    return std::optional<providers::native_reply>(std::move(reply));
}

// The native request itself, and what its reply means for the compaction.
asio::awaitable<compaction_run::step<std::optional<providers::native_reply>>> compaction_run::call_native(
    providers::native_request req, const std::string& measured
)
{
    using chosen = std::optional<providers::native_reply>;
    auto& why = j_.evidence.native_selection;
    auto& summarizer = *cx_.config().summarizer;
    if (!still_wanted((co_await asio::this_coro::cancellation_state).cancelled()))
        co_return failure{make_error_code(errc::cancelled), "cancelled"};
    ++j_.model_calls;
    auto [ec, reply] =
        co_await summarizer.async_compact_native(std::move(req), asio::as_tuple(asio::use_awaitable));
    j_.evidence.usage = combine_usage(j_.evidence.usage, reply.usage);  // billed whether or not it is used
    if (agentctx::is_cancelled(ec) ||
        !still_wanted((co_await asio::this_coro::cancellation_state).cancelled()))
        co_return failure{make_error_code(errc::cancelled), "cancelled"};
    if (ec)
    {
        why = "portable: native compaction failed (" + ec.message() + "): " + reply.failure_detail;
        cx_.logger().warn("compaction: {}", why);
        co_return chosen{};
    }
    if (reply.readable && !cx_.redaction().redact(*reply.readable).counts.empty())
    {
        why = "portable: the native summary holds a secret, and the block is kept verbatim";
        co_return chosen{};
    }
    why = "native: " + summarizer.name() + " compacted the whole eligible window (" + measured +
          ") in one request";
    co_return chosen{std::move(reply)};
}

}  // namespace agentctx::runtime::detail
