// Classifies tool calls (probe, edit, command, check) and judges tool results (failed or not).
#pragma once

#include "transcript.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace agentctx::providers::offline {

enum class call_kind
{
    probe,    // read-only: read, ls, grep, cat, find, rg, head, tail, …
    edit,     // edit / write calls
    check,    // tests, builds, linters
    command,  // any other shell command
    other     // any other tool
};

call_kind kind_of(const tool_call& c);
/// The shell command of a bash-like call (decoded, one line), or empty.
std::string command_of(const tool_call& c);
/// The file path argument of a call, or empty.
std::string path_of(const tool_call& c);
/// A key that identifies "the same command" across retries.
std::string key_of(const tool_call& c);

/// The tool result reports a failure (errors, failing tests, non-zero exit).
bool reports_failure(std::string_view result);
/// Up to `n` lines of a failing result that carry the error.
std::vector<std::string> error_lines(std::string_view result, std::size_t n);
/// Tokens that look like file paths (contain '/' or end in a short extension).
void paths_in(std::string_view text, std::vector<std::string>& out);

}  // namespace agentctx::providers::offline
