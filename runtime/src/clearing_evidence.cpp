// The host's evidence store asked about a clearing's originals before any context edit is written.
#include "clearing_evidence.hpp"

#include "session_core.hpp"

#include <boost/asio/this_coro.hpp>

#include <span>

namespace agentctx::runtime::detail {

namespace asio = boost::asio;
using namespace compaction;

namespace {

// The targets on the active path, in path order: their positions and log indices.
struct located
{
    std::vector<std::size_t> positions;
    std::vector<std::uint32_t> indices;
};

located locate(const session_log& log, const std::vector<std::string>& target_ids)
{
    located out;
    const auto path = log.active_path();
    for (std::size_t k = 0; k < path.size(); ++k)
        for (const auto& id : target_ids)
            if (log.meta(path[k]).id == id)
            {
                out.positions.push_back(k);
                out.indices.push_back(path[k]);
                break;
            }
    return out;
}

}  // namespace

asio::awaitable<clearing_evidence> ask_clearing_evidence(
    std::shared_ptr<session_core> self, std::vector<std::string> target_ids
)
{
    session_core& s = *self;
    clearing_evidence out;
    diagnostics diag;
    const auto at = locate(s.log(), target_ids);
    if (at.indices.size() != target_ids.size())
    {
        out.failed = "a cleared entry is not on the active path";
        co_return out;
    }
    std::vector<entry_ptr> entries;
    std::vector<std::string> digests;  // each target's own line, in path order
    for (const auto i : at.indices)
    {
        auto e = s.log().get(i, diag);
        auto one = compute_source_revision(s.log(), std::span<const std::uint32_t>(&i, 1), diag);
        if (!e || !one)
        {
            out.failed = "the original of a cleared entry could not be read: " + diag.message;
            co_return out;
        }
        entries.push_back(std::move(*e));
        digests.push_back(std::move(one->sha256));
    }
    auto all = compute_source_revision(s.log(), at.indices, diag);
    if (!all)
    {
        out.failed = "the cleared entries could not be read: " + diag.message;
        co_return out;
    }
    auto cs = co_await asio::this_coro::cancellation_state;
    const evidence_request req{
        compaction_reason::threshold,
        entries,
        at.positions.front(),
        all->sha256,
        cs.slot(),
        evidence_kind::cleared};
    evidence_decision d;
    try
    {
        d = co_await s.config().preserve_evidence(req);
    }
    catch (const std::exception& e)
    {
        d = {.refuse = true, .reason = std::string("it threw: ") + e.what()};
    }
    if (s.closed() || cs.cancelled() != asio::cancellation_type::none)
    {
        out.cancelled = true;
        co_return out;
    }
    if (out.refused = check_evidence_answer(d); !out.refused.empty())
        co_return out;
    // Back in the order the caller gave the targets.
    for (const auto& id : target_ids)
    {
        auto& refs = out.references.emplace_back();
        for (std::size_t k = 0; k < at.indices.size(); ++k)
            if (s.log().meta(at.indices[k]).id == id)
                for (const auto& r : d.references)
                    refs.push_back({r, at.positions[k], 1, digests[k]});
    }
    co_return out;
}

}  // namespace agentctx::runtime::detail
