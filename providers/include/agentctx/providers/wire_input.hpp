// Provider-format conversation input: Chat Completions messages, Responses items and Anthropic Messages as Pi
// messages.
#pragma once

#include <agentctx/compaction/error.hpp>
#include <agentctx/compaction/message.hpp>
#include <agentctx/providers/error.hpp>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace agentctx::providers {

/// The provider formats an agent may hold its conversation in.
enum class input_format
{
    openai,     ///< Chat Completions `messages`
    responses,  ///< Responses `input` items
    anthropic,  ///< Anthropic Messages `messages`
};

/// `openai`, `responses`, `anthropic`; nullopt for any other name.
std::optional<input_format> input_format_from_string(std::string_view name) noexcept;
std::string_view to_string(input_format f) noexcept;

/// The provider's `usage` object of format `f`, as returned, in Pi's shape (the reading
/// wire_input_options::usage gets; unknown fields are ignored, missing counts are 0).
compaction::usage usage_from_wire(input_format f, const boost::json::object& usage);

/// A provider `usage` object as a client sends it: every number in it, nested details included,
/// from 0 to compaction::max_usage_tokens. False with `usage.<path>: <why>` in `diag.message`
/// (`usage.prompt_tokens_details.cached_tokens`) otherwise.
bool check_wire_usage(const boost::json::object& usage, diagnostics& diag);

/// What the provider said about the call that produced the batch's last assistant message.
struct wire_input_options
{
    /// The provider's `usage` object as returned, attached (in Pi's shape) to the batch's last
    /// assistant message; other assistant messages get zero usage, which token accounting skips.
    std::optional<boost::json::value> usage;
    /// The provider's stop reason in its own spelling, for the last assistant message: Chat
    /// Completions `finish_reason`, Anthropic `stop_reason`, Responses `status` or
    /// `incomplete_details.reason`. Absent: `toolUse` when the message calls tools, else `stop`.
    std::optional<std::string> stop_reason;
    std::optional<std::string> provider, model;  ///< on every assistant message when set
    std::optional<double> timestamp;             ///< Unix ms, on every message when set
    /// The tool name of a result whose call is not in the batch (an earlier turn's call);
    /// unset or empty answer: the result's `toolName` is "".
    std::function<std::string(std::string_view call_id)> tool_name;
    /// The reply's `input_transformations` as returned (Responses and Anthropic formats only; see
    /// input_transformations.hpp): recorded on the batch's last assistant message as
    /// `usage.inputTransformations` (`{removed, allowed, items}`), which the session reports in a
    /// reasoning_transformed event. An empty list is recorded too (nothing was dropped).
    std::optional<boost::json::value> input_transformations;
};

/**
 * @brief Converts the messages (or items) an agent holds, in format `f`, to Pi messages.
 *
 * The inverse of to_wire_messages / to_responses_input for what those render:
 * - text (string or parts), images (base64 `data:` URLs or Anthropic base64 sources only: nothing
 *   is fetched), tool calls with their ids, names and arguments (a JSON object; Chat Completions
 *   and Responses send it as a JSON string), tool results with their call ids and `is_error`;
 * - Anthropic `thinking` (signature in `thinkingSignature`) and `redacted_thinking` (`redacted`);
 *   Responses `reasoning` items (summary text in `thinking`, the whole item serialized in
 *   `thinkingSignature`, as Pi's own Responses client stores it);
 * - `system` / `developer` messages become Pi `system` messages (the session's prompt state).
 *
 * Returns `{"role": …}` message objects in Pi's key order, ready for `{"type":"message",
 * "message": …}` entries. Any unknown or malformed item fails the whole batch with
 * `invalid_wire_message` and the field path in `diag.message`
 * (`messages[3].tool_calls[0].function.arguments: not valid JSON`); nothing is returned then.
 */
compaction::result<std::vector<boost::json::object>> from_wire_messages(
    input_format f, const boost::json::value& items, const wire_input_options& options, diagnostics& diag
);

/// Beside each converted message, where its tool-call ids were read in the input: one path per
/// tool call of an assistant message, in order (`messages[1].tool_calls[0].id`,
/// `input[3].call_id`, `messages[1].content[2].id`); the call id's path for a tool result
/// (`messages[2].tool_call_id`, `messages[2].content[0].tool_use_id`); none for other messages.
using wire_id_paths = std::vector<std::vector<std::string>>;

/// As above, and the id paths of the converted messages in `paths` (on success).
compaction::result<std::vector<boost::json::object>> from_wire_messages(
    input_format f,
    const boost::json::value& items,
    const wire_input_options& options,
    diagnostics& diag,
    wire_id_paths& paths
);

/// A Responses `compaction` output item in a batch: the provider compacted inside the loop's own
/// request (OpenAI inline compaction, `context_management`), and the item stands for everything
/// that request sent (session::async_adopt_compaction adopts it).
struct wire_compaction_item
{
    boost::json::object item;         ///< as returned, verbatim
    std::string path;                 ///< where it was read (`input[0]`)
    std::size_t messages_before = 0;  ///< converted messages that came before it in the batch
};

/// As above, for a Responses reply that may hold one `compaction` item (the other overloads
/// refuse it as an unsupported item type): the item is left out of the messages and returned in
/// `compaction`. It must be `{"type":"compaction","encrypted_content":<non-empty string>, …}`
/// (other fields are kept), at most one per batch, and followed by at least one message (the
/// reply's answer, where the session's context continues); else `invalid_wire_message` with its
/// path. Other formats never set `compaction`.
compaction::result<std::vector<boost::json::object>> from_wire_messages(
    input_format f,
    const boost::json::value& items,
    const wire_input_options& options,
    diagnostics& diag,
    wire_id_paths& paths,
    std::optional<wire_compaction_item>& compaction
);

}  // namespace agentctx::providers
