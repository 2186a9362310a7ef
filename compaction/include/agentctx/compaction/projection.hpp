// Context projection (spec §2): the messages the next model request sees for a leaf.
#pragma once

#include <agentctx/compaction/entry.hpp>
#include <agentctx/compaction/session_log.hpp>

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace agentctx::compaction {

struct model_ref
{
    std::string provider;
    std::string model_id;
    bool operator==(const model_ref&) const = default;
};

/// One projected message and the entry it came from (the compaction entry for the summary).
struct context_message
{
    std::shared_ptr<const message> msg;
    std::string entry_id;
};

struct session_context
{
    std::vector<context_message> messages;
    std::string thinking_level = "off";
    std::optional<model_ref> model;
    std::optional<std::string> leaf_id;
};

/// The message an entry contributes (`message`, `custom_message`, `branch_summary`), or null.
/// `keep_empty_branch_summary`: the context skips empty branch summaries, compaction input
/// does not (spec §2.5 vs §6.9).
std::shared_ptr<const message> message_of_entry(const entry& e, bool keep_empty_branch_summary = false);

/// The compactionSummary message built from a compaction entry.
std::shared_ptr<const message> compaction_summary_message(const entry& compaction);

/// Projection of the log for `leaf` (default: the log's leaf). Only the entries the context
/// needs are materialized; model and thinking level come from the index.
result<session_context> build_session_context(const session_log& log, diagnostics& diag);
result<session_context> build_session_context(
    const session_log& log,
    std::optional<std::size_t> leaf,
    diagnostics& diag
);

/// Projection of a materialized path (root first, leaf last).
session_context build_session_context(std::span<const entry_ptr> path);

}  // namespace agentctx::compaction
