// Portable checkpoints at the session level: the identity and configuration digest a session's
// compactions record, and what export / restore report (session::async_export_checkpoint,
// session::async_restore_checkpoint).
#pragma once

#include <agentctx/compaction/checkpoint.hpp>

#include <boost/system/error_code.hpp>

#include <optional>
#include <string>

namespace agentctx::runtime {

struct session_config;

/// The summarizer identity a session records: its summarizer's name() split at the first `:`
/// (`openai:gpt-4.1` -> openai / gpt-4.1, `offline` -> offline / ""); a before_compact hook's
/// result is `hook` / "".
compaction::checkpoint_identity checkpoint_identity_of(const session_config& c, bool from_hook = false);

/// The summary-generation settings of a session: keepRecentTokens, the model's context window
/// and output limit (they set the summary's output budget) and the redaction settings.
compaction::summary_config summary_config_of(const session_config& c);

/// compaction::config_digest(summary_config_of(c)).
std::string config_digest_of(const session_config& c);

/// What an export or a restore did.
struct checkpoint_outcome
{
    /// Export: the record. Restore: the record that was restored (when it parsed).
    std::optional<compaction::checkpoint_record> record;
    std::string entry_id;  ///< restore: the appended compaction entry
    /// On a refusal: the named reason (`replaced`, `shortened`, `corrupt`, ...); `none` otherwise.
    compaction::checkpoint_reason reason = compaction::checkpoint_reason::none;
    std::string message;  ///< why, in a sentence (safe text)
};

using checkpoint_signature = void(boost::system::error_code, checkpoint_outcome);

/// The latest compaction on the active path as a checkpoint, against this session's identity and
/// configuration (session::async_checkpoint_status).
struct checkpoint_status
{
    /// nullopt: no compaction on the active path (the other fields but the last three are empty).
    std::optional<compaction::compaction_verification> latest;
    std::optional<compaction::recorded_checkpoint> recorded;  ///< its identity, digest and revision
    compaction::checkpoint_identity identity;                 ///< this session's
    std::string config_digest;                                ///< this session's
    /// A record of it would restore here: recorded, unchanged, same identity and configuration.
    bool restorable = false;
};

using checkpoint_status_signature = void(boost::system::error_code, checkpoint_status);

/// The status of the latest compaction of `log`'s active path for a session summarizing with
/// `identity` under `config_digest` (what session::async_checkpoint_status and the CLI report).
compaction::result<checkpoint_status> checkpoint_status_of(
    const compaction::session_log& log,
    const compaction::checkpoint_identity& identity,
    std::string config_digest,
    compaction::diagnostics& diag
);

}  // namespace agentctx::runtime
