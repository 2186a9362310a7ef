// simulate_session: the replay of a recorded session through a real session, billed request by request.
#include <agentctx/runtime/simulate.hpp>

#include "scrub_strings.hpp"
#include "simulate_summarizer.hpp"

#include <agentctx/compaction/json_text.hpp>
#include <agentctx/compaction/token_estimate.hpp>
#include <agentctx/providers/chat_messages.hpp>
#include <agentctx/runtime/host_config.hpp>
#include <agentctx/runtime/memory_store.hpp>
#include <agentctx/runtime/session.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <spdlog/logger.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <unordered_map>

namespace agentctx::runtime {

namespace asio = boost::asio;
namespace json = boost::json;
using compaction::request_part;

std::optional<simulate_policy> builtin_policy(std::string_view name)
{
    if (name == "none")
        return simulate_policy{"none", {}, compaction::compat_mode::agentctx, true};
    if (name == "pi")
        return simulate_policy{"pi", {}, compaction::compat_mode::pi, false};
    if (name == "agentctx")
        return simulate_policy{"agentctx", {}, compaction::compat_mode::agentctx, false};
    return std::nullopt;
}

namespace {

constexpr const char* simulated_model = "simulated";

std::uint64_t digest_of(std::string_view text)
{
    return std::hash<std::string_view>{}(text);
}

providers::wire_format format_of(const compaction::price_table& prices)
{
    return prices.name.starts_with("openai") ? providers::wire_format::openai
                                             : providers::wire_format::anthropic;
}

// The priced provider as the summarizer: hosted Anthropic or OpenAI (whose prompt cache a
// cache-friendly request reads), the replayed model, requests in the prices' wire format.
providers::summarizer_capabilities capabilities_of(const compaction::price_table& prices)
{
    providers::summarizer_capabilities caps;
    caps.head_format = format_of(prices);
    caps.provider = prices.name.starts_with("openai")      ? "openai"
                    : prices.name.starts_with("anthropic") ? "anthropic"
                                                           : prices.name;
    caps.model = simulated_model;
    return caps;
}

bool dropped(const compaction::entry& e)
{
    using compaction::entry_type;
    return e.type == entry_type::compaction || e.type == entry_type::branch_summary ||
           (e.type == entry_type::custom && e.custom_type.starts_with("agentctx."));
}

bool has_role(const compaction::entry& e, compaction::role r)
{
    return e.type == compaction::entry_type::message && e.message && e.message->role == r;
}

// The replay of one session under one policy: a session of its own on a private io_context.
class replay
{
public:
    replay(const simulate_policy& policy, const simulate_options& options)
        : policy_(policy), options_(options), cache_(options.prices)
    {}

    compaction::result<compaction::policy_cost> run(
        const compaction::session_log& log, compaction::diagnostics& diag
    )
    {
        auto entries = kept_entries(log, diag);
        if (!entries)
            return entries.error();
        // The session a host would build (make_session_config) with the policy's settings: the
        // runtime's defaults, background compaction included, unless the policy changes them.
        host_config host;
        host.settings.compaction = policy_.settings;
        host.model = {simulated_model, simulated_model, options_.context_window, options_.max_output_tokens};
        if (options_.host)
            host = *options_.host;
        auto redactor = compaction::redactor::create(host.settings.redaction, diag);
        if (!redactor)
            return redactor.error();
        redactor_ = std::make_shared<const compaction::redactor>(std::move(*redactor));
        auto summarizer = std::make_shared<detail::simulate_summarizer>(
            ioc_.get_executor(),
            capabilities_of(options_.prices),
            redactor_,
            [this] { return head_parts(); },
            calls_
        );
        if (!options_.host)
            host.make_summarizer = [summarizer](asio::any_io_executor) { return summarizer; };
        // No sinks: a replay logs nothing.
        auto config =
            make_session_config(host, ioc_.get_executor(), std::make_shared<spdlog::logger>("simulate"));
        config.compat = policy_.mode;
        auto header =
            compaction::make_header(log.header().id, log.header().timestamp, log.header().cwd.value_or("/"));
        auto store = std::make_unique<memory_store>();
        const auto* replayed = store.get();
        auto s = session::create(ioc_.get_executor(), std::move(store), header, std::move(config), diag);
        if (!s)
            return s.error();
        session_ = *s;
        // What each compaction summarizes, for the text of its cache-friendly requests.
        if (!options_.host)
            session_->on_before_compact([summarizer](const before_compact_event& e) {
                summarizer->planned(e);
                return before_compact_decision{};
            });
        observe_background();
        boost::system::error_code failed;
        asio::co_spawn(ioc_, replay_all(std::move(*entries), failed), asio::detached);
        ioc_.run();
        if (failed)
        {
            diag.message = "the replay stopped: " + failed.message() + (error_.empty() ? "" : ": " + error_);
            return failed;
        }
        if (options_.replayed)
            *options_.replayed = replayed->text();
        return cost_;
    }

private:
    static compaction::result<std::vector<compaction::entry_ptr>> kept_entries(
        const compaction::session_log& log, compaction::diagnostics& diag
    )
    {
        std::vector<compaction::entry_ptr> out;
        for (const auto i : log.active_path())
        {
            auto e = log.get(i, diag);
            if (!e)
                return e.error();
            if (!dropped(**e))
                out.push_back(std::move(*e));
        }
        return out;
    }

