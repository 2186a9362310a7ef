// The decisions of `agentctx advise`: what a Pi extension proposes at a turn end, from the
// library's clearing policy, working budget, background plan and compaction checks.
#pragma once

#include "session_tail.hpp"

#include <agentctx/compaction/cost_model.hpp>
#include <agentctx/compaction/prepare.hpp>
#include <agentctx/compaction/settings.hpp>

#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace agentctx::cli {

/// What the advisor knows about the model and the user's settings.
struct advisor_config
{
    compaction::compaction_settings settings;  ///< resolved agentctx settings (agentctx mode)
    std::int64_t context_window = 200000;
    std::int64_t model_max_tokens = 0;  ///< 0 = unknown
    /// The model's prompt-cache prices (`open`'s `cachePrices`): when set, a clearing waits until
    /// it pays for the cache break it causes (price_clearing). Unset: the clearing policy alone.
    std::optional<compaction::price_table> cache_prices;
};

/// A summary the extension was asked for: the cut it stands for and the path it was planned on.
struct summary_plan
{
    std::string id;
    bool foreground = false;
    bool awaited = false;  ///< a turn end was told to `wait` for it: its summary answer commits
    /// Committed through `compact` (Pi's compaction hook, which appends the compaction alone):
    /// the commit carries no clearing edits.
    bool from_hook = false;
    std::string reason;  ///< background, threshold, manual, overflow
    compaction::compaction_preparation prep;
    std::vector<std::string> planned_path;  ///< entry ids root to the planned leaf
    std::size_t kept_index = 0;             ///< planned_path[kept_index] = firstKeptEntryId
    std::optional<std::string> summary;     ///< handed back, validated
    boost::json::value usage;               ///< the summary call's usage as Pi reports it, or null
};

/// One advisor per Pi session. Every answer is a JSON object (the protocol of docs/pi-extension.md);
/// failures are `{"error": {"code", "message"}}` objects, never exceptions.
class advisor
{
public:
    advisor(std::string session_file, advisor_config config);

    /// `turn_end`: reads what Pi appended and answers `none`, `clear`, `summarize`, `wait` or `commit`.
    boost::json::object turn_end();
    /// `summary`: the text the model returned for plan `plan_id` (with Pi's usage or null).
    boost::json::object summary(
        const std::string& plan_id, const std::string& text, boost::json::value usage
    );
    /// `failed`: the summary call of plan `plan_id` failed; the plan is dropped.
    boost::json::object failed(const std::string& plan_id);
    /// `compact`: a compaction now (`/compact`, overflow, Pi's own threshold): a prepared summary
    /// is committed, else a foreground summary is requested.
    boost::json::object compact(const std::string& reason, const std::optional<std::string>& focus);
    /// `status`: the context's size, the threshold, the pending plan and the last compaction.
    boost::json::object status();

    const session_tail& tail() const noexcept { return tail_; }

private:
    struct view;  // the context as read now
    std::optional<boost::json::object> read(view& v);
    boost::json::object decide(const view& v);
    boost::json::object clear(const view& v);
    boost::json::object request_summary(
        const view& v, bool foreground, std::string reason, const std::optional<std::string>& focus
    );
    boost::json::object commit(const view& v);
    void clear_kept(const view& v, std::size_t kept, std::int64_t tokens_after, boost::json::object& out);
    std::optional<std::string> stale(const view& v) const;
    void add_status(boost::json::object& out, const view& v) const;

    session_tail tail_;
    advisor_config config_;
    std::optional<summary_plan> plan_;
    std::uint64_t next_plan_ = 1;
    std::optional<std::string> last_compaction_;  ///< the latest compaction draft's reason
    std::int64_t compactions_ = 0;
};

}  // namespace agentctx::cli
