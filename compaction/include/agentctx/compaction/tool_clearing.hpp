// Tool-result clearing: which old tool results (and call arguments) a context may replace by placeholders.
#pragma once

#include <agentctx/compaction/cut_point.hpp>
#include <agentctx/compaction/projection.hpp>
#include <agentctx/compaction/settings.hpp>
#include <agentctx/compaction/token_accounting.hpp>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace agentctx::compaction {

/// Whether clearing is on: the setting, else the mode's default; never in `--compat pi`.
bool clearing_enabled(const clear_tool_results_settings& s, compat_mode mode) noexcept;

/// The start of every placeholder: a result that begins with it is already cleared.
inline constexpr std::string_view cleared_marker = "[Tool result cleared";

/// One edit of a clearing: a context_edit's target and its `replacement` object (`{content}`).
struct clearing_edit
{
    std::string target_id;
    boost::json::object replacement;
    std::int64_t tokens = 0;  ///< what the edit frees
    bool input = false;       ///< an assistant entry whose calls' arguments are cleared
};

struct clearing_plan
{
    std::vector<clearing_edit> edits;  ///< in context order; empty = nothing to do
    std::int64_t results = 0;          ///< tool results cleared
    std::int64_t tokens = 0;           ///< tokens freed (estimated)
    std::string reason;                ///< why nothing is cleared (safe text), when empty
};

struct clearing_input
{
    std::span<const context_message> context;  ///< the projected context, oldest first
    std::int64_t context_tokens = 0;           ///< the size the trigger is compared with
    std::int64_t threshold = 0;  ///< contextWindow − reserveTokens (a fractional trigger's base)
    /// Entries the host protects (pinned or required): never cleared. Null = none.
    std::function<bool(const std::string& entry_id)> protected_entry;
    const token_counter* counter = nullptr;  ///< null = chars/4
    /// The raw `content` of an assistant entry as projected now (with earlier edits), for
    /// clearing its calls' arguments. Null or a null result: arguments are left alone.
    std::function<const boost::json::array*(const std::string& entry_id)> assistant_content;
};

/**
 * @brief The tool results a clearing replaces, decided on the projected context alone.
 *
 * Once `context_tokens` reaches the trigger, every tool result outside the protected window is
 * replaced, oldest first, by a placeholder naming the tool, its arguments' key (path, command),
 * the size cleared and the entry id. Protected: the running batch (the tool calls of the last
 * assistant message when no assistant follows it, and their results), the results of the `keep`
 * most recent tool uses, results of `exclude_tools`, entries `protected_entry` names, results
 * already cleared and results no larger than their placeholder. With `clearToolInputs`, the
 * cleared calls' arguments are replaced by `{}` in one edit per assistant entry. When the plan
 * would free fewer than `clear_at_least` tokens it is empty and says why.
 */
clearing_plan plan_tool_clearing(const clear_tool_results_settings& s, const clearing_input& in);

/// The placeholder text of a cleared result: `[Tool result cleared: read(path: src/a.cpp),
/// 48,213 chars (~12,054 tokens); the original is entry 61f0e1d2]`.
std::string clearing_placeholder(
    std::string_view tool,
    std::string_view key,
    std::int64_t chars,
    std::int64_t tokens,
    std::string_view entry_id
);

/// The argument that names what a call worked on (`path`, `file_path`, `command`, ...), as
/// `name: value` cut to 120 characters; empty when the call has none of them.
std::string argument_key(const boost::json::object& arguments);

}  // namespace agentctx::compaction
