// serialize_conversation: the labelled transcript text a summarizer reads.
#pragma once

#include <agentctx/compaction/message.hpp>

#include <cstddef>
#include <memory>
#include <span>
#include <string>

namespace agentctx::compaction {

inline constexpr std::size_t tool_result_char_limit = 2000;

/// `t` if it has at most `limit` UTF-16 units, else utf16_slice_head(t, limit) (a surrogate pair
/// is never split: the head may be `limit - 1` units) and `\n\n[... N more characters
/// truncated]` with N = length - limit (not adjusted for a dropped unit).
std::string truncate_for_summary(std::string_view t, std::size_t limit = tool_result_char_limit);

/// Serializes convert_to_llm output (Pi 1.6): `[User]: `, `[Assistant]: ` (iff the message
/// has a text block, even an empty one), `[Assistant tool calls]: name(k=JSON(v), …)`,
/// `[Tool result]: ` parts joined by blank lines. Thinking blocks and system messages are omitted.
std::string serialize_conversation(std::span<const std::shared_ptr<const message>> llm_messages);

}  // namespace agentctx::compaction
