// When a background compaction starts, and whether its prepared result may still be committed: pure
// decisions.
#pragma once

#include <agentctx/compaction/cut_point.hpp>
#include <agentctx/compaction/entry.hpp>
#include <agentctx/compaction/session_log.hpp>
#include <agentctx/compaction/settings.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace agentctx::runtime::detail {

/// Why a prepared (or running) background compaction wrote nothing.
enum class discard_reason
{
    branched,          ///< the session's path no longer starts with the planned path
    edited,            ///< a context_edit after the plan targets a covered entry
    restored,          ///< a compaction entry (a restored checkpoint, another node's) follows the plan
    settings_changed,  ///< the summary configuration digest changed
    over_threshold,    ///< the committed context would still be over the threshold
    superseded,        ///< a manual compaction replaced it
    cancelled,         ///< abort_compaction()
    closed,            ///< the session was closed
    failed,            ///< its summary failed or did not validate
};

/// `branched`, `edited`, `restored`, `settings_changed`, `over_threshold`, `superseded`, `cancelled`,
/// `closed`, `failed`.
const char* to_string(discard_reason r) noexcept;

/// One entry of a session path, as the commit rules see it.
struct path_step
{
    std::string id;
    compaction::entry_type type = compaction::entry_type::message;
    std::string target_id;  ///< a context_edit's target
};

/// The log's active path as path steps, from its index (no entry is read).
std::vector<path_step> path_steps(const compaction::session_log& log);

/// What a prepared compaction is bound to: the path it was planned on and the cut.
struct prepared_binding
{
    std::vector<std::string> planned_path;  ///< entry ids, root to the planned leaf
    std::size_t kept_index = 0;             ///< planned_path[kept_index] is the first kept entry
    std::string config_digest;              ///< the summary configuration it was written under
};

/// Whether the session still is what the prepared compaction summarized: the planned path is a
/// prefix of `now` (appends after it join the kept suffix), no compaction entry follows it, no
/// later context_edit targets a covered entry (before planned_path[kept_index]), and the digest
/// is unchanged. nullopt = it may be committed.
std::optional<discard_reason> check_binding(
    const prepared_binding& b, std::span<const path_step> now, std::string_view config_digest_now
);

/// What to do with a prepared compaction whose binding holds.
enum class size_verdict
{
    commit,                  ///< the committed context is at or under the threshold
    commit_then_foreground,  ///< over, but it shrinks the context: commit, then compact the remainder
    discard,                 ///< over and no smaller: `over_threshold`
};

/// `tokens_after` (the context once committed) against `threshold` (contextWindow − reserveTokens;
/// <= 0: no window, always `commit`) and `tokens_now`. `may_continue` = false (a commit when ready,
/// below the threshold) never asks for a foreground compaction.
size_verdict judge_size(
    std::int64_t tokens_now, std::int64_t tokens_after, std::int64_t threshold, bool may_continue
);

/// keepRecentTokens for a background cut planned at `tokens_now`: what the context gains until
/// `threshold` joins the kept suffix before the commit, so the cut keeps only the rest
/// (`keep_recent − (threshold − tokens_now)`, at least 0). Committed at the threshold, the kept
/// suffix then holds about keep_recent tokens, as a foreground compaction's.
std::int64_t background_keep(
    std::int64_t keep_recent, std::int64_t tokens_now, std::int64_t threshold
) noexcept;

/// What a trigger check does about compaction, given the tokens and the lifecycle.
enum class check_action
{
    none,              ///< under the start point, or background compaction off
    start_background,  ///< over startAt × threshold, under the threshold, nothing running or prepared
    foreground,        ///< over the threshold: commit a prepared result, await a running one, or compact now
};

/// How fast the context grows and how long a summary takes, as the session measured them.
struct growth_estimate
{
    double tokens_per_second = 0;
    double summary_seconds = 0;
};

/// How many times the last summary's duration a background compaction starts before the
/// threshold: room for a slower summary or faster turns before the agent would wait.
inline constexpr double start_lead = 2.0;

/// A summary faster than this (an offline or local summarizer, a replay) sets no hold: starting
/// at startAt then costs no wait, and the rate of a replay's compressed clock means nothing.
inline constexpr double min_measured_summary_seconds = 0.5;

/// The session's measurements for growth_estimate: context tokens at each check against a
/// monotonic clock (seconds), and each summary's duration. Pure: the caller supplies the time.
class growth_meter
{
public:
    /// A check saw `tokens` at `seconds`. A drop (a compaction) restarts the growth measurement.
    void observe(double seconds, std::int64_t tokens);
    /// A summary (foreground, or a background one until prepared) took `seconds`.
    void summary_took(double seconds);
    /// Both measured: a growth rate over at least one rising pair of checks, and a latest
    /// summary of at least min_measured_summary_seconds.
    std::optional<growth_estimate> estimate() const;

private:
    std::optional<std::pair<double, std::int64_t>> last_;
    double rate_ = 0;     ///< tokens per second, smoothed (the newest sample weighs half)
    double summary_ = 0;  ///< seconds of the latest summary
};

struct check_state
{
    bool background_enabled = false;
    bool running = false;   ///< a compaction (background or not) is running
    bool prepared = false;  ///< a background result is held
    /// With an estimate, the start waits (past startAt) until the threshold is within
    /// `start_lead` summaries at the measured growth: the later the plan, the less it keeps
    /// beyond keepRecentTokens once committed, and the fewer compactions follow.
    std::optional<growth_estimate> growth;
};

/// `tokens > threshold` → foreground (as should_compact); else background when enabled, idle,
/// `threshold` > 0, `tokens > start_at × threshold`, and (with `st.growth`) the threshold is at
/// most `tokens_per_second × summary_seconds × start_lead` tokens away.
check_action decide_check(
    std::int64_t tokens, std::int64_t threshold, double start_at, const check_state& st
);

/// `settings.background.enabled`, defaulting by mode: on in agentctx, off in Pi compatibility.
bool background_enabled(const compaction::compaction_settings& s, compaction::compat_mode mode) noexcept;

}  // namespace agentctx::runtime::detail
