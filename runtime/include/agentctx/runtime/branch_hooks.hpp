// Tree navigation's options and hooks (Pi 1.6's `session_before_tree` and `session_tree` events).
#pragma once

#include <agentctx/compaction/entry.hpp>
#include <agentctx/compaction/message.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/json/value.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace agentctx::runtime {

/// What session::async_branch_from(id, options) is asked to do (Pi 1.6's navigateTree options).
struct branch_options
{
    /// Summarize the branch being left into a `branch_summary` entry.
    bool summarize = false;
    /// Appended to the branch prompt as `Additional focus: …`, or the whole instructions with
    /// `replace_instructions`. Empty = none.
    std::optional<std::string> custom_instructions;
    bool replace_instructions = false;
    /// Written as a Pi `label` entry: on the summary entry when one is written, else on the target.
    /// Empty = none.
    std::optional<std::string> label;
};

/// Passed to before_branch hooks (Pi's `session_before_tree` preparation). Every reference lives
/// until the hook returns (or, for an awaitable hook, until its awaitable completes).
struct before_branch_event
{
    const std::string& target_id;
    const std::optional<std::string>& old_leaf_id;         ///< none after a reset to the root
    const std::optional<std::string>& common_ancestor_id;  ///< none when the paths share nothing
    /// The branch being left, from the entry after the common ancestor to the old leaf (complete
    /// entries), whether or not a summary was asked for.
    const std::vector<compaction::entry_ptr>& entries_to_summarize;
    bool user_wants_summary = false;
    const std::optional<std::string>& custom_instructions;
    bool replace_instructions = false;
    const std::optional<std::string>& label;
    /// Emits on the caller's `terminal` cancellation of the navigation: bind the hook's own
    /// operations to it (an awaitable hook's `use_awaitable` operations are cancelled already).
    /// Cancelled, or closed, while a hook runs: the navigation completes `cancelled` once it returns.
    boost::asio::cancellation_slot cancellation;
};

/// A summary a before_branch hook supplies: written with `fromHook: true`, no model call.
struct hook_branch_summary
{
    std::string summary;         ///< empty: no entry is written (as Pi)
    boost::json::value details;  ///< null: the entry has no `details`
    std::optional<compaction::usage> usage;
};

/// A before_branch hook's answer. One that sets nothing is no answer.
struct before_branch_decision
{
    bool cancel = false;  ///< nothing moves, nothing is written: completes with `hook_cancelled`
    /// Used when a summary was asked for (even for a branch with no message); ignored otherwise.
    std::optional<hook_branch_summary> summary;
    std::optional<std::string> custom_instructions;  ///< override the options' for the model's summary
    std::optional<bool> replace_instructions;
    std::optional<std::string> label;

    bool empty() const noexcept
    {
        return !cancel && !summary && !custom_instructions && !replace_instructions && !label;
    }
};

/// Passed to branched hooks once the leaf has moved and the entries are written (Pi's `session_tree`).
struct branched_event
{
    const std::optional<std::string>& new_leaf_id;  ///< the leaf now: the label entry when one was written
    const std::optional<std::string>& old_leaf_id;
    const compaction::entry* summary_entry = nullptr;  ///< the branch_summary written, if any
    std::optional<bool> from_hook;                     ///< set when a summary was written
};

/// Hooks run on the session's strand in registration order and must not block. A hook that
/// throws is logged and skipped. For before_branch the last answer wins whole (not merged) and a
/// cancel returns at once (as Pi's runner).
using before_branch_hook = std::function<before_branch_decision(const before_branch_event&)>;
/// A before_branch hook that may suspend: awaited before the summary request.
using async_before_branch_hook =
    std::function<boost::asio::awaitable<before_branch_decision>(const before_branch_event&)>;
using branched_hook = std::function<void(const branched_event&)>;
/// A branched hook that may suspend: awaited in registration order with the synchronous ones;
/// the navigation completes after every hook has finished. Its cancellation is the
/// navigation's: the entries are written and the leaf has moved, so a cancellation while it
/// runs cancels its `use_awaitable` operations and the navigation still completes with success.
using async_branched_hook = std::function<boost::asio::awaitable<void>(const branched_event&)>;

}  // namespace agentctx::runtime
