// Reads the summary prompt back into its pieces: transcript parts, decoded tool calls, previous summary.
#pragma once

#include <boost/json/object.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace agentctx::providers::offline {

/// One tool call from `[Assistant tool calls]: name(k=JSON(v), …); …`, arguments decoded.
struct tool_call
{
    std::string name;
    boost::json::object args;
    /// The string argument `key`, or empty.
    std::string arg(std::string_view key) const;
};

/// One labelled part of the serialized conversation.
struct part
{
    std::string label;  // "User", "Agent" (a peer's message), "Assistant", "Assistant thinking", "Assistant
                        // tool calls", "Tool result"
    std::string text;
    std::vector<tool_call> calls;  // for "Assistant tool calls"
};

/// The prompt, taken apart. Both the `<conversation>` form and the `# Conversation` / `# Instructions` form.
struct prompt_view
{
    std::vector<part> parts;
    std::string previous_summary;
    std::string focus;
    std::string instructions;  // the text after the conversation
    bool turn_prefix = false;
};

prompt_view read_prompt(std::string_view prompt);

/// Parses `name(k=v, …); name(…)`; a call whose arguments do not decode keeps the ones before.
std::vector<tool_call> parse_calls(std::string_view text);

/// The body under a `## Heading` (or `### Heading`) of a markdown checkpoint, up to the next heading.
std::string section_body(std::string_view summary, std::string_view heading);

}  // namespace agentctx::providers::offline
