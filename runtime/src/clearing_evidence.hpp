// The host's evidence store asked about the originals a tool-result clearing is about to replace.
#pragma once

#include <agentctx/compaction/checkpoint.hpp>
#include <agentctx/runtime/preserved_evidence.hpp>

#include <boost/asio/awaitable.hpp>

#include <memory>
#include <string>
#include <vector>

namespace agentctx::runtime::detail {

class session_core;

/// Why the host's answer cannot be recorded (a refusal, no reference, too many or bad ones), or
/// empty (preserve_evidence.cpp).
std::string check_evidence_answer(const evidence_decision& d);

/// What the host's evidence store answered for a clearing.
struct clearing_evidence
{
    bool cancelled = false;  ///< the session closed meanwhile: nothing is recorded
    std::string refused;     ///< the store refused, threw or returned no usable reference
    std::string failed;      ///< the originals could not be read: nothing asked, nothing paused
    /// Per target (in the order given): every reference, bound to that entry's position on the
    /// active path and the digest of its stored line.
    std::vector<std::vector<compaction::evidence_reference>> references;
};

/**
 * @brief On the strand: hands the complete original entries `target_ids` names (as stored, in
 * path order, kind `cleared`) to session_config::preserve_evidence and awaits its answer. The
 * coroutine's cancellation (close()) reaches the host through the request's slot.
 */
boost::asio::awaitable<clearing_evidence> ask_clearing_evidence(
    std::shared_ptr<session_core> self, std::vector<std::string> target_ids
);

}  // namespace agentctx::runtime::detail
