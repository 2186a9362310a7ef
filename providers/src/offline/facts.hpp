// What the offline summarizer extracts from a transcript, before rendering.
#pragma once

#include "transcript.hpp"

#include <string>
#include <vector>

namespace agentctx::providers::offline {

/// Facts from the user's messages.
struct request_facts
{
    std::string goal;          // the first substantive request, or the latest one that redefines the task
    bool redefined = false;    // the goal came from a redefining request
    std::size_t goal_at = 0;   // index of the part the goal came from
    std::string last_request;  // the last substantive request
    std::vector<std::string> constraints;  // whole sentences, latest occurrence last
    std::vector<std::string> decisions;    // user sentences that state a choice
};

/// Facts from the assistant's text, tool calls and tool results.
struct work_facts
{
    std::vector<std::string> done;         // outcomes: files changed, checks passing, one line for probes
    std::vector<std::string> in_progress;  // calls without a result
    std::vector<std::string> blocked;      // failures never followed by a success
    std::vector<std::string> decisions;    // assistant sentences that state a choice
    std::vector<std::string> plan;         // "Next, …", "Then I will …", numbered plan lines
    std::vector<std::string> critical;     // paths, commands, error lines; most recent first
};

request_facts extract_requests(const std::vector<part>& parts);
/// Decisions and plans are taken from parts at index `since` or later (after a redefined goal).
work_facts extract_work(const std::vector<part>& parts, std::size_t since = 0);

/// Decisions and the latest plan from the assistant's text at part index `since` or later.
void assistant_statements(const std::vector<part>& parts, std::size_t since, work_facts& f);
/// Index of the last assistant part that changes approach ("instead", "rather than", …); 0 if none.
std::size_t last_change_of_approach(const std::vector<part>& parts);

/// True for a sentence that states a choice ("I'll use…", "We decided…", "Going with…", "instead of").
bool states_choice(std::string_view lowered);

/// Appends unless an item with the same fingerprint is present; with `move_to_end`, a repeat moves last.
void add_unique(std::vector<std::string>& v, std::string item, bool move_to_end = false);

}  // namespace agentctx::providers::offline
