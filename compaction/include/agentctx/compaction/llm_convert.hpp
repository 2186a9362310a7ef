// convert_to_llm: agent messages -> the user/assistant/toolResult messages a model sees.
#pragma once

#include <agentctx/compaction/message.hpp>

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace agentctx::compaction {

inline constexpr std::string_view compaction_summary_prefix =
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n";
inline constexpr std::string_view compaction_summary_suffix = "\n</summary>";
inline constexpr std::string_view branch_summary_prefix =
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n";
inline constexpr std::string_view branch_summary_suffix = "</summary>";

/// The user text Pi sends for a `!command` (bashExecutionToText).
std::string bash_execution_to_text(const message& m);

/// Converts agent messages for a model. user/assistant/toolResult are shared unchanged; bash,
/// custom and summary messages become user messages; excluded bash and unknown roles vanish.
std::vector<std::shared_ptr<const message>> convert_to_llm(std::span<const std::shared_ptr<const message>> messages);

}  // namespace agentctx::compaction
