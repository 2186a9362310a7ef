// The background compaction's start and commit rules, without I/O (see background_policy.hpp).
#include "background_policy.hpp"

#include <algorithm>

namespace agentctx::runtime::detail {

using compaction::entry_type;

const char* to_string(discard_reason r) noexcept
{
    switch (r)
    {
    case discard_reason::branched:
        return "branched";
    case discard_reason::edited:
        return "edited";
    case discard_reason::restored:
        return "restored";
    case discard_reason::settings_changed:
        return "settings_changed";
    case discard_reason::over_threshold:
        return "over_threshold";
    case discard_reason::superseded:
        return "superseded";
    case discard_reason::cancelled:
        return "cancelled";
    case discard_reason::closed:
        return "closed";
    case discard_reason::failed:
        return "failed";
    }
    return "cancelled";
}

std::vector<path_step> path_steps(const compaction::session_log& log)
{
    const auto path = log.active_path();
    std::vector<path_step> out;
    out.reserve(path.size());
    for (const auto i : path)
    {
        const auto& m = log.meta(i);
        out.push_back({m.id, m.type, m.type == entry_type::context_edit ? m.target_id : std::string()});
    }
    return out;
}

std::optional<discard_reason> check_binding(
    const prepared_binding& b, std::span<const path_step> now, std::string_view config_digest_now
)
{
    const auto& planned = b.planned_path;
    if (now.size() < planned.size())
        return discard_reason::branched;
    for (std::size_t i = 0; i < planned.size(); ++i)
        if (now[i].id != planned[i])
            return discard_reason::branched;
    const auto covered_end =
        planned.begin() + static_cast<std::ptrdiff_t>(std::min(b.kept_index, planned.size()));
    const auto covers = [&](const std::string& id) {
        return std::find(planned.begin(), covered_end, id) != covered_end;
    };
    // Entries after the plan: appends join the kept suffix; an edit reaching back into the
    // covered range changes what the summary stands for.
    for (std::size_t i = planned.size(); i < now.size(); ++i)
    {
        if (now[i].type == entry_type::compaction)
            return discard_reason::restored;
        if (now[i].type == entry_type::context_edit && covers(now[i].target_id))
            return discard_reason::edited;
    }
    if (config_digest_now != b.config_digest)
        return discard_reason::settings_changed;
    return std::nullopt;
}

size_verdict judge_size(
    std::int64_t tokens_now, std::int64_t tokens_after, std::int64_t threshold, bool may_continue
)
{
    if (threshold <= 0 || tokens_after <= threshold)
        return size_verdict::commit;
    // Still over: committing is worth it only when it shrinks the context, so that the foreground
    // pass that follows summarizes the remainder (on top of this summary), not everything again.
    if (may_continue && tokens_after < tokens_now)
        return size_verdict::commit_then_foreground;
    return size_verdict::discard;
}

std::int64_t background_keep(
    std::int64_t keep_recent, std::int64_t tokens_now, std::int64_t threshold
) noexcept
{
    const auto headroom = std::max<std::int64_t>(0, threshold - tokens_now);
    return std::max<std::int64_t>(0, keep_recent - headroom);
}

check_action decide_check(std::int64_t tokens, std::int64_t threshold, double start_at, const check_state& st)
{
    if (tokens > threshold)
        return check_action::foreground;  // as should_compact (a window under the reserve included)
    if (threshold <= 0 || !st.background_enabled || st.running || st.prepared)
        return check_action::none;
    const auto start = static_cast<double>(threshold) * start_at;
    if (static_cast<double>(tokens) <= start)
        return check_action::none;
    if (st.growth && static_cast<double>(threshold - tokens) >
                         st.growth->tokens_per_second * st.growth->summary_seconds * start_lead)
        return check_action::none;  // the summary would be ready long before it is needed
    return check_action::start_background;
}

void growth_meter::observe(double seconds, std::int64_t tokens)
{
    if (last_ && tokens > last_->second && seconds > last_->first)
    {
        const double sample = static_cast<double>(tokens - last_->second) / (seconds - last_->first);
        rate_ = rate_ > 0 ? (rate_ + sample) / 2 : sample;
    }
    last_ = std::pair(seconds, tokens);
}

void growth_meter::summary_took(double seconds)
{
    summary_ = seconds;
}

std::optional<growth_estimate> growth_meter::estimate() const
{
    if (rate_ <= 0 || summary_ < min_measured_summary_seconds)
        return std::nullopt;
    return growth_estimate{rate_, summary_};
}

bool background_enabled(const compaction::compaction_settings& s, compaction::compat_mode mode) noexcept
{
    return s.enabled && s.background.enabled.value_or(mode == compaction::compat_mode::agentctx);
}

}  // namespace agentctx::runtime::detail
