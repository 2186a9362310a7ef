// validate_transcript and tool_round_intervals.
#include <agentctx/compaction/transcript.hpp>

#include <algorithm>
#include <unordered_map>

namespace agentctx::compaction {

const char* to_string(transcript_issue_kind k) noexcept
{
    switch (k)
    {
    case transcript_issue_kind::duplicate_call_id: return "duplicate_call_id";
    case transcript_issue_kind::result_without_call: return "result_without_call";
    case transcript_issue_kind::call_with_two_results: return "call_with_two_results";
    case transcript_issue_kind::name_mismatch: return "name_mismatch";
    }
    return "unknown";
}

namespace {

template <class F>
void for_each_call(const message& m, F&& f)
{
    if (m.role != role::assistant)
        return;
    for (const auto& b : m.content.blocks)
        if (const auto* c = std::get_if<tool_call_block>(&b))
            f(*c);
}

// Visits the messages of position i: a raw path entry (its own message) or a projected entry.
template <class F>
void visit_messages(std::span<const entry_ptr> path, std::size_t i, F&& f)
{
    const auto& e = path[i];
    if (e && e->type == entry_type::message && e->message)
        f(*e->message, e->id);
}

template <class F>
void visit_messages(std::span<const projected_entry> entries, std::size_t i, F&& f)
{
    for (const auto& m : entries[i].messages)
        f(*m, entries[i].source->id);
}

template <class Seq>
std::vector<transcript_issue> validate_impl(Seq seq, std::size_t start, std::size_t end)
{
    struct call_info
    {
        std::string name;
        int results = 0;
    };
    std::unordered_map<std::string, call_info> calls;
    std::vector<transcript_issue> issues;
    for (std::size_t i = start; i < end; ++i)
        visit_messages(seq, i, [&](const message& m, const std::string& id) {
            for_each_call(m, [&](const tool_call_block& c) {
                if (!calls.emplace(c.id, call_info{c.name, 0}).second)
                    issues.push_back({transcript_issue_kind::duplicate_call_id, id, c.id});
            });
            if (m.role != role::tool_result)
                return;
            const auto it = calls.find(m.tool_call_id);
            if (it == calls.end())
            {
                issues.push_back({transcript_issue_kind::result_without_call, id, m.tool_call_id});
                return;
            }
            if (++it->second.results == 2)
                issues.push_back({transcript_issue_kind::call_with_two_results, id, m.tool_call_id});
            if (!m.tool_name.empty() && m.tool_name != it->second.name)
                issues.push_back({transcript_issue_kind::name_mismatch, id, m.tool_call_id});
        });
    return issues;
}

template <class Seq>
std::vector<interval> rounds_impl(Seq seq, std::size_t start, std::size_t end)
{
    std::unordered_map<std::string, std::size_t> call_at;      // call id -> index of its assistant
    std::unordered_map<std::size_t, std::size_t> last_result;  // assistant index -> last result index
    for (std::size_t i = start; i < end; ++i)
        visit_messages(seq, i, [&](const message& m, const std::string&) {
            for_each_call(m, [&](const tool_call_block& c) { call_at.emplace(c.id, i); });
            if (m.role == role::tool_result)
                if (const auto it = call_at.find(m.tool_call_id); it != call_at.end())
                    last_result[it->second] = i;
        });
    std::vector<interval> v;
    v.reserve(last_result.size());
    for (const auto& [first, last] : last_result)
        v.push_back({first, last});
    std::sort(v.begin(), v.end(), [](const interval& a, const interval& b) { return a.first < b.first; });
    std::vector<interval> merged;
    for (const auto& iv : v)
    {
        if (!merged.empty() && iv.first <= merged.back().last)
            merged.back().last = std::max(merged.back().last, iv.last);
        else
            merged.push_back(iv);
    }
    return merged;
}

}  // namespace

std::vector<transcript_issue> validate_transcript(std::span<const entry_ptr> path, std::size_t start, std::size_t end)
{
    return validate_impl(path, start, end);
}

std::vector<transcript_issue> validate_transcript(std::span<const projected_entry> entries, std::size_t start,
                                                  std::size_t end)
{
    return validate_impl(entries, start, end);
}

std::vector<transcript_issue> validate_transcript(std::span<const entry_ptr> path)
{
    return validate_transcript(path, 0, path.size());
}

std::vector<interval> tool_round_intervals(std::span<const entry_ptr> path, std::size_t start, std::size_t end)
{
    return rounds_impl(path, start, end);
}

std::vector<interval> tool_round_intervals(std::span<const projected_entry> entries, std::size_t start, std::size_t end)
{
    return rounds_impl(entries, start, end);
}

}  // namespace agentctx::compaction
