// Replays a recorded session under a compaction policy and bills it with the cost model.
#pragma once

#include <agentctx/compaction/cost_model.hpp>
#include <agentctx/compaction/cut_point.hpp>
#include <agentctx/compaction/error.hpp>
#include <agentctx/compaction/session_log.hpp>
#include <agentctx/compaction/settings.hpp>
#include <agentctx/runtime/events.hpp>
#include <agentctx/runtime/host_config.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace agentctx::runtime {

/// A compaction policy under test.
struct simulate_policy
{
    std::string name;  ///< `none`, `pi`, `agentctx`, or a settings file's base name
    compaction::compaction_settings settings;
    compaction::compat_mode mode = compaction::compat_mode::agentctx;
    bool never_compact = false;  ///< `none`: no hook runs (the upper bound)
};

/// The built-in policies: `none`, `pi` (Pi 1.6.0's decisions) and `agentctx` (the runtime's
/// defaults, exactly as a host's session runs them: background compaction included). Anything
/// else: nullopt.
std::optional<simulate_policy> builtin_policy(std::string_view name);

struct simulate_options
{
    compaction::price_table prices = *compaction::builtin_price_table("anthropic");
    compaction::timing_model timing;
    std::int64_t system_tokens = 0;  ///< S: the system prompt and tools, a fixed first part
    std::int64_t context_window = 200000;
    std::int64_t max_output_tokens = 32000;
    /// The replay's session built from this host's configuration instead (its settings, model,
    /// redaction and summarizer: summarizer_for unless it sets make_summarizer; `agentctx probe
    /// --replay`); the policy's settings are then unused and the summary requests are not billed.
    std::optional<host_config> host;
    /// After each replayed entry: (entries replayed, entries to replay).
    std::function<void(std::size_t, std::size_t)> progress;
    /// Each event of the replay's session (a failed compaction's compaction_end_event among them).
    std::function<void(const session_event&)> on_event;
    /// When set, receives the replayed session's file (JSONL, in memory) at the end.
    std::string* replayed = nullptr;
};

/**
 * @brief Replays the active path of `log` under `policy`, from an empty session.
 *
 * Compactions, branch summaries and agentctx's own entries of the recording are dropped; every
 * other entry is appended in order (a context edit's or label's target follows its entry). Each
 * assistant message is one model request made just before it: its input is the context the
 * policy projects at that moment, billed through the prompt cache at the recorded time plus the
 * stall so far; its output is the recorded `usage.output` (else the estimate of its content).
 * The runtime's hooks run where a host calls them: after each assistant message, after a tool
 * batch that the run continues from, before each user prompt. The summarizer has the priced
 * provider's capabilities (`anthropic` or `openai` by the price table's name; another name is a
 * provider whose cache agentctx does not read by default), so the runtime decides between
 * cache-friendly and standalone summary requests and builds them. A standalone request is billed
 * without cache writes. A cache-friendly one is billed as the conversation's request at that
 * moment, through the prompt cache, then the instruction message (uncached after Anthropic's last
 * breakpoint; OpenAI caches it with the rest). Summaries come from the offline summarizer (a
 * cache-friendly request's from the standalone prompt over the same messages); each summary
 * request stalls the agent for its duration under `options.timing`; a background compaction's
 * only for what is still running when a check needs its result. The session is the one a host
 * builds (make_session_config) from the policy's settings: every setting the policy leaves
 * unset, background compaction included, is the runtime's default.
 */
compaction::result<compaction::policy_cost> simulate_session(
    const compaction::session_log& log,
    const simulate_policy& policy,
    const simulate_options& options,
    compaction::diagnostics& diag
);

}  // namespace agentctx::runtime