    asio::awaitable<void> replay_all(
        std::vector<compaction::entry_ptr> entries, boost::system::error_code& failed
    )
    {
        for (std::size_t i = 0; i < entries.size() && !failed; ++i)
        {
            const auto& e = *entries[i];
            advance_clock(e);
            if (has_role(e, compaction::role::user))
                co_await hook([this] {
                    return session_->async_before_prompt(asio::as_tuple(asio::use_awaitable));
                });
            if (has_role(e, compaction::role::assistant))
                bill_request(e);
            failed = co_await append(e);
            if (failed)
                break;
            if (has_role(e, compaction::role::assistant))
                co_await turn_end(e);
            else if (has_role(e, compaction::role::tool_result) && run_continues(entries, i + 1))
                co_await hook([this] {
                    return session_->async_between_turns(asio::as_tuple(asio::use_awaitable));
                });
            if (options_.progress)
                options_.progress(i + 1, entries.size());
        }
        session_->close();
    }

    // The run goes on after a tool batch when the next message is the assistant's next request.
    static bool run_continues(const std::vector<compaction::entry_ptr>& entries, std::size_t next)
    {
        for (; next < entries.size(); ++next)
            if (entries[next]->type == compaction::entry_type::message)
                return has_role(*entries[next], compaction::role::assistant);
        return false;
    }

    void advance_clock(const compaction::entry& e)
    {
        const auto ms = compaction::parse_iso_timestamp(e.timestamp);
        if (!ms)
            return;
        if (!start_)
            start_ = *ms;
        now_ = std::max(now_, (*ms - *start_) / 1000.0 + stalled_);
    }

    // The request made just before an assistant message: the context as the policy projects it.
    void bill_request(const compaction::entry& e)
    {
        const auto billing = cache_.request(now_, conversation_parts(false), true);
        last_input_ = billing.total();
        const auto& msg = *e.message;
        last_output_ = msg.usage && msg.usage->output > 0
                           ? msg.usage->output
                           : static_cast<std::int64_t>(compaction::estimate_tokens(msg));
        cost_.bill(options_.prices, billing, last_output_, false);
    }

    // The conversation's request for the current context: the system part, then each message.
    // `redacted`: as a cache-friendly summary request's head carries it.
    std::vector<request_part> conversation_parts(bool redacted)
    {
        std::vector<request_part> parts;
        if (options_.system_tokens > 0)
            parts.push_back({digest_of("system"), options_.system_tokens});
        for (const auto& m : session_->context())
            parts.push_back(redacted ? head_part_of(m) : part_of(m).part);
        return parts;
    }

    std::vector<request_part> head_parts() { return conversation_parts(true); }

    // A message's rendering and size, computed once: snapshots share unchanged messages.
    struct message_part
    {
        std::shared_ptr<const compaction::message> msg;  ///< kept so that no address is reused
        request_part part;
        std::optional<request_part> head;  ///< redacted, computed when a head first carries it
    };

    message_part& part_of(const compaction::context_message& m)
    {
        auto [it, added] = parts_.try_emplace(m.msg.get(), message_part{m.msg, {}, std::nullopt});
        if (added)
        {
            const auto wire = providers::to_wire_messages(
                format_of(options_.prices),
                std::span(&m, 1),
                nullptr,
                providers::summary_framing_for(policy_.mode)
            );
            it->second.part = {
                digest_of(compaction::stringify(wire)),
                static_cast<std::int64_t>(compaction::estimate_tokens(*m.msg))};
        }
        return it->second;
    }

