// The host's evidence store: the original entries a compaction is about to summarize, kept before it does.
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

/// What a compaction is about to summarize: every reference lives until the callback's
/// awaitable completes.
struct evidence_request
{
    compaction_reason reason;
    /// The range, complete and original (as stored, before any context edit or redaction), in
    /// path order: from the previous compaction's first kept entry (or the root) to the cut.
    const std::vector<compaction::entry_ptr>& entries;
    std::size_t from = 0;  ///< the range's first entry, 0-based in the covered prefix
    std::string sha256;    ///< over the range's lines as stored, each followed by `\n`
    /// Emits when the compaction is cancelled; an awaitable's `use_awaitable` operations are
    /// cancelled with it already.
    boost::asio::cancellation_slot cancellation;
};

/// The host's answer: the references under which it keeps the range, or a refusal.
struct evidence_decision
{
    bool refuse = false;
    std::string reason;  ///< why it refused (safe text: it reaches logs and the outcome)
    std::vector<std::string> references;  ///< at least one when not refused
};

/**
 * @brief session_config::preserve_evidence: awaited on the session's strand after the
 * before_compact hooks and before any summary request. A refusal (or a throw, or no reference)
 * stops the compaction with `evidence_refused`: no model call, nothing written. Each reference
 * goes into the compaction's `details.agentctx.evidenceRefs` with the range's position, length and
 * digest, and from there into its portable checkpoint, where restore checks the range's digest.
 */
using preserve_evidence_fn = std::function<boost::asio::awaitable<evidence_decision>(const evidence_request&)>;

}  // namespace agentctx::runtime
