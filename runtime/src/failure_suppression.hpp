// When an automatic compaction may try again after a failure: keyed on the prefix it covers and the settings.
#pragma once

#include <agentctx/runtime/events.hpp>

#include <boost/system/error_code.hpp>

#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace agentctx::runtime::detail {

/// What a compaction would summarize, as checkpoints name it: the covered prefix's
/// sourceRevision (entry count and SHA-256) and the summary configuration's digest.
struct prefix_key
{
    std::size_t count = 0;
    std::string sha256;
    std::string config_digest;
    friend bool operator==(const prefix_key&, const prefix_key&) = default;
};

enum class failure_kind
{
    /// Cancelled or aborted (by the caller, a hook, close()): never pauses anything.
    aborted,
    /// A network error, a rate limit, an overloaded provider, a bad key: trying again later may
    /// succeed, so the pause lasts only until an entry is added.
    transient,
    /// The same prefix under the same settings fails the same way (an invalid, truncated or
    /// oversized summary, a result that does not reduce enough, a request the provider refuses):
    /// retrying it bills another call for the same answer.
    deterministic,
};

/// How a compaction's failure code is treated by the pause.
failure_kind classify_failure(const boost::system::error_code& ec) noexcept;

/**
 * @brief The pause of automatic compaction after a failure, decided without I/O.
 *
 * A deterministic failure pauses automatic compactions of the same prefix_key: the next automatic
 * check plans (no model call) and stops when it would cover the same prefix under the same
 * settings; a changed prefix (the cut moved, another branch, an edit) or changed settings try
 * again. A transient failure, or a deterministic one with no planned prefix (it failed while
 * planning), pauses until the session holds more entries. A manual compaction always tries; a
 * success, a reload from a shared store and a restored checkpoint end every pause.
 */
class failure_suppression
{
public:
    /// A compaction failed. `key`: the prefix it had planned (nullopt: none). Manual failures
    /// and aborted ones change nothing.
    void failed(
        compaction_reason reason,
        failure_kind kind,
        const std::optional<prefix_key>& key,
        std::size_t log_size
    );
    /// A compaction committed, or the session's history was replaced: every pause ends.
    void reset() noexcept;

    /// Before planning: an automatic check at this log size is paused (transient rule).
    bool paused(std::size_t log_size) const noexcept;
    /// After planning: a compaction of `reason` over `key` is paused (deterministic rule).
    bool paused(compaction_reason reason, const prefix_key& key) const noexcept;

    /// The host's evidence store refused the originals of a clearing: those entries are not
    /// cleared (nor asked about) again until reset(), so a refusing store is not asked every turn.
    void clearing_refused(const std::vector<std::string>& entry_ids);
    bool clearing_paused(const std::string& entry_id) const noexcept
    {
        return refused_clearing_.count(entry_id) > 0;
    }

private:
    std::set<std::string> refused_clearing_;  ///< entries whose clearing the evidence store refused
    std::optional<std::size_t> failed_at_;    ///< log size at a failure without a keyed pause
    std::optional<prefix_key> failed_key_;    ///< the prefix of the last deterministic failure
};

}  // namespace agentctx::runtime::detail