    // The runtime redacts a cache-friendly request's head: a message holding a secret is not the
    // message the conversation sent, and the cache serves nothing from there on.
    request_part head_part_of(const compaction::context_message& m)
    {
        auto& p = part_of(m);
        if (!p.head)
        {
            json::value wire = providers::to_wire_messages(
                format_of(options_.prices),
                std::span(&m, 1),
                nullptr,
                providers::summary_framing_for(policy_.mode)
            );
            const auto scrub = [this](std::string& text) { text = redactor_->redact(text).text; };
            p.head = detail::scrub_strings(scrub, wire)
                         ? request_part{digest_of(compaction::stringify(wire)), p.part.tokens}
                         : p.part;
        }
        return *p.head;
    }

    // The entry as recorded, re-parented by the session; its usage is the simulated request's.
    asio::awaitable<boost::system::error_code> append(const compaction::entry& e)
    {
        json::object fields = e.raw;
        fields.erase("id");
        fields.erase("parentId");
        fields.erase("timestamp");
        if (auto* t = fields.if_contains("targetId"); t && t->is_string())
            if (auto it = ids_.find(std::string(t->get_string())); it != ids_.end())
                *t = it->second;
        // The session stamps its compactions with the real clock and, as Pi does, skips the check
        // of a message not newer than the latest compaction: recorded timestamps are older, so
        // each message gets a later one (a day ahead, then one millisecond per message).
        if (auto* m = fields.if_contains("message"); m && m->is_object())
            m->as_object()["timestamp"] = message_clock_ms_++;
        if (has_role(e, compaction::role::assistant))
            fields["message"].as_object()["usage"] = json::object{
                {"input", last_input_},
                {"output", last_output_},
                {"cacheRead", 0},
                {"cacheWrite", 0},
                {"totalTokens", last_input_ + last_output_}};
        auto [ec, id] =
            co_await session_->async_append(std::move(fields), asio::as_tuple(asio::use_awaitable));
        if (ec)  // a refused append completes with its reason (the field and why)
            error_ = "entry " + e.id + (id.empty() ? std::string() : ": " + id);
        else
            ids_[e.id] = id;
        if (!ec && has_role(e, compaction::role::assistant))
            if (const auto n = thinking_blocks(*e.message); n > 0)
                bound_[id] = n;
        co_return ec;
    }

    asio::awaitable<void> turn_end(const compaction::entry& e)
    {
        if (policy_.never_compact)
            co_return;
        compaction::message m = *e.message;
        if (m.usage)
            *m.usage = compaction::usage{last_input_, last_output_, 0, 0, last_input_ + last_output_};
        auto [ec, outcome] =
            co_await session_->async_on_turn_end(std::move(m), asio::as_tuple(asio::use_awaitable));
        account(outcome);
    }

    // A check the host runs before a prompt or between tool batches.
    template <class Check>
    asio::awaitable<void> hook(Check check)
    {
        if (policy_.never_compact)
            co_return;
        auto [ec, outcome] = co_await check();
        account(outcome);
    }

    // Bills the summary requests a check made; the agent waits for them, and for what is left of
    // a background compaction's requests when the check commits its result.
    void account(const compaction_outcome& outcome)
    {
        checked_at_ = now_;
        if (outcome.compacted)
            ++cost_.compactions;
        if (background_started_)
            return;  // the requests made since belong to the background compaction
        const bool waited = commit_wait_.has_value() || !calls_.empty();
        double stall = commit_wait_.value_or(0);
        commit_wait_.reset();
        stall += bill_calls(now_ + stall);
        if (waited)
            cost_.stalls.push_back(stall);
        stalled_ += stall;
        now_ += stall;
    }

    // Bills the recorded summary calls as requests made one after the other from `at`; returns
    // how long they took.
    double bill_calls(double at)
    {
        double took = 0;
        for (const auto& call : calls_)
        {
            const auto billing = bill_call(call, at + took);
            cost_.bill(options_.prices, billing, call.output, true);
            took += options_.timing.duration(billing, call.output);
        }
        calls_.clear();
        return took;
    }

    // A standalone request is sent without cache writes (Pi 1.6's `cacheRetention: "none"`; agentctx's
    // standalone body has no breakpoint): it reads what is there. A cache-friendly one is cached:
    // Anthropic's last breakpoint ends the conversation's part, so the instruction message after it
    // is billed uncached; OpenAI caches the whole request.
    compaction::cache_billing bill_call(const detail::summary_call& call, double t)
    {
        if (!call.cache_friendly)
            return cache_.request(t, call.parts, false);
        if (format_of(options_.prices) == providers::wire_format::openai)
            return cache_.request(t, call.parts, true);
        auto billing = cache_.request(t, std::span(call.parts).first(call.parts.size() - 1), true);
        billing.uncached += call.parts.back().tokens;
        return billing;
    }

