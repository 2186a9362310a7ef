// Queued background jobs: what the host declares, and which jobs a context shows as still running.
#pragma once

#include <agentctx/compaction/entry.hpp>
#include <agentctx/compaction/error.hpp>
#include <agentctx/compaction/message.hpp>
#include <agentctx/compaction/projection.hpp>

#include <boost/json/object.hpp>

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace agentctx::compaction {

/**
 * @brief One kind of background job: the tool calls that launch it, where its id is read, and
 * which later entry reports it complete.
 *
 * A launch is an assistant's tool call the rule matches (by name in `tools`, or `launches`) whose
 * result, when recorded, is not an error. Its id comes from the call's arguments
 * (`id_from::arguments`, key `id_field`), from the result's `details` (`result_details`, key
 * `id_field`) or from the result's text (`result_text`, the first capture group of `id_pattern`,
 * an ECMAScript regular expression). The job completes at the first later entry that is a tool
 * result of a tool in `completion_tools` or a custom message of a type in
 * `completion_custom_types` and carries the id: its `details.<completion_field>` equals it, or,
 * without a field, its text contains it. `completes`, when set, decides instead.
 */
struct job_rule
{
    enum class id_from
    {
        arguments,
        result_details,
        result_text,
    };
    std::vector<std::string> tools;
    std::function<bool(const tool_call_block&)> launches;
    id_from id_source = id_from::arguments;
    std::string id_field;
    std::string id_pattern;
    std::vector<std::string> completion_tools;
    std::vector<std::string> completion_custom_types;
    std::string completion_field;
    std::function<bool(const entry&, std::string_view job_id)> completes;
};

/// The host's declaration (`session_config::jobs`, settings `"jobs"`). Empty = no jobs.
struct job_rules
{
    std::vector<job_rule> rules;
    bool empty() const noexcept { return rules.empty(); }
};

/// A job launched in the context whose completion entry has not arrived.
struct running_job
{
    std::string job_id;  ///< empty while the result that carries it has not been recorded
    std::string tool_name;
    std::string call_id;
    /// The launch exchange: the assistant entry, then the entries of the call's results.
    std::vector<std::string> entry_ids;
    bool operator==(const running_job&) const = default;
};

/**
 * @brief Reads `{"jobs": {"rules": [{"tools": [..], "id": {"from": "arguments" | "resultDetails" |
 * "resultText", "field": .., "pattern": ..}, "completedBy": {"tools": [..], "customTypes": [..],
 * "field": ..}}]}}` strictly: `invalid_settings` with the field path (`jobs.rules[0].id.from`) in
 * `diag`. Absent = no jobs.
 */
result<job_rules> parse_job_settings(const boost::json::object& settings, diagnostics& diag);

/**
 * @brief The running jobs of a projected context, in launch order.
 *
 * Reads the projected entries and, for a compaction, the entries it carries verbatim (a running
 * launch carried by an earlier compaction keeps its own entry ids). A job is running from its
 * launch until its completion entry; a launch whose result is an error starts no job.
 */
std::vector<running_job> find_running_jobs(std::span<const projected_entry> entries, const job_rules& rules);

/// Whether `e` belongs to the launch exchange of one of `jobs`.
bool in_running_job(const std::vector<running_job>& jobs, std::string_view entry_id);

/// The block a compaction's summary ends with while jobs run (before any pinned block): one line
/// per job with its id and tool, and that its completion has not been recorded. Empty without jobs.
std::string render_running_jobs_block(const std::vector<running_job>& jobs);

/// `summary` without its trailing running-jobs block (the previous summary a later compaction
/// updates: the block is rebuilt from the jobs running then).
std::string strip_running_jobs_block(std::string_view summary);

/// The unknown-outcome text for an unanswered call that launched a declared job: its completion
/// is reported by a later entry, so the missing result never reads as finished or interrupted.
std::string running_job_outcome_text(const running_job& job);

inline constexpr std::string_view running_jobs_block_open = "<running-jobs>\n";
inline constexpr std::string_view running_jobs_block_close = "</running-jobs>";

}  // namespace agentctx::compaction
