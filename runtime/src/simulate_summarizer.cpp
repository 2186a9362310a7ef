// simulate_summarizer: what each summary request of a replay is billed as, and the offline summary that
// answers it.
#include "simulate_summarizer.hpp"

#include <agentctx/compaction/pinned.hpp>
#include <agentctx/compaction/summary_prompt.hpp>
#include <agentctx/compaction/token_estimate.hpp>

#include <functional>

namespace agentctx::runtime::detail {

namespace asio = boost::asio;
using compaction::request_part;
using compaction::summary_prompt;

namespace {

std::int64_t text_tokens(std::string_view text)
{
    return static_cast<std::int64_t>((compaction::utf16_length(text) + 3) / 4);
}

request_part text_part(std::string_view text)
{
    return {std::hash<std::string_view>{}(text), text_tokens(text)};
}

std::vector<std::shared_ptr<const compaction::message>> messages_of(
    std::span<const compaction::context_message> v
)
{
    std::vector<std::shared_ptr<const compaction::message>> out;
    out.reserve(v.size());
    for (const auto& m : v)
        out.push_back(m.msg);
    return out;
}

}  // namespace

void simulate_summarizer::planned(const before_compact_event& e)
{
    const auto& prep = e.preparation;
    plan_ = plan{
        messages_of(prep.messages_to_summarize),
        messages_of(prep.turn_prefix_messages),
        prep.previous_summary,
        e.custom_instructions,
        compaction::pinned_prompt_note(prep.pinned)};
}

// The request's head is the conversation's request: the same parts, read from the cache as far
// as the cache holds them; the instruction message follows it.
summary_call simulate_summarizer::cache_friendly_call(const summary_prompt& sent)
{
    if (sent.head != head_)
    {
        head_ = sent.head;
        head_parts_ = conversation_();
    }
    summary_call call{head_parts_, true, 0};
    call.parts.push_back(text_part(sent.prompt));
    return call;
}

// The standalone prompt the runtime would send for the same part (history or turn prefix), with
// its note on pinned entries, redacted as it redacts prompts, capped at the cache-friendly
// request's output budget.
summary_prompt simulate_summarizer::standalone_text_prompt(const summary_prompt& sent) const
{
    static const plan none;
    const auto& p = plan_ ? *plan_ : none;
    const bool turn_prefix = sent.prompt.find(compaction::turn_prefix_instructions) != std::string::npos;
    auto text = turn_prefix
                    ? compaction::turn_prefix_summary_prompt(p.turn_prefix, p.instructions, 0, 0)
                    : compaction::history_summary_prompt(p.history, p.previous_summary, p.instructions, 0, 0);
    text.prompt = redactor_->redact(text.prompt + p.pinned_note).text;
    text.max_output_tokens = sent.max_output_tokens;
    text.reasoning_effort = sent.reasoning_effort;
    return text;
}

void simulate_summarizer::summarize_impl(
    summary_prompt prompt, asio::any_completion_handler<providers::summarize_signature> handler
)
{
    summary_call call;
    if (prompt.head)
    {
        call = cache_friendly_call(prompt);
        prompt = standalone_text_prompt(prompt);
    }
    else
        call.parts = {text_part(prompt.system_prompt), text_part(prompt.prompt)};
    // Shared, so that the completion handler stays copyable as the inner initiation needs.
    auto h = std::make_shared<decltype(handler)>(std::move(handler));
    inner_.async_summarize(
        std::move(prompt),
        [this,
         call = std::move(call),
         h](boost::system::error_code ec, compaction::summary_output out) mutable {
            call.output = text_tokens(out.text);
            calls_.push_back(std::move(call));
            std::move (*h)(ec, std::move(out));
        }
    );
}

}  // namespace agentctx::runtime::detail
