// The host's evidence store: the original range a compaction is about to summarize, handed over before it is.
#include "clearing_evidence.hpp"
#include "compaction_run.hpp"

#include <agentctx/compaction/checkpoint.hpp>
#include <agentctx/compaction/limits.hpp>
#include <agentctx/runtime/error.hpp>

#include <boost/asio/this_coro.hpp>

#include <spdlog/spdlog.h>

#include <span>

namespace agentctx::runtime::detail {

namespace asio = boost::asio;
using namespace compaction;

namespace {

// Positions on the active path: the range runs from the previous compaction's first kept entry
// (or the root) up to the entry this compaction keeps from. nullopt: `first_kept` is not on it.
std::optional<std::pair<std::size_t, std::size_t>> summarized_range(
    const session_log& log,
    const std::vector<std::uint32_t>& path,
    const std::string& first_kept,
    diagnostics& diag
)
{
    std::optional<std::size_t> kept;
    for (std::size_t k = 0; k < path.size() && !kept; ++k)
        if (log.meta(path[k]).id == first_kept)
            kept = k;
    if (!kept)
        return std::nullopt;
    std::size_t from = 0;
    for (std::size_t k = *kept; k-- > 0;)
    {
        if (log.meta(path[k]).type != entry_type::compaction)
            continue;
        auto c = log.get(path[k], diag);
        for (std::size_t i = 0; c && i < k; ++i)
            if (log.meta(path[i]).id == (*c)->first_kept_entry_id)
                from = i;
        break;
    }
    return std::pair{from, *kept};
}

}  // namespace

std::string check_evidence_answer(const evidence_decision& d)
{
    if (d.refuse)
        return "the host's evidence store refused" + (d.reason.empty() ? std::string() : ": " + d.reason);
    if (d.references.empty())
        return "the host's evidence store returned no reference";
    if (d.references.size() > max_evidence_references)
        return "the host's evidence store returned " + std::to_string(d.references.size()) +
               " references, over " + std::to_string(max_evidence_references);
    for (const auto& r : d.references)
        if (r.empty() || r.size() > max_record_string_bytes)
            return "an evidence reference is empty or over " + std::to_string(max_record_string_bytes) +
                   " bytes";
    return {};
}

asio::awaitable<compaction_run::step<std::vector<evidence_reference>>> compaction_run::preserve_evidence(
    const std::string& first_kept
)
{
    std::vector<evidence_reference> out;
    if (!cx_.config().preserve_evidence)
        co_return out;
    diagnostics diag;
    const auto path = cx_.log().active_path();
    const auto range = summarized_range(cx_.log(), path, first_kept, diag);
    if (!range || range->first >= range->second)
        co_return out;  // nothing of the path is summarized: nothing to keep
    const auto span =
        std::span<const std::uint32_t>(path).subspan(range->first, range->second - range->first);
    std::vector<entry_ptr> entries;
    for (const auto i : span)
    {
        auto e = cx_.log().get(i, diag);
        if (!e)
            co_return failure{e.error(), diag.message};
        entries.push_back(std::move(*e));
    }
    auto digest = compute_source_revision(cx_.log(), span, diag);
    if (!digest)
        co_return failure{digest.error(), diag.message};
    auto cs = co_await asio::this_coro::cancellation_state;
    const evidence_request req{j_.request.reason, entries, range->first, digest->sha256, cs.slot()};
    evidence_decision d;
    try
    {
        d = co_await cx_.config().preserve_evidence(req);
    }
    catch (const std::exception& e)
    {
        d = {.refuse = true, .reason = std::string("it threw: ") + e.what()};
    }
    if (!still_wanted(cs.cancelled()))
        co_return failure{make_error_code(errc::cancelled), "cancelled"};
    if (auto why = check_evidence_answer(d); !why.empty())
    {
        cx_.logger().warn("compaction stopped: {}", why);
        co_return failure{make_error_code(errc::evidence_refused), std::move(why)};
    }
    for (auto& r : d.references)
        out.push_back({std::move(r), range->first, span.size(), digest->sha256});
    co_return out;
}

}  // namespace agentctx::runtime::detail
