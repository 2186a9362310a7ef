// Piecewise summaries: complete exchange batches, bounded pieces, and the identity of a covered part.
#pragma once

#include <agentctx/compaction/projection.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace agentctx::compaction {

/// Messages `[begin, end)` of a summarized prefix that must travel together: every message of
/// one entry, and every tool round (an assistant's tool calls through the last of their results,
/// overlapping rounds merged). `chars` is the length (bytes) of the batch's serialized text.
struct exchange_batch
{
    std::size_t begin = 0;
    std::size_t end = 0;
    std::size_t chars = 0;
};

/// The prefix cut into exchange batches, in order; together they cover every message once.
std::vector<exchange_batch> exchange_batches(std::span<const context_message> messages);

/// One summary request's source: messages `[begin, end)`, a whole number of batches.
struct summary_piece
{
    std::size_t begin = 0;
    std::size_t end = 0;
    std::size_t chars = 0;   ///< serialized source length (batches joined by a blank line)
    bool oversized = false;  ///< one batch alone over the limit: sent whole, never split
    friend bool operator==(const summary_piece&, const summary_piece&) = default;
};

/// Packs consecutive batches of `messages[from, end)` greedily into pieces whose serialized
/// source is at most `max_source_chars` (0 = unbounded: one piece). A batch over the limit is a
/// piece of its own (`oversized`). `from` must be a batch boundary (0, or a piece's end).
std::vector<summary_piece> plan_pieces(
    std::span<const context_message> messages, std::size_t max_source_chars, std::size_t from = 0
);

/// The serialized source length of `messages` (what one request would carry, without the prompt).
std::size_t source_chars(std::span<const context_message> messages);

/// Whether `index` is a batch boundary of `messages` (0 and size() are).
bool is_batch_boundary(std::span<const context_message> messages, std::size_t index);

/// The bound one portable request's source must respect: `summaryMaxSourceChars` when set, and
/// always a conservative share of the window (60% of it at 3 bytes per token, leaving room for
/// the prompt, the running note and the output); 0 = unbounded (no window, no setting).
std::size_t portable_source_limit(
    std::int64_t summary_max_source_chars, std::int64_t context_window
) noexcept;

/// What a note was derived from: the number of messages covered from the prefix's start, and
/// SHA-256 over, per message, its entry id, a newline, its serialized text and a newline.
struct covered_identity
{
    std::size_t count = 0;
    std::string sha256;
    friend bool operator==(const covered_identity&, const covered_identity&) = default;
};
covered_identity identity_of(std::span<const context_message> covered);

/// identity_of, built incrementally: add() the covered messages in order, value() at any point
/// (a pass over a long prefix hashes each message once, not once per piece).
class covered_hasher
{
public:
    covered_hasher();
    ~covered_hasher();
    void add(std::span<const context_message> messages);
    covered_identity value() const;

private:
    struct state;
    std::unique_ptr<state> state_;
    std::size_t count_ = 0;
};

}  // namespace agentctx::compaction
