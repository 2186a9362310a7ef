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

/// A peer message's label in a serialized conversation: `[Agent NAME (another agent, not the
/// user)]`. The summarizer reads who wrote it at every such message: never the user's words,
/// request or permission.
inline constexpr std::string_view peer_label_prefix = "[Agent ";
inline constexpr std::string_view peer_label_suffix = " (another agent, not the user)]";
std::string peer_label(std::string_view name);

/// Serializes convert_to_llm output (Pi 1.6): `[User]: `, `[Assistant]: ` (iff the message
/// has a text block, even an empty one), `[Assistant tool calls]: name(k=JSON(v), …)`,
/// `[Tool result]: ` parts joined by blank lines. Thinking blocks and system messages are omitted.
std::string serialize_conversation(std::span<const std::shared_ptr<const message>> llm_messages);

}  // namespace agentctx::compaction