    static std::int64_t thinking_blocks(const compaction::message& m)
    {
        return std::count_if(m.content.blocks.begin(), m.content.blocks.end(), [](const auto& b) {
            return std::holds_alternative<compaction::thinking_block>(b);
        });
    }

    // A prefix break: the thinking blocks made since the last one that now follow an edit (after
    // `from` in the context) are withheld by a provider that binds reasoning.
    void count_reasoning_lost(std::size_t from)
    {
        const auto context = session_->context();
        for (std::size_t i = from; i < context.size(); ++i)
            if (auto it = bound_.find(context[i].entry_id); it != bound_.end())
            {
                cost_.reasoning_lost += it->second;
                bound_.erase(it);
            }
    }

    void on_prefix_break(const session_event& e)
    {
        if (const auto* c = std::get_if<context_cleared_event>(&e); c && !c->target_ids.empty())
        {
            const auto context = session_->context();
            std::size_t first = context.size();
            for (std::size_t i = 0; i < context.size() && first == context.size(); ++i)
                if (context[i].entry_id == c->target_ids.front())
                    first = i + 1;
            count_reasoning_lost(first);
        }
        else if (const auto* end = std::get_if<compaction_end_event>(&e); end && end->result)
        {
            count_reasoning_lost(0);  // every kept message follows the new summary
            bound_.clear();           // the summarized ones are not sent at all
        }
    }

    // A background compaction runs from the check that started it, off the agent's path: its
    // requests are billed from then, and a commit waits only for what would still be running.
    void observe_background()
    {
        session_->on_event([this](const session_event& e) {
            if (options_.on_event)
                options_.on_event(e);
            on_prefix_break(e);
            if (const auto* start = std::get_if<compaction_start_event>(&e))
            {
                if (start->reason == compaction_reason::background)
                    background_started_ = checked_at_;
            }
            else if (std::holds_alternative<compaction_prepared_event>(e) && background_started_)
            {
                ready_at_ = *background_started_ + bill_calls(*background_started_);
                background_started_.reset();
            }
            else if (const auto* end = std::get_if<compaction_end_event>(&e);
                     end && end->reason == compaction_reason::background)
            {
                if (background_started_)  // failed or discarded while running: its requests were made
                    bill_calls(*background_started_);
                background_started_.reset();
                if (end->result)
                    commit_wait_ = std::max(0.0, ready_at_ - now_);
            }
            else if (const auto* c = std::get_if<context_cleared_event>(&e))
            {
                ++cost_.clearing_batches;
                cost_.clearing_tokens += c->tokens;
            }
        });
    }

    const simulate_policy& policy_;
    const simulate_options& options_;
    asio::io_context ioc_;
    std::shared_ptr<session> session_;
    compaction::prompt_cache cache_;
    compaction::policy_cost cost_;
    std::shared_ptr<const compaction::redactor> redactor_;
    std::vector<detail::summary_call> calls_;
    std::map<std::string, std::string> ids_;
    std::map<std::string, std::int64_t> bound_;  ///< assistant entries with thinking since the last break
    std::unordered_map<const compaction::message*, message_part> parts_;  ///< by the message's address
    std::optional<double> start_;
    double now_ = 0, stalled_ = 0;
    std::int64_t message_clock_ms_ = std::chrono::duration_cast<std::chrono::milliseconds>(
                                         std::chrono::system_clock::now().time_since_epoch()
                                     )
                                         .count() +
                                     86'400'000;
    double checked_at_ = 0;                     ///< the clock at the last check
    std::optional<double> background_started_;  ///< a background compaction is running since
    double ready_at_ = 0;                       ///< when the prepared result was ready
    std::optional<double> commit_wait_;         ///< a check committed a prepared result
    std::int64_t last_input_ = 0, last_output_ = 0;
    std::string error_;
};

}  // namespace

compaction::result<compaction::policy_cost> simulate_session(
    const compaction::session_log& log,
    const simulate_policy& policy,
    const simulate_options& options,
    compaction::diagnostics& diag
)
{
    replay r(policy, options);
    return r.run(log, diag);
}

}  // namespace agentctx::runtime
