// serialize_conversation (spec §7.1): the labelled transcript text a summarizer reads.
#pragma once

#include <agentctx/compaction/message.hpp>

#include <cstddef>
#include <memory>
#include <span>
#include <string>

namespace agentctx::compaction {

inline constexpr std::size_t tool_result_char_limit = 2000;

/// `t` if it has at most `limit` UTF-16 units, else its first `limit` units and
/// `\n\n[... N more characters truncated]`.
std::string truncate_for_summary(std::string_view t, std::size_t limit = tool_result_char_limit);

/// Serializes convert_to_llm output: `[User]: `, `[Assistant thinking]: `, `[Assistant]: `,
/// `[Assistant tool calls]: name(k=JSON(v), …)`, `[Tool result]: ` parts joined by blank lines.
std::string serialize_conversation(std::span<const std::shared_ptr<const message>> llm_messages);

}  // namespace agentctx::compaction
