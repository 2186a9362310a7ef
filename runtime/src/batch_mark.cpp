// The batch mark: written on every entry of a multi-entry batch, read back from a log's tail.
#include "batch_mark.hpp"

#include <cstdint>

namespace agentctx::runtime::detail {

namespace {

struct mark
{
    std::int64_t index = 0;
    std::int64_t size = 0;
    std::string first;                  ///< the id of the batch's first entry, as the mark names it
    std::string id;                     ///< the marked entry's own id
    std::optional<std::string> parent;  ///< and its parent's
};

std::optional<mark> mark_at(const compaction::session_log& log, std::size_t position)
{
    compaction::diagnostics diag;
    const auto e = log.get(position, diag);
    if (!e)
        return std::nullopt;
    const auto* m = (*e)->raw.if_contains(batch_mark_key);
    const auto* o = m ? m->if_object() : nullptr;
    const auto* index = o ? o->if_contains("index") : nullptr;
    const auto* size = o ? o->if_contains("size") : nullptr;
    const auto* first = o ? o->if_contains("first") : nullptr;
    if (!index || !size || !first || !index->is_int64() || !size->is_int64() || !first->is_string())
        return std::nullopt;
    return mark{
        index->get_int64(), size->get_int64(), std::string(first->get_string()), (*e)->id, (*e)->parent_id};
}

}  // namespace

void mark_batch_entry(boost::json::object& raw, std::size_t index, std::size_t size, const std::string& first)
{
    if (size < 2)
        return;
    raw[batch_mark_key] = boost::json::object{{"index", index}, {"size", size}, {"first", first}};
}

std::optional<std::size_t> incomplete_trailing_batch(const compaction::session_log& log)
{
    if (log.size() == 0)
        return std::nullopt;
    const auto last = mark_at(log, log.size() - 1);
    if (!last || last->index < 0 || last->index + 1 >= last->size ||
        static_cast<std::uint64_t>(last->index) >= log.size())
        return std::nullopt;
    const std::size_t first = log.size() - 1 - static_cast<std::size_t>(last->index);
    std::optional<std::string> previous;
    for (std::size_t k = first; k < log.size(); ++k)
    {
        const auto m = mark_at(log, k);
        // The runtime's own batch: one size, consecutive indices, a parent chain, and every mark
        // naming the id the runtime gave the first entry (which no client knew before it existed).
        if (!m || m->size != last->size || m->index != static_cast<std::int64_t>(k - first) ||
            m->first != last->first || (k == first ? m->id != m->first : m->parent != previous))
            return std::nullopt;
        previous = m->id;
    }
    return first;
}

}  // namespace agentctx::runtime::detail
