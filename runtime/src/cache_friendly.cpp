// Cache-friendly summary requests: the conversation's own request, then the checkpoint instructions; the
// standalone fallback.
#include "scrub_strings.hpp"
#include "compaction_run.hpp"

#include <agentctx/compaction/cancelled.hpp>
#include <agentctx/compaction/pinned.hpp>
#include <agentctx/compaction/unresolved_calls.hpp>
#include <agentctx/providers/chat_messages.hpp>

#include <boost/json/serialize.hpp>

#include <spdlog/spdlog.h>

namespace agentctx::runtime::detail {

namespace asio = boost::asio;
namespace json = boost::json;
using namespace compaction;

namespace {

// nullopt: cache-friendly; otherwise what evidence.request says instead.
std::optional<std::string> standalone_because(
    const session_config& c, const providers::summarizer_capabilities& caps
)
{
    const auto mode = c.settings.summary_request;
    if (mode == summary_request_mode::standalone)
        return "standalone";
    if (!mode)
    {
        // The default: only where the conversation's cache can be read (hosted, same model).
        const bool hosted = caps.provider == "anthropic" || caps.provider == "openai";
        if (!hosted || !caps.head_format || (!c.model.model_id.empty() && caps.model != c.model.model_id))
            return "standalone";
    }
    if (!caps.head_format)
        return "standalone: the summarizer sends standalone requests only";
    return std::nullopt;
}

std::size_t serialized_size(const json::value& v)
{
    return v.is_null() ? 0 : json::serialize(v).size();
}

using render_fn = std::function<json::array(std::span<const context_message>)>;

// Where context[0, at) ends among the rendered messages of the whole context.
struct boundary
{
    std::size_t count = 0;  ///< rendered messages that start before `at`
    bool inside = false;    ///< the last of them continues past `at` (a merged turn)
};

boundary boundary_at(
    const render_fn& render,
    std::span<const context_message> context,
    const json::array& whole,
    std::size_t at
)
{
    const auto part = render(context.first(at));
    boundary b{part.size(), false};
    b.inside = b.count > 0 && b.count <= whole.size() && part[b.count - 1] != whole[b.count - 1];
    return b;
}

std::optional<std::size_t> position_of(std::span<const context_message> context, const std::string& entry_id)
{
    for (std::size_t i = 0; i < context.size(); ++i)
        if (context[i].entry_id == entry_id)
            return i;
    return std::nullopt;
}

// The scope of a part that starts after `from` (nullopt: at the start) and ends at `to`.
checkpoint_scope scope_of(const std::optional<boundary>& from, const boundary& to, const message& first_kept)
{
    checkpoint_scope s;
    s.first = from ? (from->inside ? from->count : from->count + 1) : 1;
    s.kept = to.inside ? to.count : to.count + 1;
    s.kept_inside = to.inside;
    s.kept_quote = message_quote(first_kept);
    return s;
}

// The conversation's request as the host sends it (or agentctx's view of it), redacted.
std::shared_ptr<request_head> make_head(
    const std::function<void(std::string&)>& scrub,
    const snapshot& snap,
    const render_fn& render,
    const std::optional<conversation_request>& host,
    std::span<const context_message> context
)
{
    auto head = std::make_shared<request_head>();
    if (host)
    {
        head->system = host->system;
        head->tools = host->tools;
        head->prompt_cache_key = host->prompt_cache_key;
    }
    else if (snap.system)
        head->system = content_text(snap.system->content);
    json::value tools = std::move(head->tools), messages = render(context);
    for (auto* v : {&head->system, &tools, &messages})
        scrub_strings(scrub, *v);
    head->tools = std::move(tools.get_array());
    head->messages = std::move(messages.get_array());
    head->chars =
        serialized_size(head->system) + serialized_size(head->tools) + serialized_size(head->messages);
    return head;
}

}  // namespace

compaction_run::cache_friendly_calls compaction_run::plan_cache_friendly(
    const plan& p, const scrub_fn& scrub, bool need_history, bool need_prefix
)
{
    if (cx_.config().compat == compat_mode::pi)
        return {};  // Pi 1.6: standalone, and the evidence stays as it was
    const auto caps = cx_.config().summarizer->capabilities();
    if (auto why = standalone_because(cx_.config(), caps))
        return j_.evidence.request = std::move(*why), cache_friendly_calls{};
    const auto snap = cx_.current();
    const auto context =
        with_unknown_outcomes(snap->messages.to_vector(), compat_mode::agentctx, &cx_.config().jobs);
    const auto& prep = p.prep;
    const auto kept_at = position_of(context, prep.first_kept_entry_id);
    const auto turn_at =
        need_prefix ? position_of(context, prep.turn_prefix_messages.front().entry_id) : std::nullopt;
    if (!kept_at || (need_prefix && !turn_at))
        return j_.evidence.request = "standalone: the cut is not in the context", cache_friendly_calls{};

    std::optional<conversation_request> host;
    if (cx_.config().conversation)
        host = cx_.config().conversation();
    const auto framing = providers::summary_framing_for(cx_.config().compat);
    const render_fn render =
        host && host->render ? host->render : render_fn([&](std::span<const context_message> c) {
            return providers::to_wire_messages(*caps.head_format, c, snap->native.get(), framing);
        });
    const auto head = make_head(scrub, *snap, render, host, context);
    const json::array whole = render(context);  // unredacted: positions are found on what the host renders
    const auto kept = boundary_at(render, context, whole, *kept_at);
    std::optional<boundary> turn;
    std::size_t history_end = *kept_at;  // a split turn's history ends where the turn starts
    if (need_prefix && turn_at)
    {
        history_end = *turn_at;
        turn = boundary_at(render, context, whole, history_end);
    }

    const auto& model = cx_.config().model;
    std::optional<std::string> effort;
    if (snap->thinking_level != "off")
        effort = snap->thinking_level;
    const auto finish = [&](summary_prompt cached) {
        cached.prompt += pinned_prompt_note(prep.pinned);
        scrub(cached.prompt);
        cached.reasoning_effort = effort;
        return cached;
    };
    cache_friendly_calls calls;
    if (need_history)
        calls.history = finish(cache_friendly_history_prompt(
            head,
            scope_of(std::nullopt, turn.value_or(kept), *context[history_end].msg),
            prep.previous_summary,
            j_.request.instructions,
            model.context_window,
            model.max_output_tokens
        ));
    if (need_prefix)
        calls.prefix = finish(cache_friendly_turn_prefix_prompt(
            head,
            scope_of(turn, kept, *context[*kept_at].msg),
            j_.request.instructions,
            model.context_window,
            model.max_output_tokens
        ));
    for (const auto* c : {&calls.history, &calls.prefix})
        if (*c && !cache_friendly_fits(**c, model.max_output_tokens))
            return j_.evidence.request =
                       "standalone: the conversation and instructions do not fit the window",
                   cache_friendly_calls{};
    j_.evidence.request = "cache-friendly";
    return calls;
}

namespace {

// A cache-friendly reply that one standalone request replaces: a tool call, a `length` stop, an
// invalid reply, or the provider's overflow.
bool falls_back(const boost::system::error_code& ec)
{
    using compaction::errc;
    return ec == make_error_code(errc::summary_tool_call) || ec == make_error_code(errc::summary_truncated) ||
           ec == make_error_code(errc::summary_empty) || ec == make_error_code(errc::summary_too_long) ||
           ec == make_error_code(errc::summary_failed) ||
           ec == make_error_code(providers::errc::context_overflow);
}

}  // namespace

asio::awaitable<compaction_run::step<void>> compaction_run::summarize_cache_friendly(
    const plan& p, const scrub_fn& scrub, cache_friendly_calls calls, summaries& out
)
{
    // In turn, as standalone requests go by default: both read the conversation's cache.
    const auto refused = [&](const failure& f) {
        if (!falls_back(f.ec))
            return false;
        if (!j_.evidence.request->starts_with("fallback"))
            j_.evidence.request = "fallback: " + f.ec.message();
        cx_.logger().info(
            "cache-friendly summary request refused ({}): one standalone request instead", f.ec.message()
        );
        return true;
    };
    const summary_kind kinds[] = {summary_kind::history, summary_kind::turn_prefix};
    for (const auto kind : kinds)
    {
        const bool history = kind == summary_kind::history;
        auto& cached = history ? calls.history : calls.prefix;
        if (!cached)
            continue;
        (history ? out.history_request : out.prefix_request) = *cached;  // the recall gate may continue it
        auto r = co_await request(std::move(*cached), kind);
        if (!r && !refused(r.error()))
            co_return r.error();
        if (r)
        {
            (history ? out.history : out.prefix) = std::move(r->text);
            (history ? out.history_usage : out.prefix_usage) = r->usage;
        }
        else if (auto f = co_await summarize_standalone(p, scrub, history, !history, out); !f)
            co_return f.error();
    }
    co_return step<void>{};
}

}  // namespace agentctx::runtime::detail
