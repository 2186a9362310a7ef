// Overflow classification with Pi 1.6's pattern lists (case-insensitive).
#include <agentctx/runtime/triggers.hpp>

#include <agentctx/compaction/overflow.hpp>

namespace agentctx::runtime {

bool is_context_overflow(const compaction::message& m, std::int64_t context_window)
{
    using compaction::stop_reason;
    if (m.stop_reason == stop_reason::error)
        return m.error_message && compaction::is_overflow_error_message(*m.error_message, m.provider);
    if (context_window <= 0 || !m.usage)
        return false;
    const std::int64_t input = m.usage->input + m.usage->cache_read;
    if (m.stop_reason == stop_reason::stop)
        return input > context_window;
    if (m.stop_reason == stop_reason::length)
        return m.usage->output == 0 &&
               static_cast<double>(input) >= 0.99 * static_cast<double>(context_window);
    return false;
}

}  // namespace agentctx::runtime
