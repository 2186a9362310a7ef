// What a provider did to the reasoning a request replayed: `input_transformations` of OpenAI Responses and
// Anthropic Messages replies, whole or streamed.
#pragma once

#include <agentctx/compaction/error.hpp>
#include <agentctx/providers/error.hpp>
#include <agentctx/providers/wire_input.hpp>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace agentctx::providers {

/// One reported entry of a reply's `input_transformations`.
struct input_transformation
{
    /// True: the provider withheld the block from the model (OpenAI `action: "removed"`, Anthropic
    /// `thinking_dropped`). False: it failed the binding check and was shown all the same
    /// (Anthropic `thinking_mismatch_allowed`).
    bool removed = true;
    std::string reason;  ///< `prefix_mismatch`, `turn_boundary`, `prefix_binding_mismatch`, …
    std::string where;   ///< OpenAI: the reasoning item's id; Anthropic: `messages.{i}.content.{j}`
};

/// A reply's list, in request order. Entry types agentctx does not know are left out (both
/// providers say more may be added).
struct input_transformations
{
    std::vector<input_transformation> items;

    std::int64_t removed() const noexcept;
    std::int64_t allowed() const noexcept;
};

/// As recorded in the assistant message's `usage.inputTransformations`:
/// `{"removed": N, "allowed": M, "items": [{"action": "removed"|"allowed", "reason": …, "id"|"path": …}]}`.
boost::json::object to_json(const input_transformations& t, input_format f);

/**
 * @brief Reads a provider's `input_transformations` array.
 *
 * `f` is `responses` (entries `{id, action: "removed", reason, type: "reasoning"}`) or `anthropic`
 * (entries `{type: "thinking_dropped" | "thinking_mismatch_allowed", reason, path}`). Null is an
 * empty list. A known entry with a missing or mistyped field, a list that is not an array, or
 * format `openai` (Chat Completions replies carry none) fail with `invalid_wire_message` and
 * `input_transformations[2].reason: expected a string` in `diag.message`.
 */
compaction::result<input_transformations> read_input_transformations(
    input_format f, const boost::json::value& list, diagnostics& diag
);

/// The list of a whole reply (an OpenAI Response object, an Anthropic Message object); nullopt
/// when the reply carries none (absent).
compaction::result<std::optional<input_transformations>> reply_input_transformations(
    input_format f, const boost::json::object& reply, diagnostics& diag
);

/**
 * @brief The list of a streamed reply, from its events in order (each SSE `data:` object).
 *
 * OpenAI: the `response` object of `response.created`, `response.in_progress`,
 * `response.completed`, `response.incomplete` and `response.failed` (the latest wins).
 * Anthropic: `message_start`'s `message.input_transformations`, replaced by a `message_delta`'s
 * own `input_transformations` when it carries one (a model fallback mid-stream).
 */
class input_transformation_stream
{
public:
    explicit input_transformation_stream(input_format f) noexcept : format_(f) {}

    /// Reads one event; false (with the path in `diag`) when it carries a malformed list.
    bool feed(const boost::json::object& event, diagnostics& diag);
    /// The list the stream reported; nullopt when no event carried one.
    const std::optional<input_transformations>& result() const noexcept { return result_; }

private:
    input_format format_;
    std::optional<input_transformations> result_;
};

}  // namespace agentctx::providers
