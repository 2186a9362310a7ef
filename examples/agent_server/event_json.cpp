// A session's events as JSON for the event stream.
#include "event_json.hpp"

#include <agentctx/compaction/json_text.hpp>

#include <boost/json/object.hpp>

namespace agentctx::server {

namespace json = boost::json;

event_text event_json(const runtime::session_event& e)
{
    json::object o;
    std::string name;
    if (const auto* r = std::get_if<runtime::remote_change_event>(&e))
    {
        // Another node appended or compacted (a shared PostgreSQL store).
        name = "remote_change";
        o["entries"] = r->entries;
        json::array ids;
        for (const auto& id : r->compactions)
            ids.emplace_back(id);
        o["compactions"] = std::move(ids);
    }
    else if (const auto* s = std::get_if<runtime::compaction_start_event>(&e))
    {
        name = "compaction_start";
        o["reason"] = runtime::to_string(s->reason);
    }
    else if (const auto* end = std::get_if<runtime::compaction_end_event>(&e))
    {
        name = "compaction_end";
        o["reason"] = runtime::to_string(end->reason);
        o["aborted"] = end->aborted;
        o["willRetry"] = end->will_retry;
        if (end->result)
            o["result"] = json::object{{"firstKeptEntryId", end->result->first_kept_entry_id},
                                       {"tokensBefore", end->result->tokens_before},
                                       {"tokensAfter", end->result->tokens_after}};
        if (end->error_message)
            o["errorMessage"] = *end->error_message;
    }
    else if (const auto* p = std::get_if<runtime::compaction_progress_event>(&e))
    {
        // Piecewise summaries: counts only, never source or note text.
        name = "compaction_progress";
        o["completed"] = p->completed;
        o["remaining"] = p->remaining;
    }
    else if (const auto* b = std::get_if<runtime::budget_exceeded_event>(&e))
    {
        // Required context does not fit: numbers and ids only.
        name = "budget_exceeded";
        o["reason"] = runtime::to_string(b->reason);
        o["inputTokens"] = b->input_tokens;
        o["allowance"] = b->allowance;
        o["requiredTokens"] = b->required_tokens;
        o["boundary"] = json::object{{"entryId", b->boundary_entry_id}, {"position", b->boundary_position}};
        o["required"] = json::object{{"entryId", b->required_entry_id}, {"position", b->required_position}};
    }
    else if (const auto* f = std::get_if<runtime::compaction_finished_event>(&e))
    {
        name = "compaction_finished";
        o["reason"] = runtime::to_string(f->reason);
        o["evidence"] = runtime::to_json(f->evidence);
    }
    return {std::move(name), compaction::stringify(o)};
}


}  // namespace agentctx::server
