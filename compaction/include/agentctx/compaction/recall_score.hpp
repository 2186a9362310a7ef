// Recorded compactions scored against the recall probes of the spans they covered (`agentctx probe`).
#pragma once

#include <agentctx/compaction/error.hpp>
#include <agentctx/compaction/recall.hpp>

#include <string>
#include <vector>

namespace agentctx::compaction {

class session_log;

/// One recorded compaction scored: the probes of the span it covered (its summarized history and
/// turn prefix, with the rules of the compaction before it) and whether its summary keeps each.
struct compaction_recall
{
    std::string entry_id;              ///< the compaction entry
    std::vector<recall_probe> probes;  ///< extract_probes of the covered span
    std::vector<bool> kept;            ///< per probe: found in the compaction's summary
};

/// Every compaction on the active path of `log`, root first; an entry that cannot be read is the
/// error, with `diag`.
result<std::vector<compaction_recall>> score_recorded_compactions(
    const session_log& log, diagnostics& diag, const probe_limits& limits = {}
);

}  // namespace agentctx::compaction
