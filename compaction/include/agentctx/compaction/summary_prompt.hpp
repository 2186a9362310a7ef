// The summary requests: system prompt, initial / update / turn-prefix prompts, output caps.
#pragma once

#include <agentctx/compaction/message.hpp>

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
};

extern const std::string_view summarization_system_prompt;
extern const std::string_view initial_summary_instructions;
extern const std::string_view update_summary_instructions;
extern const std::string_view turn_prefix_instructions;

/// min(floor(0.8 * reserve), model max); model_max_tokens 0 = no model limit.
std::uint32_t history_output_cap(std::int64_t reserve_tokens, std::int64_t model_max_tokens = 0) noexcept;
/// min(floor(0.5 * reserve), model max).
std::uint32_t turn_prefix_output_cap(std::int64_t reserve_tokens, std::int64_t model_max_tokens = 0) noexcept;

/// `<conversation>…</conversation>` [+ `<previous-summary>…`] + initial or update instructions
/// [+ `\n\nAdditional focus: …`], over convert_to_llm(messages).
summary_prompt history_summary_prompt(
    std::span<const std::shared_ptr<const message>> messages,
    const std::optional<std::string>& previous_summary,
    const std::optional<std::string>& custom_instructions,
    std::uint32_t max_output_tokens
);

/// The split-turn prefix request: no previous summary, no custom instructions.
summary_prompt turn_prefix_summary_prompt(
    std::span<const std::shared_ptr<const message>> messages,
    std::uint32_t max_output_tokens
);

}  // namespace agentctx::compaction
