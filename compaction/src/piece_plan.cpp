// The piece planner: exchange batches over a summarized prefix, greedy bounded pieces, covered-part identity.
#include <agentctx/compaction/piece_plan.hpp>

#include <agentctx/compaction/call_pairing.hpp>
#include <agentctx/compaction/llm_convert.hpp>
#include <agentctx/compaction/serialize.hpp>

#include "sha256.hpp"

#include <algorithm>

namespace agentctx::compaction {

namespace {

// The text one message contributes to a summary request (empty for thinking-only or system).
std::string message_text(const context_message& m)
{
    const std::shared_ptr<const message> one[] = {m.msg};
    return serialize_conversation(convert_to_llm(one, summary_framing::pi));
}

// For each message, the last index its tool round reaches (itself when it opens none): a batch
// may only end where no round is open.
std::vector<std::size_t> round_reach(std::span<const context_message> msgs)
{
    std::vector<std::size_t> reach(msgs.size());
    for (std::size_t i = 0; i < msgs.size(); ++i)
        reach[i] = i;
    for (const auto& r : pair_tool_calls(msgs).results)
        if (r.kind != result_link_kind::no_call)
            reach[r.reach_from] = std::max(reach[r.reach_from], r.position);
    return reach;
}

}  // namespace

std::vector<exchange_batch> exchange_batches(std::span<const context_message> messages)
{
    const auto reach = round_reach(messages);
    std::vector<exchange_batch> out;
    std::size_t begin = 0, open_until = 0, chars = 0;
    for (std::size_t i = 0; i < messages.size(); ++i)
    {
        open_until = std::max(open_until, reach[i]);
        const std::size_t n = message_text(messages[i]).size();
        chars += n + (n && chars ? 2 : 0);  // parts are joined by a blank line
        const bool same_entry_next =
            i + 1 < messages.size() && messages[i + 1].entry_id == messages[i].entry_id;
        if (open_until <= i && !same_entry_next)
        {
            out.push_back({begin, i + 1, chars});
            begin = i + 1;
            chars = 0;
        }
    }
    if (begin < messages.size())  // unreachable: the last message closes every round
        out.push_back({begin, messages.size(), chars});
    return out;
}

bool is_batch_boundary(std::span<const context_message> messages, std::size_t index)
{
    if (index == 0 || index == messages.size())
        return true;
    for (const auto& b : exchange_batches(messages))
        if (b.end == index)
            return true;
    return false;
}

std::vector<summary_piece> plan_pieces(
    std::span<const context_message> messages, std::size_t max_source_chars, std::size_t from
)
{
    std::vector<summary_piece> out;
    std::optional<summary_piece> cur;
    for (const auto& b : exchange_batches(messages))
    {
        if (b.begin < from)
            continue;
        const std::size_t joined = cur ? cur->chars + (b.chars ? 2 : 0) + b.chars : b.chars;
        if (cur && (max_source_chars == 0 || joined <= max_source_chars))
        {
            cur->end = b.end;
            cur->chars = joined;
            continue;
        }
        if (cur)
            out.push_back(*cur);
        cur = summary_piece{b.begin, b.end, b.chars, max_source_chars != 0 && b.chars > max_source_chars};
    }
    if (cur)
        out.push_back(*cur);
    return out;
}

std::size_t source_chars(std::span<const context_message> messages)
{
    std::size_t chars = 0;
    for (const auto& m : messages)
    {
        const std::size_t n = message_text(m).size();
        chars += n + (n && chars ? 2 : 0);
    }
    return chars;
}

std::size_t portable_source_limit(std::int64_t summary_max_source_chars, std::int64_t context_window) noexcept
{
    std::size_t limit = 0;
    if (context_window > 0)
        limit = static_cast<std::size_t>(context_window) * 6 / 10 * 3;
    if (summary_max_source_chars > 0)
    {
        const auto set = static_cast<std::size_t>(summary_max_source_chars);
        limit = limit == 0 ? set : std::min(limit, set);
    }
    return limit;
}

struct covered_hasher::state
{
    detail::sha256 h;
};

covered_hasher::covered_hasher() : state_(std::make_unique<state>()) {}
covered_hasher::~covered_hasher() = default;

void covered_hasher::add(std::span<const context_message> messages)
{
    for (const auto& m : messages)
    {
        state_->h.update(m.entry_id);
        state_->h.update("\n");
        state_->h.update(message_text(m));
        state_->h.update("\n");
    }
    count_ += messages.size();
}

covered_identity covered_hasher::value() const
{
    detail::sha256 copy = state_->h;  // finishing consumes the state; the running one goes on
    return {count_, copy.hex()};
}

covered_identity identity_of(std::span<const context_message> covered)
{
    covered_hasher h;
    h.add(covered);
    return h.value();
}

}  // namespace agentctx::compaction
