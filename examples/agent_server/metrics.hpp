// The agent server's counters and their Prometheus text exposition (GET /metrics).
#pragma once

#include <agentctx/runtime/pg_store.hpp>

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

namespace agentctx::server {

/// The PostgreSQL store's counters (group commit, LISTEN reconnects, re-syncs) in the same format.
std::string render_pg_metrics(const runtime::pg_pool_stats& s);

/// Counters shared by every connection and session; thread-safe.
class server_metrics
{
public:
    /// Upper bounds (seconds) of the compaction duration histogram; +Inf is implicit.
    static constexpr std::array<double, 9> duration_buckets{0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120};

    void request(std::string_view route, unsigned status);
    /// `outcome`: committed, failed or cancelled.
    void compaction(std::string_view reason, std::string_view outcome, double seconds);
    /// One committed compaction's model calls and summed usage.
    void model_usage(std::int64_t calls, std::int64_t input, std::int64_t output, std::int64_t cache_read,
                     std::int64_t cache_write);
    void append();
    /// Required context could not be fitted (a budget_exceeded event).
    void budget_exceeded();
    void stream_opened();
    void stream_closed();

    /// The text format (version 0.0.4); `active_sessions` is sampled by the caller.
    std::string render(std::size_t active_sessions) const;

private:
    mutable std::mutex mu_;
    std::map<std::pair<std::string, unsigned>, std::uint64_t> requests_;
    std::map<std::pair<std::string, std::string>, std::uint64_t> compactions_;
    std::array<std::uint64_t, duration_buckets.size()> duration_counts_{};  // per bucket, not cumulative
    std::uint64_t duration_count_ = 0;
    double duration_sum_ = 0;
    std::int64_t model_calls_ = 0;
    std::int64_t tokens_input_ = 0, tokens_output_ = 0, tokens_cache_read_ = 0, tokens_cache_write_ = 0;
    std::uint64_t appends_ = 0;
    std::uint64_t budget_exceeded_ = 0;
    std::int64_t open_streams_ = 0;
};

/// The route label of a request path: ids become `{id}` (`/v1/sessions/{id}/entries`); unknown
/// paths are `<METHOD> other`, and a method outside the standard ones makes the label `other`.
std::string route_label(std::string_view method, std::string_view target);

}  // namespace agentctx::server
