// Prometheus text exposition of the agent server's counters.
#include "metrics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace agentctx::server {

void histogram::observe(double value)
{
    for (std::size_t i = 0; i < bounds_.size(); ++i)
        if (value <= bounds_[i])
        {
            ++counts_[i];
            break;
        }
    ++count_;
    sum_ += value;
}

void histogram::render(std::string& out, std::string_view name) const
{
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < bounds_.size(); ++i)
    {
        cumulative += counts_[i];
        out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, bounds_[i], cumulative);
    }
    out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n", name, count_);
    out += fmt::format("{}_sum {}\n", name, sum_);
    out += fmt::format("{}_count {}\n", name, count_);
}

void server_metrics::request(std::string_view route, unsigned status)
{
    std::lock_guard lock(mu_);
    ++requests_[{std::string(route), status}];
}

void server_metrics::compaction(std::string_view reason, std::string_view outcome, double seconds)
{
    std::lock_guard lock(mu_);
    ++compactions_[{std::string(reason), std::string(outcome)}];
    durations_.observe(seconds);
}

void server_metrics::background(std::string_view outcome, std::string_view discard_reason)
{
    std::lock_guard lock(mu_);
    ++background_[{std::string(outcome), std::string(discard_reason)}];
}

void server_metrics::turn_check(double seconds)
{
    std::lock_guard lock(mu_);
    stalls_.observe(seconds);
}

void server_metrics::model_usage(
    std::int64_t calls,
    std::int64_t input,
    std::int64_t output,
    std::int64_t cache_read,
    std::int64_t cache_write
)
{
    std::lock_guard lock(mu_);
    model_calls_ += calls;
    tokens_input_ += input;
    tokens_output_ += output;
    tokens_cache_read_ += cache_read;
    tokens_cache_write_ += cache_write;
}

void server_metrics::recall(std::size_t probes, std::size_t found, std::size_t repaired, std::size_t verbatim)
{
    std::lock_guard lock(mu_);
    recall_[0] += probes;
    recall_[1] += found;
    recall_[2] += repaired;
    recall_[3] += verbatim;
}

void server_metrics::append()
{
    std::lock_guard lock(mu_);
    ++appends_;
}

void server_metrics::budget_exceeded()
{
    std::lock_guard lock(mu_);
    ++budget_exceeded_;
}

void server_metrics::reasoning_transformed(
    std::int64_t removed, std::int64_t allowed, const std::vector<std::string>& reasons
)
{
    // Reasons come from a provider: only the documented ones become labels.
    static constexpr std::string_view known[] = {
        "prefix_mismatch",
        "turn_boundary",
        "model_mismatch",
        "organization_mismatch",
        "end_user_mismatch",
        "prefix_binding_mismatch",
        "model_binding_mismatch",
        "organization_binding_mismatch",
        "end_user_binding_mismatch"};
    std::lock_guard lock(mu_);
    reasoning_removed_ += removed;
    reasoning_allowed_ += allowed;
    for (const auto& r : reasons)
        ++reasoning_reasons_
            [std::find(std::begin(known), std::end(known), r) == std::end(known) ? std::string("other") : r];
}

void server_metrics::clearing_deferred()
{
    std::lock_guard lock(mu_);
    ++clearing_deferred_;
}

void server_metrics::stream_opened()
{
    std::lock_guard lock(mu_);
    ++open_streams_;
}

void server_metrics::stream_closed()
{
    std::lock_guard lock(mu_);
    --open_streams_;
}

std::string render_pg_metrics(const runtime::pg_pool_stats& s)
{
    std::string out;
    auto counter = [&](const char* name, const char* help, std::uint64_t v) {
        out += fmt::format("# HELP {} {}\n# TYPE {} counter\n{} {}\n", name, help, name, name, v);
    };
    counter(
        "agentctx_pg_append_transactions_total",
        "Transactions that committed appends (group commit).",
        s.append_groups
    );
    counter("agentctx_pg_appends_total", "Appends those transactions carried.", s.appends);
    counter(
        "agentctx_pg_group_fallbacks_total",
        "Groups that failed whole and were retried one append at a time.",
        s.group_fallbacks
    );
    counter(
        "agentctx_pg_listen_reconnects_total",
        "LISTEN connections re-established after a failure.",
        s.listen_reconnects
    );
    counter(
        "agentctx_pg_full_resyncs_total",
        "Re-syncs of every open session after a LISTEN reconnect.",
        s.full_resyncs
    );
    counter("agentctx_pg_checks_total", "Periodic checks of the open sessions' stored counts.", s.checks);
    counter(
        "agentctx_pg_missed_changes_total",
        "Sessions a periodic check found ahead of every notification.",
        s.missed_changes
    );
    return out;
}

