// Piecewise compaction as the host sees it: progress and finished events, the evidence
// every compaction ends with, and the host's persist_checkpoint callback.
#pragma once

#include <agentctx/compaction/message.hpp>
#include <agentctx/compaction/progress_record.hpp>
#include <agentctx/compaction/recall.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/json/object.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace agentctx::runtime {

enum class compaction_reason;

/// A piece was accepted (persisted): how many are done and how many remain. No source, no note.
struct compaction_progress_event
{
    std::size_t completed = 0;
    std::size_t remaining = 0;
};

/// How the portable history request was measured before it was sent.
struct preflight_evidence
{
    std::string method = "estimate";           ///< `count` (the provider's exact count) or `estimate`
    std::optional<std::int64_t> input_tokens;  ///< the count of the whole prefix as one request
    std::optional<bool> fits;                  ///< whether that request fits the summarizer's window
    std::string note;                          ///< why it was not counted, when it was not
};

/// How a compaction went, without conversation text or provider bodies.
struct compaction_evidence
{
    std::string method = "single";       ///< `single`, `piecewise` (or `native`)
    std::optional<std::string> failure;  ///< the safe failure category (an error code's name)
    std::int64_t elapsed_ms = 0;
    int calls = 0;                     ///< model calls of this pass, rejected replies included
    compaction::usage usage;           ///< summed over those calls, cache buckets included
    std::size_t pieces_total = 0;      ///< piecewise: pieces of the whole prefix
    std::size_t pieces_completed = 0;  ///< accepted so far (resumed ones included)
    std::size_t pieces_resumed = 0;    ///< taken from a progress record of an earlier pass
    std::string native_selection = "portable: no native compaction is configured";
    std::optional<preflight_evidence> preflight;  ///< when a portable history request was planned
    int counting_calls = 0;                       ///< exact-count requests (not model calls)
    bool turn_prefix_folded =
        false;  ///< a split turn's prefix over the bound was summarized with the history
    std::optional<std::string> progress_rejected;  ///< the reason an earlier record was refused
    std::optional<std::string> discarded;          ///< a background compaction that wrote nothing: why
    /// How the portable summary requests were shaped (agentctx mode; absent in `--compat pi` and
    /// without a portable request): `cache-friendly`, `standalone` (the setting or its default),
    /// `standalone: <why>` (cache-friendly was wanted but not possible), `fallback: <code>` (a
    /// cache-friendly reply was refused and one standalone request replaced it).
    std::optional<std::string> request;
    /// The recall gate's counts (agentctx mode, a portable summary, the gate not `off`).
    std::optional<compaction::recall_counts> recall;
};

/// `{"method", "failure"?, "elapsedMs", "calls", "usage": {input, output, cacheRead, cacheWrite,
/// cacheWrite1h?}, "pieces"?: {total, completed, resumed}, "nativeSelection", "progressRejected"?,
/// "preflight"?: {method, inputTokens?, fits?, note?}, "countingCalls"?, "turnPrefixFolded"?,
/// "discarded"?, "request"?, "recall"?: {probes, found, repaired, verbatim}}`.
boost::json::object to_json(const compaction_evidence& e);

/// Every compaction that was attempted ends with this event, committed or not.
struct compaction_finished_event
{
    compaction_reason reason;
    compaction_evidence evidence;
};

/// Where a persisted piece stands.
struct progress_position
{
    std::size_t completed = 0;
    std::size_t remaining = 0;
};

using persist_checkpoint_signature = void(boost::system::error_code, bool);
/// The host's copy of each completed piece, called on the session's strand before the next piece
/// starts. Complete with `(ec, true)` to accept; `false`, an error, or a throw stops the
/// compaction with `checkpoint_persist_failed` (an agentctx compaction or runtime error keeps its
/// code); `operation_aborted` (the handler's cancellation slot is the compaction's) rolls the
/// piece back and the compaction completes `cancelled`. Writes must be atomic: a refused or
/// cancelled piece cannot be undone by the library.
using persist_checkpoint_fn = std::function<
    void(const compaction::progress_record&, progress_position, boost::asio::any_completion_handler<persist_checkpoint_signature>)>;

}  // namespace agentctx::runtime
