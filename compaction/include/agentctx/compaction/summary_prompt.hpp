// The summary requests: system prompt, initial / update / turn-prefix prompts, output budget.
#pragma once

#include <agentctx/compaction/message.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace agentctx::compaction {

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
std::uint32_t summary_output_budget(const summary_prompt& p, std::int64_t context_window, std::int64_t model_max_tokens) noexcept;

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
    std::span<const std::shared_ptr<const message>> messages,
    std::uint32_t max_output_tokens
);

}  // namespace agentctx::compaction
