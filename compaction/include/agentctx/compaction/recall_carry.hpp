// The verbatim rules part of a new checkpoint without the rules its span revoked.
#pragma once

#include <agentctx/compaction/recall.hpp>

#include <cstddef>
#include <span>
#include <string>

namespace agentctx::compaction {

/// Removes from the `## User rules (verbatim)` part of `summary` each line `- R` where R is a rule
/// some probe of `probes` overrides (a model that copies the previous summary's part would carry a
/// revoked rule on). Returns how many lines it removed.
std::size_t drop_revoked_rules(std::string& summary, std::span<const recall_probe> probes);

}  // namespace agentctx::compaction
