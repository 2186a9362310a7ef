// Context-overflow error text (spec §10.2): overflow patterns, vetoed by non-overflow patterns.
#pragma once

#include <string_view>

namespace agentctx::compaction {

/// True when a provider error message says the prompt does not fit the context window and is not
/// a rate-limit / throttling message. Case-insensitive; Pi 0.73.1's pattern lists.
bool is_overflow_error_message(std::string_view error_message);

}  // namespace agentctx::compaction
