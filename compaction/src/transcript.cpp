// validate_transcript and tool_round_intervals, over the batch-scoped call pairing.
#include <agentctx/compaction/transcript.hpp>

#include <agentctx/compaction/call_pairing.hpp>

#include <algorithm>
#include <map>
#include <optional>

namespace agentctx::compaction {

const char* to_string(transcript_issue_kind k) noexcept
{
    switch (k)
    {
    case transcript_issue_kind::duplicate_call_id:
        return "duplicate_call_id";
    case transcript_issue_kind::result_without_call:
        return "result_without_call";
    case transcript_issue_kind::call_with_two_results:
        return "call_with_two_results";
    case transcript_issue_kind::name_mismatch:
        return "name_mismatch";
    }
    return "unknown";
}

namespace {

// Visits the messages of position i: a raw path entry (its own message) or a projected entry.
template <class F>
void visit_messages(std::span<const entry_ptr> path, std::size_t i, F&& f)
{
    const auto& e = path[i];
    if (e && e->type == entry_type::message && e->message)
        f(*e->message);
}

template <class F>
void visit_messages(std::span<const projected_entry> entries, std::size_t i, F&& f)
{
    for (const auto& m : entries[i].messages)
        f(*m);
}

const std::string& entry_id_at(std::span<const entry_ptr> path, std::size_t i)
{
    return path[i]->id;
}
const std::string& entry_id_at(std::span<const projected_entry> entries, std::size_t i)
{
    return entries[i].source->id;
}

template <class Seq>
tool_call_pairing pair_range(Seq seq, std::size_t start, std::size_t end)
{
    std::vector<pairing_input> flat;
    for (std::size_t i = start; i < end; ++i)
        visit_messages(seq, i, [&](const message& m) { flat.push_back({&m, i}); });
    return pair_tool_calls(flat);
}

// The issue a result's link raises, if any. An id answered in its own batch is never one, however
// often it repeats; a conflict of live declarations is reported but bounds the cut instead of
// failing the plan (see is_barrier).
std::optional<transcript_issue_kind> issue_of(
    const tool_call_pairing& p, const result_link& r, const message& m
)
{
    switch (r.kind)
    {
    case result_link_kind::no_call:
        return transcript_issue_kind::result_without_call;
    case result_link_kind::ambiguous:
        return r.late ? std::optional(transcript_issue_kind::duplicate_call_id) : std::nullopt;
    case result_link_kind::repeat:
        if (r.answer == 2)
            return transcript_issue_kind::call_with_two_results;
        [[fallthrough]];
    case result_link_kind::paired:
        break;
    }
    if (!m.tool_name.empty() && m.tool_name != p.declarations[r.declaration].call->name)
        return transcript_issue_kind::name_mismatch;
    return std::nullopt;
}

template <class Seq>
std::vector<transcript_issue> validate_impl(Seq seq, std::size_t start, std::size_t end)
{
    const auto p = pair_range(seq, start, end);
    std::vector<std::pair<std::size_t, transcript_issue>> found;  // (position, issue)
    for (const auto d : p.repeated_in_message)
    {
        const auto& decl = p.declarations[d];
        found.push_back(
            {decl.position,
             {transcript_issue_kind::duplicate_call_id, entry_id_at(seq, decl.position), decl.call->id}}
        );
    }
    std::size_t k = 0;
    for (std::size_t i = start; i < end; ++i)
        visit_messages(seq, i, [&](const message& m) {
            if (m.role != role::tool_result)
                return;
            if (const auto kind = issue_of(p, p.results[k++], m))
                found.push_back({i, {*kind, entry_id_at(seq, i), m.tool_call_id}});
        });
    std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
        return a.first < b.first;
    });
    std::vector<transcript_issue> issues;
    for (auto& [pos, issue] : found)
        issues.push_back(std::move(issue));
    return issues;
}

template <class Seq>
std::vector<interval> rounds_impl(Seq seq, std::size_t start, std::size_t end)
{
    std::map<std::size_t, std::size_t> last_result;  // first position of a round -> its last result
    for (const auto& r : pair_range(seq, start, end).results)
        if (r.kind != result_link_kind::no_call)
        {
            auto& last = last_result.try_emplace(r.reach_from, r.position).first->second;
            last = std::max(last, r.position);
        }
    std::vector<interval> merged;
    for (const auto& [first, last] : last_result)
    {
        if (!merged.empty() && first <= merged.back().last)
            merged.back().last = std::max(merged.back().last, last);
        else
            merged.push_back({first, last});
    }
    return merged;
}

}  // namespace

std::vector<transcript_issue> validate_transcript(
    std::span<const entry_ptr> path, std::size_t start, std::size_t end
)
{
    return validate_impl(path, start, end);
}

std::vector<transcript_issue> validate_transcript(
    std::span<const projected_entry> entries, std::size_t start, std::size_t end
)
{
    return validate_impl(entries, start, end);
}

std::vector<transcript_issue> validate_transcript(std::span<const entry_ptr> path)
{
    return validate_transcript(path, 0, path.size());
}

std::vector<interval> tool_round_intervals(
    std::span<const entry_ptr> path, std::size_t start, std::size_t end
)
{
    return rounds_impl(path, start, end);
}

std::vector<interval> tool_round_intervals(
    std::span<const projected_entry> entries, std::size_t start, std::size_t end
)
{
    return rounds_impl(entries, start, end);
}

}  // namespace agentctx::compaction
