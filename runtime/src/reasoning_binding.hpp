// Reasoning bound to its prefix: what a prefix break costs a model that binds reasoning, and the providers'
// reports of what they withheld.
#pragma once

#include <agentctx/compaction/entry.hpp>
#include <agentctx/compaction/projection.hpp>
#include <agentctx/compaction/session_log.hpp>
#include <agentctx/runtime/events.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace agentctx::runtime::detail {

/// Whether the serving provider checks that replayed reasoning belongs to the prefix it was made
/// on (Anthropic's thinking block binding, OpenAI's reasoning items): `anthropic`, `openai`.
bool binds_reasoning(std::string_view provider) noexcept;

struct reasoning_loss
{
    std::int64_t blocks = 0;  ///< thinking blocks the break would make the provider drop
    std::int64_t tokens = 0;  ///< their size, ceil(chars / 4)
};

/**
 * @brief The reasoning an edit at context position `from` costs: the thinking blocks of the
 * assistant messages after `from` that were written after the path's latest prefix break (a
 * compaction or a context edit). Reasoning made before that break is bound to a prefix the
 * provider no longer sees, so it is lost already and costs nothing more.
 */
reasoning_loss reasoning_lost(
    const compaction::session_log& log, std::span<const compaction::context_message> context, std::size_t from
);

/// The reasoning_transformed event of an appended entry: an assistant message whose usage holds
/// `inputTransformations` (`{removed, allowed, items}`); nullopt otherwise.
std::optional<reasoning_transformed_event> transformed_event(const compaction::entry& e);

}  // namespace agentctx::runtime::detail
