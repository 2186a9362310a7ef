// The recall gate's pure part: probes from the span a compaction summarizes (user rules, artifacts,
// open work, decisions), their match against a summary, and the verbatim part of user rules.
#pragma once

#include <agentctx/compaction/projection.hpp>
#include <agentctx/compaction/summary_prompt.hpp>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace agentctx::compaction {

/// What a probe asks the checkpoint to keep.
enum class probe_kind
{
    rule,       ///< a rule or preference the user set and has not revoked
    artifact,   ///< a file modified, a command whose last run failed, an identifier the user named
    open_work,  ///< the unfinished step, a tool call that never got its answer
    decision,   ///< a decision the assistant stated and did not reverse
};

/// `rule`, `artifact`, `open_work`, `decision`.
std::string_view to_string(probe_kind k) noexcept;

/// One thing a checkpoint of the span must keep, and the words that show it does.
struct recall_probe
{
    probe_kind kind = probe_kind::rule;
    std::string text;                ///< as said (redacted, at most probe_limits::max_text_chars)
    std::vector<std::string> terms;  ///< normalized content words (recall_terms of `text`)
    std::vector<std::string> names;  ///< paths, identifiers, commands: must appear as written
    bool negative = false;           ///< a prohibition: the matching line carries a negation too
    std::string entry_id;            ///< the entry that said it (empty: carried from an earlier checkpoint)
    std::string overrides;           ///< a rule replacing an earlier one: that rule's text
    bool operator==(const recall_probe&) const = default;
};

/// Bounds of the probes of one compaction (counts and characters) and of the verbatim part.
struct probe_limits
{
    std::size_t max_rules = 24;
    std::size_t max_artifacts = 12;
    std::size_t max_open_work = 4;
    std::size_t max_decisions = 8;
    std::size_t max_text_chars = 280;    ///< one probe's text (cut on a UTF-8 boundary, `…` added)
    std::size_t max_total_chars = 8000;  ///< all probe texts together
    std::size_t verbatim_chars = 4000;   ///< the `## User rules (verbatim)` part
    /// A probe is found on a summary line holding at least this share of its content words.
    double min_coverage = 0.6;
};

/// Extracts the probes of `span` (the messages a compaction summarizes, in order), after the
/// rules `carried` from earlier checkpoints (which a statement of the span may revoke). Rules
/// come first, then open work, decisions and artifacts, each kind in the order said. `scrub`
/// (the session's redactor) is applied to each probe's text before its words are taken.
std::vector<recall_probe> extract_probes(
    std::span<const context_message> span,
    std::span<const std::string> carried = {},
    const probe_limits& limits = {},
    const std::function<void(std::string&)>& scrub = {}
);

/// The normalized content words of `text`: lower-case ASCII words without stop words or rule
/// markers, light suffixes (`s`, `es`, `ing`, `ed`) removed, in order, without repeats.
std::vector<std::string> recall_terms(std::string_view text);

/// Whether `summary` keeps `probe`: every name appears (case-insensitive), and one line holds at
/// least `min_coverage` of its content words (and a negation, for a prohibition).
bool probe_found(const recall_probe& probe, std::string_view summary, double min_coverage = 0.6);

/// The probes of `probes` that `summary` does not keep, in order.
std::vector<recall_probe> missing_probes(
    std::span<const recall_probe> probes, std::string_view summary, double min_coverage = 0.6
);

/// The heading of the part of a checkpoint that carries user rules word for word.
inline constexpr std::string_view verbatim_rules_heading = "## User rules (verbatim)";

/// `summary` with the rules among `missing` added word for word under verbatim_rules_heading (into
/// the part when the summary has one, else a new part at its end), at most `limits.verbatim_chars`
/// of rule lines (a line `- …and N more rules` says what did not fit). Returns how many were added.
std::size_t add_verbatim_rules(
    std::string& summary, std::span<const recall_probe> missing, const probe_limits& limits = {}
);

/// The rules listed under verbatim_rules_heading in `summary` (the `- ` lines of that part).
std::vector<std::string> parse_verbatim_rules(std::string_view summary);

/// The rules a compaction entry carries forward: `details.agentctx.recall.rules`, then the
/// verbatim part of its summary, without repeats.
std::vector<std::string> carried_rules(const boost::json::value& details, std::string_view summary);

/// The follow-up request of the gate's repair: the same conversation (`original` and the draft it
/// answered, as one more exchange), then a message naming what the draft left out and asking for
/// the whole checkpoint again. Its prefix is the original request's, so a prompt cache serves it.
summary_prompt recall_followup_prompt(
    const summary_prompt& original, const std::string& draft, std::span<const recall_probe> missing
);

/// What the gate did in one compaction: `details.agentctx.evidence.recall` and compaction_end.
struct recall_counts
{
    std::size_t probes = 0;    ///< probes extracted (carried rules included)
    std::size_t found = 0;     ///< kept by the summary as the model first wrote it
    std::size_t repaired = 0;  ///< missing, then kept by the follow-up's reply
    std::size_t verbatim = 0;  ///< rules still missing, added word for word
    bool operator==(const recall_counts&) const = default;
};

/// `{"probes", "found", "repaired", "verbatim"}`.
boost::json::object to_json(const recall_counts& c);

}  // namespace agentctx::compaction
