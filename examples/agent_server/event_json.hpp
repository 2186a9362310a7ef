// A session's events as the event stream sends them: the event's name and its JSON data.
#pragma once

#include <agentctx/runtime/session.hpp>

#include <string>

namespace agentctx::server {

struct event_text
{
    std::string name;  ///< compaction_start/_end/_progress/_finished/_prepared, remote_change,
                       ///< derived_state_dropped, budget_exceeded
    std::string data;  ///< one JSON object (counts and ids only, never source or summary text)
};

event_text event_json(const runtime::session_event& e);

}  // namespace agentctx::server
