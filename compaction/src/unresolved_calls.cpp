// find_unresolved_calls and with_unknown_outcomes: one walk that closes a batch at the next ordinary input.
#include <agentctx/compaction/unresolved_calls.hpp>

#include <agentctx/compaction/call_pairing.hpp>

#include <boost/json/serialize.hpp>

#include <algorithm>
#include <optional>
#include <unordered_set>

namespace agentctx::compaction {

namespace {

// Messages a request carries that are neither a tool result nor ordinary input: they neither
// answer nor close a batch (Pi holds system messages until the batch closes; unknown roles and
// excluded bash executions are never sent).
bool is_transparent(const message& m)
{
    return m.role == role::system || m.role == role::other ||
           (m.role == role::bash_execution && m.exclude_from_context);
}

// The calls some result pairs with (within its batch, or a late result after later input): an
// id that a later turn reuses does not answer an earlier, interrupted call.
std::unordered_set<const tool_call_block*> answered_calls(std::span<const context_message> messages)
{
    std::unordered_set<const tool_call_block*> answered;
    for (const auto& d : pair_tool_calls(messages).declarations)
        if (d.answers > 0)
            answered.insert(d.call);
    return answered;
}

// One pass over a context. `on_close(calls, entry_id, insert_after)` receives the unanswered
// calls of each closed batch and the index of the batch's last message.
template <class OnClose>
void walk_batches(std::span<const context_message> messages, OnClose&& on_close)
{
    const auto answered = answered_calls(messages);
    std::vector<const tool_call_block*> calls;
    std::string entry_id;
    std::size_t last = 0;
    const auto close = [&] {
        std::vector<const tool_call_block*> open;
        for (const auto* c : calls)
            if (!answered.contains(c))
                open.push_back(c);
        if (!open.empty())
            on_close(open, entry_id, last);
        calls.clear();
    };
    for (std::size_t i = 0; i < messages.size(); ++i)
    {
        const message& m = *messages[i].msg;
        if (m.role == role::tool_result)
        {
            if (!calls.empty())
                last = i;
            continue;
        }
        if (is_transparent(m))
            continue;
        close();
        if (m.role != role::assistant || m.stop_reason == stop_reason::error ||
            m.stop_reason == stop_reason::aborted)
            continue;
        for (const auto& b : m.content.blocks)
            if (const auto* c = std::get_if<tool_call_block>(&b))
                calls.push_back(c);
        entry_id = messages[i].entry_id;
        last = i;
    }
    // The batch still open at the end is the running one: left alone.
}

// The job an unanswered call launched, when a rule declares its tool (the id only from arguments:
// no result carries it).
std::optional<running_job> launched_job(
    const tool_call_block& c, const std::string& entry_id, const job_rules* jobs
)
{
    if (!jobs)
        return std::nullopt;
    for (const auto& r : jobs->rules)
        if (std::find(r.tools.begin(), r.tools.end(), c.name) != r.tools.end() ||
            (r.launches && r.launches(c)))
        {
            running_job j{{}, c.name, c.id, {entry_id}};
            if (r.id_source == job_rule::id_from::arguments)
                if (const auto* v = c.arguments.if_contains(r.id_field))
                    j.job_id = v->is_string() ? std::string(v->get_string()) : boost::json::serialize(*v);
            return j;
        }
    return std::nullopt;
}

std::shared_ptr<const message> observation(
    const unresolved_call& call,
    double timestamp,
    compat_mode mode,
    const std::optional<running_job>& job = std::nullopt
)
{
    auto m = std::make_shared<message>();
    m->role = role::tool_result;
    m->role_name = "toolResult";
    m->tool_call_id = call.call_id;
    m->tool_name = call.tool_name;
    m->is_error = true;
    m->timestamp = timestamp;
    m->content.blocks.push_back(text_block{
        mode == compat_mode::pi ? std::string(pi_no_result_text)
        : job                   ? running_job_outcome_text(*job)
                                : unknown_outcome_text(call)});
    return m;
}

}  // namespace

std::vector<unresolved_call> find_unresolved_calls(std::span<const context_message> messages)
{
    std::vector<unresolved_call> out;
    walk_batches(
        messages,
        [&](const std::vector<const tool_call_block*>& open, const std::string& entry_id, std::size_t) {
            for (const auto* c : open)
                out.push_back({c->id, c->name, entry_id});
        }
    );
    return out;
}

std::string unknown_outcome_text(const unresolved_call& call)
{
    return "No result was recorded for this `" + call.tool_name +
           "` call: the run was interrupted before it returned, so its outcome is unknown. It may or may not "
           "have taken effect. Check the current state before repeating it.";
}

std::vector<context_message> with_unknown_outcomes(
    std::span<const context_message> messages, compat_mode mode, const job_rules* jobs
)
{
    if (mode == compat_mode::pi)
        jobs = nullptr;                                            // Pi's placeholder, unchanged
    std::vector<std::pair<std::size_t, context_message>> inserts;  // (after index, observation)
    walk_batches(
        messages,
        [&](const std::vector<const tool_call_block*>& open, const std::string& entry_id, std::size_t last) {
            const double ts = messages[last].msg->timestamp;
            for (const auto* c : open)
                inserts.emplace_back(
                    last,
                    context_message{
                        observation({c->id, c->name, entry_id}, ts, mode, launched_job(*c, entry_id, jobs)),
                        entry_id}
                );
        }
    );
    std::vector<context_message> out;
    out.reserve(messages.size() + inserts.size());
    auto next = inserts.begin();
    for (std::size_t i = 0; i < messages.size(); ++i)
    {
        out.push_back(messages[i]);
        for (; next != inserts.end() && next->first == i; ++next)
            out.push_back(std::move(next->second));
    }
    return out;
}

}  // namespace agentctx::compaction
