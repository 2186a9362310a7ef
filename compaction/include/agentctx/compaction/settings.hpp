// Compaction settings (Pi 1.6): defaults, global < trusted project < programmatic overrides,
// merged recursively; per-model overrides of the two token budgets.
#pragma once

#include <agentctx/compaction/error.hpp>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace agentctx::compaction {

struct retry_settings
{
    bool enabled = true;
    std::int64_t max_retries = 3;
    std::int64_t base_delay_ms = 2000;
    std::int64_t max_agent_delay_ms = 60000;  ///< `retry.maxAgentDelayMs`: caps every backoff (Pi 1.6)
};

/// `compaction.background.commit`: when a prepared background compaction is committed.
enum class background_commit
{
    at_threshold,  ///< `"at-threshold"`: held until the threshold is crossed (the prompt cache stays warm)
    when_ready,    ///< `"when-ready"`: as soon as its summary is validated
};

/// `compaction.background` (agentctx only): summarize ahead of the threshold, off the agent's path.
struct background_settings
{
    /// nullopt = the mode's default: on in agentctx mode, off in `--compat pi`.
    std::optional<bool> enabled;
    /// Start once a turn ends above `startAt × (contextWindow − reserveTokens)`; in (0, 1].
    double start_at = 0.7;
    background_commit commit = background_commit::at_threshold;
};

/// `compaction.summaryRequest`: how a portable summary request is shaped (agentctx mode only).
enum class summary_request_mode
{
    cache_friendly,  ///< `"cache-friendly"`: the conversation's own request, then the checkpoint instructions
    standalone,      ///< `"standalone"`: a serialized transcript in a request of its own (Pi 1.6)
};

/// `compaction.recallGate` (agentctx only): what a validated summary's recall check does.
enum class recall_gate_mode
{
    off,     ///< `"off"`: no probes
    check,   ///< `"check"`: probes matched and recorded only
    repair,  ///< `"repair"`: a follow-up names what is missing; rules still missing are added verbatim
};

/// A size given either in tokens or as a fraction of a reference size (a threshold, a window).
struct token_amount
{
    std::int64_t tokens = 0;
    double fraction = 0;  ///< used when > 0: `fraction × reference`, rounded down
    std::int64_t of(std::int64_t reference) const noexcept
    {
        return fraction > 0 ? static_cast<std::int64_t>(fraction * static_cast<double>(reference)) : tokens;
    }
    bool operator==(const token_amount&) const = default;
};

/// `compaction.clearToolResults` (agentctx only; `--compat pi` never clears): before a summary
/// is needed, old tool results are replaced by placeholders through context_edit entries.
struct clear_tool_results_settings
{
    /// nullopt = the mode's default: on in agentctx mode, off in `--compat pi`.
    std::optional<bool> enabled;
    /// Clear once the context reaches this many tokens (a fraction: of the compaction threshold).
    token_amount trigger{0, 0.5};
    /// The most recent tool uses whose results are left alone.
    std::int64_t keep = 3;
    /// A clearing that would free fewer tokens is not done (each cache break pays for itself).
    std::int64_t clear_at_least = 5000;
    std::vector<std::string> exclude_tools;  ///< tools whose results are never cleared
    /// `clearToolInputs`: also clear the cleared calls' arguments, for every tool (true) or the
    /// tools named in `clear_input_tools`.
    bool clear_all_inputs = false;
    std::vector<std::string> clear_input_tools;
};

struct compaction_settings
{
    bool enabled = true;
    std::int64_t reserve_tokens = 16384;
    std::int64_t keep_recent_tokens = 20000;
    /// agentctx only (`compaction.keepRecentExchanges`): when the cut falls inside the current
    /// turn, at least this many of its most recent exchanges (assistant messages with their tool
    /// results) stay verbatim. Pi ignores the field; `--compat pi` does too.
    std::int64_t keep_recent_exchanges = 4;
    /// `compaction.summaryMaxSourceChars`: the most serialized source one portable summary
    /// request carries (0 = only the window's conservative bound); a longer prefix goes piecewise.
    std::int64_t summary_max_source_chars = 0;
    /// `compaction.summaryMaxCalls`: model calls one preparation pass may make (0 = no limit);
    /// a pass that reaches it keeps its completed pieces and a later pass continues.
    std::int64_t summary_max_calls = 0;
    background_settings background;
    /// nullopt = the default: cache-friendly when the summarizer sends to a hosted provider with a
    /// prompt cache (`anthropic`, `openai`) and the session's model; standalone otherwise, and
    /// always in `--compat pi`.
    std::optional<summary_request_mode> summary_request;
    clear_tool_results_settings clear_tool_results;
    /// `compaction.workingBudget` (agentctx only): the automatic threshold when it is below
    /// `contextWindow − reserveTokens` (a fraction: of the window). nullopt = the mode's default.
    std::optional<token_amount> working_budget;
    /// nullopt = the mode's default: `repair` in agentctx mode, `off` in `--compat pi`.
    std::optional<recall_gate_mode> recall_gate;
    retry_settings retry;
};

/// The layers settings come from, lowest precedence first. Each is the whole settings JSON
/// (`{"compaction": {...}, "retry": {...}}`), or absent.
struct settings_layers
{
    std::optional<boost::json::object> global;   ///< ~/.pi/agent/settings.json
    std::optional<boost::json::object> project;  ///< <cwd>/.pi/settings.json
    bool project_trusted = false;                ///< an untrusted project's file is ignored
    boost::json::object overrides;               ///< programmatic (SDK) overrides, highest
};

struct model_ref;  // projection.hpp

/// A model's `compaction.modelOverrides` key: `provider + "/" + model_id` (exact and
/// case-sensitive; the id may itself contain `/`).
std::string override_key(const model_ref& model);

/// Deep-merges objects at every depth: keys of `over` replace those of `base` (project wins per
/// leaf); nested objects merge recursively; arrays and scalars are replaced whole.
boost::json::object deep_merge(const boost::json::object& base, const boost::json::object& over);

/// The one layering rule of every settings section: the global layer, then a trusted project's
/// layer, then the overrides, deep-merged in that order (an untrusted project's layer is ignored).
boost::json::object merge_layers(const settings_layers& layers);

/// JavaScript's `String(v)` of a JSON value: `null`, `true`, `1.5`, the raw string,
/// `[object Object]`, array elements joined by `,` (a null element is empty).
std::string js_string(const boost::json::value& v);

/// Resolves the layers for the model whose override key is `model_key` (see override_key;
/// nullopt: no model, `modelOverrides` is ignored).
///
/// `reserveTokens` and `keepRecentTokens` each resolve independently as
/// `modelOverrides[key][field] ?? compaction[field] ?? default`; `enabled` is global only; `0` is
/// honoured. Pi's validation runs on the merged settings, per field (reserveTokens, then
/// keepRecentTokens), in this order: the ordinary `compaction.<field>` must be a non-negative
/// safe integer, the active model's override entry must be an object, its `<field>` must be a
/// non-negative safe integer. Each failure is `invalid_settings` with Pi's message in `diag`
/// (`Invalid compaction.reserveTokens setting: -1. Expected a non-negative safe integer.`).
/// Entries of other models are never inspected. Other fields (`enabled`, `retry.*`, the
/// section types) are checked per layer, and their errors name the field and the layer.
result<compaction_settings> resolve_settings(
    const settings_layers& layers,
    diagnostics& diag,
    const std::optional<std::string>& model_key = std::nullopt
);

}  // namespace agentctx::compaction
