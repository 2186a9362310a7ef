// The host's evidence store: the original entries a compaction is about to summarize (or a clearing to clip),
// kept before it does.
#pragma once

#include <agentctx/compaction/entry.hpp>
#include <agentctx/runtime/events.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace agentctx::runtime {

/// What the originals are about to become.
enum class evidence_kind
{
    summarized,  ///< a compaction replaces the range by its summary
    cleared,     ///< the tool-result clearing replaces these entries' content by placeholders
};

/// What a compaction is about to summarize, or a clearing to clip: every reference lives until
/// the callback's awaitable completes.
struct evidence_request
{
    compaction_reason reason;  ///< `threshold` for a clearing
    /// The range, complete and original (as stored, before any context edit or redaction), in
    /// path order: from the previous compaction's first kept entry (or the root) to the cut.
    /// For a clearing: the entries it replaces (not necessarily adjacent), in path order.
    const std::vector<compaction::entry_ptr>& entries;
    std::size_t from = 0;  ///< the range's first entry, 0-based on the active path
    std::string sha256;    ///< over the entries' lines as stored, in order, each followed by `\n`
    /// Emits when the compaction is cancelled or the session closes; an awaitable's
    /// `use_awaitable` operations are cancelled with it already.
    boost::asio::cancellation_slot cancellation;
    evidence_kind kind = evidence_kind::summarized;
};

/// The host's answer: the references under which it keeps the range, or a refusal.
struct evidence_decision
{
    bool refuse = false;
    std::string reason;                   ///< why it refused (safe text: it reaches logs and the outcome)
    std::vector<std::string> references;  ///< at least one when not refused
};

/**
 * @brief session_config::preserve_evidence: awaited on the session's strand after the
 * before_compact hooks and before any summary request. A refusal (or a throw, or no reference)
 * stops the compaction with `evidence_refused`: no model call, nothing written. Each reference
 * goes into the compaction's `details.agentctx.evidenceRefs` with the range's position, length and
 * digest, and from there into its portable checkpoint, where restore checks the range's digest.
 *
 * The tool-result clearing asks too (kind `cleared`), before it writes its batch of context
 * edits. A refusal writes nothing and emits clearing_refused_event; the check goes on, and those
 * entries are not cleared again (nor asked about) until a compaction commits or the history is
 * replaced. Each edit carries every reference in its `details.agentctx.evidenceRefs`, bound to its
 * target's position and digest (`count` 1); a checkpoint whose covered prefix holds the edit
 * carries them too, and restore checks them before the covered prefix's digest.
 */
using preserve_evidence_fn =
    std::function<boost::asio::awaitable<evidence_decision>(const evidence_request&)>;

}  // namespace agentctx::runtime
