// Context token accounting: provider usage first, estimates after it, stale usage rule.
#pragma once

#include <agentctx/compaction/message.hpp>
#include <agentctx/compaction/projection.hpp>

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>

namespace agentctx::compaction {

/// Counts the tokens of one message. The default is Pi's chars/4 estimate; a host may plug in a
/// real tokenizer. Must be deterministic and thread-safe (const).
class token_counter
{
public:
    virtual ~token_counter() = default;
    virtual std::size_t count(const message& m) const = 0;
};

/// `ceil(utf16 chars / 4)` with Pi's per-role rules (estimate_tokens).
class chars4_counter final : public token_counter
{
public:
    std::size_t count(const message& m) const override;
};

/// The process-wide default counter (a chars4_counter).
const token_counter& default_token_counter() noexcept;

/// `a + b`, held at the int64 bounds instead of overflowing (token counts from a file or a
/// provider can be anything).
inline std::int64_t saturating_add(std::int64_t a, std::int64_t b) noexcept
{
    std::int64_t r = 0;
    if (__builtin_add_overflow(a, b, &r))
        return b > 0 ? std::numeric_limits<std::int64_t>::max() : std::numeric_limits<std::int64_t>::min();
    return r;
}

/// `totalTokens || input + output + cacheRead + cacheWrite`, never negative: a negative count
/// (from a file written before usage was checked) counts as 0 and the sum saturates.
std::int64_t calculate_context_tokens(const usage& u) noexcept;

/// An assistant message with usage whose stop reason is neither `aborted` nor `error` and whose
/// usage is not all zero (Pi 1.6, #5526).
bool has_usage(const message& m) noexcept;

struct context_estimate
{
    std::int64_t tokens = 0;                      ///< usage_tokens + trailing_tokens
    std::int64_t usage_tokens = 0;                ///< from the anchoring assistant usage (0 without one)
    std::int64_t trailing_tokens = 0;             ///< estimated tokens of messages after the anchor
    std::optional<std::size_t> last_usage_index;  ///< index of the anchoring message
};

/// Pi's estimateContextTokens: anchored at the last message with usage, estimates after it.
/// `stale_at_or_before_ms`: usage of an assistant message whose timestamp is at or before this
/// (the latest compaction's time) is stale and cannot anchor (agentctx's rule; Pi: nullopt).
context_estimate estimate_context_tokens(
    std::span<const context_message> messages,
    const token_counter& counter = default_token_counter(),
    std::optional<double> stale_at_or_before_ms = std::nullopt
);

/// Pi 1.6's estimateProjectedContextTokens: the usage-anchored estimate while the
/// anchoring usage is newer than every context_edit and compaction on the path; otherwise the
/// pure estimate with the prompt counted once, as its replayed state.
context_estimate estimate_projected_context_tokens(
    const session_context& ctx, const token_counter& counter = default_token_counter()
);

/// Timestamp (Unix ms) of the latest compaction on a projected context: the first message when it
/// is a compactionSummary. nullopt when the context has no compaction.
std::optional<double> latest_compaction_time(const session_context& ctx) noexcept;

struct compaction_settings;

/// `enabled && tokens > window - reserveTokens` (strict).
bool should_compact(
    std::int64_t context_tokens, std::int64_t context_window, const compaction_settings& s
) noexcept;

/// What a footer shows: tokens and percent, unknown (nullopt) right after a compaction until a
/// fresh assistant usage exists.
struct context_usage_report
{
    std::optional<std::int64_t> tokens;
    std::int64_t context_window = 0;
    std::optional<double> percent;
};

std::optional<context_usage_report> context_usage(
    const session_context& ctx,
    std::int64_t context_window,
    const token_counter& counter = default_token_counter()
);

}  // namespace agentctx::compaction
