// Pi's per-message token estimate: UTF-16 characters / 4, rounded up.
#pragma once

#include <agentctx/compaction/message.hpp>

#include <cstddef>

namespace agentctx::compaction {

/// Characters (UTF-16 units) that the estimate counts for a message.
std::size_t estimate_chars(const message& m);

/// `ceil(estimate_chars(m) / 4)`.
std::size_t estimate_tokens(const message& m);

}  // namespace agentctx::compaction
