// The agent message model of Pi's session format: roles, content blocks, usage.
#pragma once

#include <agentctx/compaction/error.hpp>
#include <agentctx/compaction/json_text.hpp>

#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace agentctx::compaction {

enum class role
{
    user,
    assistant,
    tool_result,
    bash_execution,
    custom,
    branch_summary,
    compaction_summary,
    system,  ///< Pi 1.6: prompt and tool-set state
    other,   ///< a role this library does not know; kept, never sent, estimated as 0
};

/// The JSON spelling of a role (`toolResult`, `bashExecution`, ...).
std::string_view to_string(role r) noexcept;
role role_from_string(std::string_view s) noexcept;

enum class stop_reason
{
    none,  ///< absent
    stop,
    length,
    tool_use,
    error,
    aborted,
    other,
};

struct text_block
{
    std::string text;
};
struct thinking_block
{
    std::string thinking;
    bool redacted = false;
};
struct image_block
{
    std::string data;  ///< base64
    std::string mime_type;
};
struct tool_call_block
{
    std::string id;
    std::string name;
    boost::json::object arguments;  ///< key order as read
};
struct other_block
{
    std::string type;
};
using content_block = std::variant<text_block, thinking_block, image_block, tool_call_block, other_block>;

/// `string | block[]`: Pi accepts both for user, custom and custom_message content.
struct content
{
    bool is_string = false;
    std::string text;                   ///< when is_string
    std::vector<content_block> blocks;  ///< otherwise
};

struct cost
{
    double input = 0, output = 0, cache_read = 0, cache_write = 0, total = 0;
};

struct usage
{
    std::int64_t input = 0, output = 0, cache_read = 0, cache_write = 0, total_tokens = 0;
    std::optional<std::int64_t> cache_write_1h, reasoning;  ///< Pi 1.6 subsets (never in context counts)
    struct cost cost;
    bool total_from_provider = false;  ///< cost.totalFromProvider
};

/// One named prompt section of a system message; `value` nullopt = the section is removed.
struct prompt_section
{
    std::string name;
    std::optional<std::string> value;
};

/// A call a tool made to another tool (`nestedCalls.calls[]`, Pi 1.6); feeds file lists.
struct nested_call
{
    std::string name;
    std::optional<boost::json::object> arguments;  ///< absent when over Pi's size limits
};

/// One message of any role. Fields that a role does not use stay at their defaults.
struct message
{
    enum role role = role::other;
    std::string role_name;  ///< as written (kept for roles we do not know)
    double timestamp = 0;   ///< Unix milliseconds

    struct content content;  ///< user, assistant, toolResult, custom

    // assistant
    std::string api, provider, model;
    std::optional<struct usage> usage;
    enum stop_reason stop_reason = stop_reason::none;
    std::optional<std::string> error_message;

    // toolResult
    std::string tool_call_id, tool_name;
    bool is_error = false;

    // bashExecution
    std::string command, output;
    std::optional<double> exit_code;
    bool cancelled = false, truncated = false, exclude_from_context = false;
    std::optional<std::string> full_output_path;

    // assistant (Pi 1.6): the thinking level the loop requested; never affects projection
    std::optional<std::string> thinking_level;
    // toolResult (Pi 1.6)
    std::vector<nested_call> nested_calls;

    // system (Pi 1.6): `content` above is the instruction text (string or text blocks);
    // sections in JavaScript object order; tool declarations as written.
    std::vector<prompt_section> sections;
    bool has_sections = false;
    std::optional<std::vector<boost::json::object>> tools_added;
    std::vector<std::string> tools_removed;

    // custom
    std::string custom_type;
    bool display = false;
    /// Another agent wrote it (a sub-agent's result, a supervisor): the name from a custom_message
    /// entry's `details.agentctx.peer` (peer_name). Empty: not a peer message. convert_to_llm
    /// keeps it on the user message it makes, so summaries and wire views keep the authorship.
    std::string peer;

    // branchSummary / compactionSummary
    std::string summary, from_id;
    double tokens_before = 0;
};

/// The peer name a custom_message entry's `details` declare (`{"agentctx": {"peer": NAME}}`),
/// cleaned to at most 64 printable characters without brackets, quotes or line breaks; empty
/// when absent or empty.
std::string peer_name(const boost::json::value& details);

/// Decodes a message object strictly: a field of the wrong type is `wrong_type`, a missing
/// required field `missing_field`, both with the JSON path (prefixed by `path`) in `diag`.
result<message> decode_message(const boost::json::object& o, std::string_view path, diagnostics& diag);

/// Decodes `string | (text|image)[]` content (also used by custom_message entries).
result<content> decode_content(const boost::json::value& v, std::string_view path, diagnostics& diag);

/// The concatenated text of a content's text blocks (no separator), or the string content.
std::string content_text(const content& c);

/// Decodes a `Usage` object (all fields optional numbers).
result<struct usage> decode_usage(const boost::json::object& o, std::string_view path, diagnostics& diag);

}  // namespace agentctx::compaction
