// When to compact: overflow classification of a failed or suspicious response.
#pragma once

#include <agentctx/compaction/message.hpp>
#include <agentctx/compaction/overflow.hpp>

#include <cstdint>
#include <string_view>

namespace agentctx::runtime {

/// Pi's isContextOverflow: (1) an `error` stop whose message matches an overflow pattern and no
/// non-overflow pattern (rate limits, throttling); (2) silent overflow: `stop` with
/// input + cacheRead > window; (3) length-stop overflow: `length`, zero output and
/// input + cacheRead >= 0.99 window. Cases 2 and 3 need `context_window` > 0.
bool is_context_overflow(const compaction::message& m, std::int64_t context_window = 0);

/// The text test alone (case 1): compaction::is_overflow_error_message.
using compaction::is_overflow_error_message;

}  // namespace agentctx::runtime
