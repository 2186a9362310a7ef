// A session's events as JSON for the event stream: one small function per event.
#include "event_json.hpp"

#include <agentctx/compaction/json_text.hpp>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

namespace agentctx::server {

namespace json = boost::json;

namespace {

using named = std::pair<const char*, json::object>;

// Another node appended or compacted (a shared PostgreSQL store).
named fields(const runtime::remote_change_event& r)
{
    json::array ids;
    for (const auto& id : r.compactions)
        ids.emplace_back(id);
    return {"remote_change", json::object{{"entries", r.entries}, {"compactions", std::move(ids)}}};
}

named fields(const runtime::compaction_start_event& s)
{
    return {"compaction_start", json::object{{"reason", runtime::to_string(s.reason)}}};
}

named fields(const runtime::compaction_end_event& end)
{
    json::object o{
        {"reason", runtime::to_string(end.reason)}, {"aborted", end.aborted}, {"willRetry", end.will_retry}};
    if (end.result)
        o["result"] = json::object{
            {"firstKeptEntryId", end.result->first_kept_entry_id},
            {"tokensBefore", end.result->tokens_before},
            {"tokensAfter", end.result->tokens_after}};
    if (end.error_message)
        o["errorMessage"] = *end.error_message;
    if (end.recall)
        o["recall"] = compaction::to_json(*end.recall);
    return {"compaction_end", std::move(o)};
}

// Piecewise summaries: counts only, never source or note text.
named fields(const runtime::compaction_progress_event& p)
{
    return {"compaction_progress", json::object{{"completed", p.completed}, {"remaining", p.remaining}}};
}

named fields(const runtime::compaction_finished_event& f)
{
    return {
        "compaction_finished",
        json::object{{"reason", runtime::to_string(f.reason)}, {"evidence", runtime::to_json(f.evidence)}}};
}

// The latest compaction's carried entries or native state failed its checks.
named fields(const runtime::derived_state_dropped_event& d)
{
    return {
        "derived_state_dropped",
        json::object{
            {"compactionId", d.note.compaction_id}, {"part", d.note.part}, {"reason", d.note.reason}}};
}

// A background compaction is ready; it commits at the threshold.
named fields(const runtime::compaction_prepared_event& r)
{
    return {
        "compaction_prepared",
        json::object{
            {"firstKeptEntryId", r.first_kept_entry_id},
            {"coveredEntries", r.covered_entries},
            {"tokensBefore", r.tokens_before},
            {"elapsedMs", r.elapsed_ms},
            {"calls", r.calls}}};
}

// Required context, or the summary's room, does not fit: numbers and ids only.
named fields(const runtime::budget_exceeded_event& b)
{
    return {
        "budget_exceeded",
        json::object{
            {"reason", b.request_view ? "request_view" : runtime::to_string(b.reason)},
            {"inputTokens", b.input_tokens},
            {"allowance", b.allowance},
            {"requiredTokens", b.required_tokens},
            {"boundary", json::object{{"entryId", b.boundary_entry_id}, {"position", b.boundary_position}}},
            {"required", json::object{{"entryId", b.required_entry_id}, {"position", b.required_position}}},
            {"summaryTokens", b.summary_tokens}}};
}

// Old tool results were replaced by placeholders; the originals stay readable by entry id.
named fields(const runtime::context_cleared_event& c)
{
    json::array targets(c.target_ids.begin(), c.target_ids.end());
    json::array edits(c.edit_ids.begin(), c.edit_ids.end());
    return {
        "context_cleared",
        json::object{
            {"results", c.results},
            {"tokens", c.tokens},
            {"tokensBefore", c.tokens_before},
            {"targetIds", std::move(targets)},
            {"editIds", std::move(edits)}}};
}

// The host's evidence store refused a clearing's originals: nothing was cleared.
named fields(const runtime::clearing_refused_event& c)
{
    json::array targets(c.target_ids.begin(), c.target_ids.end());
    return {
        "clearing_refused",
        json::object{
            {"targetIds", std::move(targets)}, {"reason", c.reason}, {"tokensBefore", c.tokens_before}}};
}

// A provider withheld (or let through) replayed reasoning: counts and reasons only.
named fields(const runtime::reasoning_transformed_event& r)
{
    json::array reasons(r.reasons.begin(), r.reasons.end());
    return {
        "reasoning_transformed",
        json::object{
            {"entryId", r.entry_id},
            {"removed", r.removed},
            {"allowed", r.allowed},
            {"reasons", std::move(reasons)}}};
}

// A clearing waits for the next compaction: it would cost more reasoning than it frees.
named fields(const runtime::clearing_deferred_event& c)
{
    return {
        "clearing_deferred",
        json::object{
            {"results", c.results},
            {"tokens", c.tokens},
            {"reasoningBlocks", c.reasoning_blocks},
            {"reasoningTokens", c.reasoning_tokens},
            {"tokensBefore", c.tokens_before}}};
}

}  // namespace

event_text event_json(const runtime::session_event& e)
{
    auto [name, o] = std::visit([](const auto& ev) { return fields(ev); }, e);
    return {name, compaction::stringify(o)};
}

}  // namespace agentctx::server
