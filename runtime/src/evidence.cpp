// The evidence every compaction ends with, as JSON (details.agentctx.evidence, compaction_finished).
#include <agentctx/runtime/progress.hpp>

namespace agentctx::runtime {

boost::json::object to_json(const compaction_evidence& e)
{
    boost::json::object out{{"method", e.method}};
    if (e.failure)
        out["failure"] = *e.failure;
    out["elapsedMs"] = e.elapsed_ms;
    out["calls"] = e.calls;
    boost::json::object u{
        {"input", e.usage.input},
        {"output", e.usage.output},
        {"cacheRead", e.usage.cache_read},
        {"cacheWrite", e.usage.cache_write}};
    if (e.usage.cache_write_1h)
        u["cacheWrite1h"] = *e.usage.cache_write_1h;
    out["usage"] = std::move(u);
    if (e.pieces_total > 0)
        out["pieces"] = boost::json::object{
            {"total", e.pieces_total}, {"completed", e.pieces_completed}, {"resumed", e.pieces_resumed}};
    out["nativeSelection"] = e.native_selection;
    if (e.progress_rejected)
        out["progressRejected"] = *e.progress_rejected;
    if (e.preflight)
    {
        boost::json::object p{{"method", e.preflight->method}};
        if (e.preflight->input_tokens)
            p["inputTokens"] = *e.preflight->input_tokens;
        if (e.preflight->fits)
            p["fits"] = *e.preflight->fits;
        if (!e.preflight->note.empty())
            p["note"] = e.preflight->note;
        out["preflight"] = std::move(p);
    }
    if (e.counting_calls > 0)
        out["countingCalls"] = e.counting_calls;
    if (e.turn_prefix_folded)
        out["turnPrefixFolded"] = true;
    if (e.discarded)
        out["discarded"] = *e.discarded;
    if (e.request)
        out["request"] = *e.request;
    if (e.recall)
        out["recall"] = compaction::to_json(*e.recall);
    return out;
}

}  // namespace agentctx::runtime
