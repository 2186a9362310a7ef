// The `compaction.clearToolResults` and `compaction.workingBudget` sections: checked per layer, read merged.
#pragma once

#include <agentctx/compaction/settings.hpp>

#include <boost/json/object.hpp>

namespace agentctx::compaction::detail {

/// Checks one layer's `compaction.clearToolResults` and `compaction.workingBudget`; errors name
/// the field and the layer (`name`).
result<void> check_clearing_layer(const boost::json::object& layer, const char* name, diagnostics& diag);

/// The merged sections (every layer passed check_clearing_layer) into `s`.
void read_clearing(const boost::json::object* compaction, compaction_settings& s);

}  // namespace agentctx::compaction::detail
