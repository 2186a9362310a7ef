// Tool calls that never got a result: found, and answered in a request view.
#pragma once

#include <agentctx/compaction/cut_point.hpp>
#include <agentctx/compaction/jobs.hpp>
#include <agentctx/compaction/projection.hpp>

#include <span>
#include <string>
#include <vector>

namespace agentctx::compaction {

/// A tool call with no result that later ordinary input (a user-like message or another
/// assistant message) has passed: the run was interrupted and nobody will answer it.
struct unresolved_call
{
    std::string call_id;
    std::string tool_name;
    std::string entry_id;  ///< the assistant entry that made the call
};

/**
 * @brief The unresolved calls of a context, in order.
 *
 * The calls of the running batch (the last assistant's calls, when only tool results follow)
 * are not unresolved: the host is executing them. Calls of an `error`/`aborted` assistant are
 * not either: no tool ran for them, and requests leave such messages out (as Pi 1.6 does).
 */
std::vector<unresolved_call> find_unresolved_calls(std::span<const context_message> messages);

/// The observation agentctx answers an unresolved call with: interrupted, effect unknown, check
/// before repeating. It states only what is known; it never claims the call ran or failed.
std::string unknown_outcome_text(const unresolved_call& call);

/// Pi 1.6's placeholder (transformMessages) for the same situation.
inline constexpr std::string_view pi_no_result_text = "No result provided";

/**
 * @brief `messages` with an error tool result after each unresolved call's batch.
 *
 * Inserted right after the call's other results, so every call of the view has a result and both
 * wire formats accept it. History is never edited: the observations exist only in this view (the
 * inserted messages carry the calling assistant's entry id). `agentctx` writes
 * unknown_outcome_text; `pi` writes Pi's `No result provided`. With `jobs` (agentctx mode), a call
 * that launches a declared background job is answered with running_job_outcome_text instead: a
 * queued job's call never reads as interrupted or finished.
 */
std::vector<context_message> with_unknown_outcomes(
    std::span<const context_message> messages,
    compat_mode mode = compat_mode::agentctx,
    const job_rules* jobs = nullptr
);

}  // namespace agentctx::compaction