std::string server_metrics::render(std::size_t active_sessions) const
{
    std::lock_guard lock(mu_);
    std::string out;
    auto header = [&](const char* name, const char* type, const char* help) {
        out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
    };
    header("agentctx_http_requests_total", "counter", "HTTP requests by route and status.");
    for (const auto& [k, n] : requests_)
        out += fmt::format(
            "agentctx_http_requests_total{{route=\"{}\",status=\"{}\"}} {}\n", k.first, k.second, n
        );
    header("agentctx_compactions_total", "counter", "Compactions by reason and outcome.");
    for (const auto& [k, n] : compactions_)
        out += fmt::format(
            "agentctx_compactions_total{{reason=\"{}\",outcome=\"{}\"}} {}\n", k.first, k.second, n
        );
    header("agentctx_compaction_duration_seconds", "histogram", "Compaction duration, start to end.");
    durations_.render(out, "agentctx_compaction_duration_seconds");
    header(
        "agentctx_background_compactions_total",
        "counter",
        "Background compactions by step: prepared, committed, discarded (with the reason)."
    );
    for (const auto& [k, n] : background_)
        out += k.second.empty()
                   ? fmt::format("agentctx_background_compactions_total{{outcome=\"{}\"}} {}\n", k.first, n)
                   : fmt::format(
                         "agentctx_background_compactions_total{{outcome=\"{}\",reason=\"{}\"}} {}\n",
                         k.first,
                         k.second,
                         n
                     );
    header(
        "agentctx_turn_check_seconds",
        "histogram",
        "How long a turn-end or overflow check held the agent (its stall)."
    );
    stalls_.render(out, "agentctx_turn_check_seconds");
    header("agentctx_model_calls_total", "counter", "Summary model calls of committed compactions.");
    out += fmt::format("agentctx_model_calls_total {}\n", model_calls_);
    header(
        "agentctx_model_tokens_total", "counter", "Tokens of committed compactions' summary calls, by kind."
    );
    out += fmt::format("agentctx_model_tokens_total{{kind=\"input\"}} {}\n", tokens_input_);
    out += fmt::format("agentctx_model_tokens_total{{kind=\"output\"}} {}\n", tokens_output_);
    out += fmt::format("agentctx_model_tokens_total{{kind=\"cache_read\"}} {}\n", tokens_cache_read_);
    out += fmt::format("agentctx_model_tokens_total{{kind=\"cache_write\"}} {}\n", tokens_cache_write_);
    header(
        "agentctx_recall_probes_total",
        "counter",
        "Recall gate probes of committed compactions: extracted, found, repaired by the follow-up, carried "
        "verbatim."
    );
    const char* recall_kinds[] = {"probes", "found", "repaired", "verbatim"};
    for (int i = 0; i < 4; ++i)
        out += fmt::format("agentctx_recall_probes_total{{kind=\"{}\"}} {}\n", recall_kinds[i], recall_[i]);
    header("agentctx_appends_total", "counter", "Entries appended through the API.");
    out += fmt::format("agentctx_appends_total {}\n", appends_);
    header(
        "agentctx_budget_exceeded_total",
        "counter",
        "Required context that did not fit: a compaction that could not cut far enough, or a request view."
    );
    out += fmt::format("agentctx_budget_exceeded_total {}\n", budget_exceeded_);
    header(
        "agentctx_reasoning_blocks_total",
        "counter",
        "Replayed reasoning items or thinking blocks providers reported: removed, or allowed despite a "
        "failed check."
    );
    out += fmt::format("agentctx_reasoning_blocks_total{{action=\"removed\"}} {}\n", reasoning_removed_);
    out += fmt::format("agentctx_reasoning_blocks_total{{action=\"allowed\"}} {}\n", reasoning_allowed_);
    header(
        "agentctx_reasoning_transformations_total",
        "counter",
        "Providers' input_transformations entries by reason."
    );
    for (const auto& [reason, n] : reasoning_reasons_)
        out += fmt::format("agentctx_reasoning_transformations_total{{reason=\"{}\"}} {}\n", reason, n);
    header(
        "agentctx_clearing_deferred_total",
        "counter",
        "Tool-result clearings put off until the next compaction: they would drop more reasoning than they "
        "free."
    );
    out += fmt::format("agentctx_clearing_deferred_total {}\n", clearing_deferred_);
    header("agentctx_active_sessions", "gauge", "Sessions open now.");
    out += fmt::format("agentctx_active_sessions {}\n", active_sessions);
    header("agentctx_open_event_streams", "gauge", "Server-sent event streams open now.");
    out += fmt::format("agentctx_open_event_streams {}\n", open_streams_);
    return out;
}

std::string route_label(std::string_view method, std::string_view target)
{
    // Any token is a valid HTTP method: only the standard ones become labels, so that distinct
    // method names (sent before authentication) cannot grow the metrics.
    static constexpr std::string_view known[] = {
        "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"};
    if (std::find(std::begin(known), std::end(known), method) == std::end(known))
        return "other";
    target = target.substr(0, target.find('?'));
    std::vector<std::string_view> parts;
    for (std::size_t i = 0; i < target.size();)
    {
        const auto end = std::min(target.find('/', i), target.size());
        if (end > i)
            parts.push_back(target.substr(i, end - i));
        i = end + 1;
    }
    const std::string m(method);
    if (parts.size() == 1 && (parts[0] == "metrics" || parts[0] == "openapi.json"))
        return m + " /" + std::string(parts[0]);
    if (parts.size() < 2 || parts.size() > 5 || parts[0] != "v1" || parts[1] != "sessions")
        return m + " other";  // unknown paths never become label values
    if (parts.size() == 5)    // one stored entry; nothing else has five segments
        return parts[3] == "entries" ? m + " /v1/sessions/{id}/entries/{entryId}" : m + " other";
    if (parts.size() == 2)
        return m + " /v1/sessions";
    if (parts.size() == 3)
        return m + " /v1/sessions/{id}";
    const auto a = parts[3];
    static constexpr std::string_view actions[] = {
        "entries", "compact", "context", "events", "messages", "turn-end", "overflow", "view"};
    if (std::find(std::begin(actions), std::end(actions), a) == std::end(actions))
        return m + " other";
    return m + " /v1/sessions/{id}/" + std::string(a);
}

}  // namespace agentctx::server
