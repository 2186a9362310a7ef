// Context-overflow error text: overflow patterns, vetoed by non-overflow patterns.
#pragma once

#include <string_view>

namespace agentctx::compaction {

/// True when a provider error message says the prompt does not fit the context window and is not
/// a rate-limit / throttling message. Case-insensitive; Pi 1.6.0's pattern lists (Pi 1.6:
/// any HTTP 413; a bodyless `400/413 (no body)` only from `provider` "cerebras").
bool is_overflow_error_message(std::string_view error_message, std::string_view provider = {});

}  // namespace agentctx::compaction
