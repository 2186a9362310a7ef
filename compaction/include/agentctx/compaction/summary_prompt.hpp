// The summary requests: system prompt, initial / update / turn-prefix prompts, output budget.
#pragma once

#include <agentctx/compaction/message.hpp>

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace agentctx::compaction {

/// The start of a cache-friendly summary request: exactly what the conversation's last request
/// began with, in the summarizer's wire format. The request is this head, then `prompt` as one
/// more user message; `system_prompt` is not sent (the conversation's own system prompt is).
struct request_head
{
    boost::json::value system;    ///< as the conversation sends it (a string or content blocks); null = none
    boost::json::array tools;     ///< tool definitions as the conversation sends them
    boost::json::array messages;  ///< the conversation's messages, rendered as its requests render them
    std::optional<std::string> prompt_cache_key;  ///< OpenAI: the conversation's `prompt_cache_key`
    std::size_t chars = 0;                        ///< serialized size of system, tools and messages (bytes)
};

/// One summary call: a system prompt, one user message, an output cap.
struct summary_prompt
{
    std::string system_prompt;
    std::string prompt;
    std::uint32_t max_output_tokens = 0;
    std::optional<std::string> reasoning_effort;  ///< the session's thinking level unless "off"
    /// The caller's routing id for the provider (Pi's `sessionId`); nullopt = a fresh id per
    /// request (Pi 1.6: summary requests never share a prompt-cache route).
    std::optional<std::string> routing_id;
    /// Set: a cache-friendly request (the conversation, then `prompt`); null: standalone.
    std::shared_ptr<const request_head> head;
};

extern const std::string_view summarization_system_prompt;
extern const std::string_view initial_summary_instructions;
extern const std::string_view update_summary_instructions;
extern const std::string_view turn_prefix_instructions;

/// The model output limit assumed when the model's is unknown (0).
inline constexpr std::int64_t default_summary_max_output_tokens = 32000;

/// Pi 1.6's output clamp for a request, with `model_max_tokens` M (0 = unknown:
/// default_summary_max_output_tokens):
///   window <= 0: max(1, M);
///   I = ceil(system_chars / 3.5) + ceil(prompt_chars / 3.5)   (UTF-16 units, per message)
///   margin = max(4096, ceil(0.15 * I)); room = window - I - margin;
///   if room < 32768: room = min(32768, window - I - 4096);
///   min(M, max(1, room)).
/// `reserveTokens` plays no part. The result saturates at UINT32_MAX.
std::uint32_t summary_output_budget(
    std::int64_t context_window,
    std::int64_t model_max_tokens,
    std::size_t system_chars,
    std::size_t prompt_chars
) noexcept;

/// summary_output_budget over the UTF-16 lengths of `p.system_prompt` and `p.prompt`.
std::uint32_t summary_output_budget(
    const summary_prompt& p, std::int64_t context_window, std::int64_t model_max_tokens
) noexcept;

/// `<conversation>…</conversation>` [+ `<previous-summary>…`] + initial or update instructions
/// [+ `\n\nAdditional focus: …`], over convert_to_llm(messages); `max_output_tokens` is
/// summary_output_budget for the model (`context_window`, `model_max_tokens`; 0 = unknown).
summary_prompt history_summary_prompt(
    std::span<const std::shared_ptr<const message>> messages,
    const std::optional<std::string>& previous_summary,
    const std::optional<std::string>& custom_instructions,
    std::int64_t context_window,
    std::int64_t model_max_tokens
);

/// The split-turn prefix request (Pi 1.6): `# Conversation\n` + serialized prefix +
/// `\n\n# Instructions\n` + turn_prefix_instructions [+ `\n\nAdditional focus: …`]; no previous
/// summary. `max_output_tokens` as for history_summary_prompt.
summary_prompt turn_prefix_summary_prompt(
    std::span<const std::shared_ptr<const message>> messages,
    const std::optional<std::string>& custom_instructions,
    std::int64_t context_window,
    std::int64_t model_max_tokens
);

// ---- Cache-friendly requests: the conversation as it was sent, then one instruction message.

/// Where the part a cache-friendly request checkpoints lies among the messages of its head
/// (1-based positions in request_head::messages).
struct checkpoint_scope
{
    std::size_t first = 1;     ///< the part's first message
    std::size_t kept = 0;      ///< the message where the kept part begins
    bool kept_inside = false;  ///< the kept part begins inside message `kept` (a merged turn)
    std::string kept_quote;    ///< the start of the first kept message, so the model can find it
};

/// The start of `m` as a model sees it (at most `max_chars` bytes, whitespace collapsed, cut on a
/// UTF-8 boundary): its text, else `a call to the tool NAME` / `the result of the tool NAME`.
std::string message_quote(const message& m, std::size_t max_chars = 100);

/// The instruction message's opening: it asks for a checkpoint of messages
/// [scope.first, scope.kept) and says the rest is kept verbatim.
std::string checkpoint_scope_text(const checkpoint_scope& scope);

/// The history request over `head`: the instruction message is summarization_system_prompt's
/// rule, checkpoint_scope_text, then exactly the standalone prompt's tail ([`<previous-summary>`
/// + update] or initial instructions, `Additional focus`). The output budget counts the head.
summary_prompt cache_friendly_history_prompt(
    std::shared_ptr<const request_head> head,
    const checkpoint_scope& scope,
    const std::optional<std::string>& previous_summary,
    const std::optional<std::string>& custom_instructions,
    std::int64_t context_window,
    std::int64_t model_max_tokens
);

/// The split-turn prefix request over `head`: as above with turn_prefix_instructions.
summary_prompt cache_friendly_turn_prefix_prompt(
    std::shared_ptr<const request_head> head,
    const checkpoint_scope& scope,
    const std::optional<std::string>& custom_instructions,
    std::int64_t context_window,
    std::int64_t model_max_tokens
);

/// The least output a cache-friendly request must leave room for: min(8192, the model's output
/// limit). Below it the conversation plus instructions do not fit: standalone (or pieces) instead.
inline constexpr std::int64_t cache_friendly_min_output = 8192;
bool cache_friendly_fits(const summary_prompt& cache_friendly, std::int64_t model_max_tokens) noexcept;

// ---- Deprecated (0.73.1 output caps); kept until runtime/src/session.cpp moves to the above.

/// Deprecated: min(floor(0.8 * reserve), model max); model_max_tokens 0 = no model limit.
std::uint32_t history_output_cap(std::int64_t reserve_tokens, std::int64_t model_max_tokens = 0) noexcept;
/// Deprecated: min(floor(0.5 * reserve), model max).
std::uint32_t turn_prefix_output_cap(std::int64_t reserve_tokens, std::int64_t model_max_tokens = 0) noexcept;

/// Deprecated: the history prompt with an explicit output cap.
summary_prompt history_summary_prompt(
    std::span<const std::shared_ptr<const message>> messages,
    const std::optional<std::string>& previous_summary,
    const std::optional<std::string>& custom_instructions,
    std::uint32_t max_output_tokens
);

/// Deprecated: the (1.6-structured) turn-prefix prompt without custom instructions, with an
/// explicit output cap.
summary_prompt turn_prefix_summary_prompt(
    std::span<const std::shared_ptr<const message>> messages, std::uint32_t max_output_tokens
);

}  // namespace agentctx::compaction
