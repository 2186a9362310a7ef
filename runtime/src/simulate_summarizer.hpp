// The replay's summarizer: the offline summarizer behind the priced provider's capabilities, each request
// recorded for billing.
#pragma once

#include <agentctx/compaction/cost_model.hpp>
#include <agentctx/compaction/redaction.hpp>
#include <agentctx/providers/offline_summarizer.hpp>
#include <agentctx/runtime/events.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <vector>

namespace agentctx::runtime::detail {

/// One summary request as the provider would bill it.
struct summary_call
{
    /// Standalone: its system prompt and its prompt. Cache-friendly: the conversation's request
    /// (what the request's head is), then the instruction message as the last part.
    std::vector<compaction::request_part> parts;
    bool cache_friendly = false;
    std::int64_t output = 0;
};

/// The conversation's request as the replay bills it, for the context the session holds now.
using conversation_parts_fn = std::function<std::vector<compaction::request_part>()>;

/**
 * @brief The summarizer a replay configures its session with.
 *
 * Its capabilities are those of the priced provider (`anthropic` or `openai`, the replayed
 * model), so the runtime itself decides between cache-friendly and standalone requests and
 * builds them. A standalone request is answered and billed as sent. A cache-friendly one is
 * billed as the conversation's request plus the instruction message; its text is the offline
 * summary of the standalone prompt over the same messages (the offline summarizer reads a
 * transcript, not a head), under the request's own output cap.
 */
class simulate_summarizer final : public providers::summarizer
{
public:
    simulate_summarizer(
        boost::asio::any_io_executor ex,
        providers::summarizer_capabilities caps,
        std::shared_ptr<const compaction::redactor> redactor,
        conversation_parts_fn conversation,
        std::vector<summary_call>& calls
    )
        : inner_(std::move(ex)), caps_(std::move(caps)), redactor_(std::move(redactor)),
          conversation_(std::move(conversation)), calls_(calls)
    {}
    std::string name() const override { return inner_.name(); }
    providers::summarizer_capabilities capabilities() const override { return caps_; }

    /// The compaction under way (its before_compact event): what its standalone prompts cover.
    void planned(const before_compact_event& e);

protected:
    void summarize_impl(
        compaction::summary_prompt prompt,
        boost::asio::any_completion_handler<providers::summarize_signature> handler
    ) override;

private:
    struct plan
    {
        std::vector<std::shared_ptr<const compaction::message>> history, turn_prefix;
        std::optional<std::string> previous_summary, instructions;
        std::string pinned_note;  ///< what the prompts say of the pinned entries kept after the summary
    };
    summary_call cache_friendly_call(const compaction::summary_prompt& sent);
    compaction::summary_prompt standalone_text_prompt(const compaction::summary_prompt& sent) const;

    providers::offline_summarizer inner_;
    providers::summarizer_capabilities caps_;
    std::shared_ptr<const compaction::redactor> redactor_;
    conversation_parts_fn conversation_;
    std::vector<summary_call>& calls_;
    std::optional<plan> plan_;
    /// The head the last cache-friendly request began with, and the conversation's parts then:
    /// a split turn's two requests share one head.
    std::shared_ptr<const compaction::request_head> head_;
    std::vector<compaction::request_part> head_parts_;
};

}  // namespace agentctx::runtime::detail
