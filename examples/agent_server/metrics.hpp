// The agent server's counters and their Prometheus text exposition (GET /metrics).
#pragma once

#include <agentctx/runtime/pg_store.hpp>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace agentctx::server {

/// The PostgreSQL store's counters (group commit, LISTEN reconnects, re-syncs) in the same format.
std::string render_pg_metrics(const runtime::pg_pool_stats& s);

/// A Prometheus histogram over fixed upper bounds (+Inf implicit); not thread-safe by itself.
class histogram
{
public:
    explicit histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size(), 0) {}
    void observe(double value);
    /// `name`_bucket / _sum / _count lines, buckets cumulative.
    void render(std::string& out, std::string_view name) const;

private:
    std::vector<double> bounds_;
    std::vector<std::uint64_t> counts_;  // per bucket, not cumulative
    std::uint64_t count_ = 0;
    double sum_ = 0;
};

/// Counters shared by every connection and session; thread-safe.
class server_metrics
{
public:
    void request(std::string_view route, unsigned status);
    /// `outcome`: committed, failed, cancelled or discarded (a background result written nowhere).
    void compaction(std::string_view reason, std::string_view outcome, double seconds);
    /// A background compaction's step: `prepared`, `committed` or `discarded` (with its reason).
    void background(std::string_view outcome, std::string_view discard_reason = {});
    /// How long a turn-end or overflow check held the agent: its stall.
    void turn_check(double seconds);
    /// One committed compaction's model calls and summed usage.
    void model_usage(
        std::int64_t calls,
        std::int64_t input,
        std::int64_t output,
        std::int64_t cache_read,
        std::int64_t cache_write
    );
    void append();
    /// A committed compaction's recall gate: probes, found at once, repaired by the follow-up,
    /// rules carried verbatim.
    void recall(std::size_t probes, std::size_t found, std::size_t repaired, std::size_t verbatim);
    /// Required context could not be fitted (a budget_exceeded event).
    void budget_exceeded();
    /// A provider's report on replayed reasoning (a reasoning_transformed event): blocks removed
    /// and allowed, and one count per entry by reason (an unknown reason counts as `other`).
    void reasoning_transformed(
        std::int64_t removed, std::int64_t allowed, const std::vector<std::string>& reasons
    );
    /// A clearing put off until the next compaction (a clearing_deferred event).
    void clearing_deferred();
    void stream_opened();
    void stream_closed();

    /// The text format (version 0.0.4); `active_sessions` is sampled by the caller.
    std::string render(std::size_t active_sessions) const;

private:
    mutable std::mutex mu_;
    std::map<std::pair<std::string, unsigned>, std::uint64_t> requests_;
    std::map<std::pair<std::string, std::string>, std::uint64_t> compactions_;
    histogram durations_{{0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120}};
    std::map<std::pair<std::string, std::string>, std::uint64_t> background_;
    histogram stalls_{{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}};
    std::int64_t model_calls_ = 0;
    std::int64_t tokens_input_ = 0, tokens_output_ = 0, tokens_cache_read_ = 0, tokens_cache_write_ = 0;
    std::uint64_t appends_ = 0;
    std::uint64_t recall_[4] = {0, 0, 0, 0};  ///< probes, found, repaired, verbatim
    std::uint64_t budget_exceeded_ = 0;
    std::int64_t reasoning_removed_ = 0, reasoning_allowed_ = 0;
    std::map<std::string, std::uint64_t> reasoning_reasons_;
    std::uint64_t clearing_deferred_ = 0;
    std::int64_t open_streams_ = 0;
};

/// The route label of a request path: ids become `{id}` (`/v1/sessions/{id}/entries`); unknown
/// paths are `<METHOD> other`, and a method outside the standard ones makes the label `other`.
std::string route_label(std::string_view method, std::string_view target);

}  // namespace agentctx::server
