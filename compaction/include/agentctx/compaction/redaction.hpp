// Secret redaction: replaces credentials in text with `[REDACTED:<rule>]`.
#pragma once

#include <agentctx/compaction/error.hpp>

#include <boost/json/object.hpp>

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace agentctx::compaction {

/// One detector. `pattern` is RE2 syntax (matched byte-wise, Latin-1 mode, so UTF-8 text around a
/// secret is left alone) with at most one capturing group: the group, or the whole match when there
/// is none, is the secret that is replaced. Several rules may share a name (alternative shapes).
struct redaction_rule
{
    std::string name;            ///< stable name, used in the marker and in the counts
    std::string pattern;         ///< RE2 pattern
    double min_entropy = 0;      ///< the secret's Shannon entropy (bits/byte) must reach this
    std::size_t min_length = 0;  ///< the secret must be at least this many bytes
    /// The match must not follow a letter, digit or `_` (a leading `\b`, checked outside RE2 so a
    /// pattern that starts with a literal keeps RE2's fast prefix scan: ~50x on typical text).
    /// A match rejected for it is retried one byte on, so use it only when matches are bounded in
    /// length or cannot contain the start of another match; otherwise the scan is not linear.
    bool word_start = false;
    /// For assignment values: skip what reads as code or a placeholder rather than a secret, i.e. a
    /// call (`f(`), a variable (`$NAME`), or a digit-free run of letters, `_`, `-`, `.` that is
    /// single-case or dotted (`YOUR_API_KEY_HERE`, `settings.SECRET_KEY`).
    bool skip_identifiers = false;
};

/// The built-in high-precision detectors, highest priority first. Names: private_key,
/// aws_access_key_id, github_token, gitlab_token, anthropic_api_key, openai_api_key, slack_token,
/// slack_webhook, jwt, google_api_key, stripe_key, npm_token, huggingface_token, generic_secret.
const std::vector<redaction_rule>& default_redaction_rules();

/// `{"redaction": {"enabled": bool, "allowlist": [string, ...]}}` of the settings JSON.
/// An allowlist entry is an exact secret, or `re:<RE2 pattern>` that must match the whole secret.
struct redaction_settings
{
    bool enabled = true;
    std::vector<std::string> allowlist;
};

/// Reads the `redaction` section of a settings object (absent section or fields: defaults).
/// A wrong type or an invalid allowlist pattern is `invalid_settings` naming the field
/// (`redaction.enabled`, `redaction.allowlist[2]`).
result<redaction_settings> parse_redaction_settings(const boost::json::object& settings, diagnostics& diag);

struct redaction_result
{
    std::string text;                           ///< the input with every secret replaced
    std::map<std::string, std::size_t> counts;  ///< replacements per rule name (only rules that fired)
};

/// Compiled rules plus allowlist. Built once; `redact` is const, thread-safe and linear in the
/// input (RE2 automata, no backtracking). Cheap to copy (shares the compiled state).
/// Where matches of two rules overlap, the rule earlier in the list wins and the other is dropped;
/// a secret on the allowlist, or below its rule's length or entropy, is left as it is.
class redactor
{
public:
    /// Compiles `rules` and the allowlist. An invalid pattern is `invalid_settings` naming it.
    /// With `prefilter`, one RE2::Set pass first finds which rules can match at all and only those
    /// are run; without it every rule scans the text (kept for the benchmark's comparison).
    static result<redactor> create(
        const std::vector<redaction_rule>& rules,
        const std::vector<std::string>& allowlist,
        diagnostics& diag,
        bool prefilter = true
    );
    /// The default rules with the settings' allowlist; a disabled redactor returns text unchanged.
    static result<redactor> create(const redaction_settings& settings, diagnostics& diag);

    redaction_result redact(std::string_view text) const;

    struct impl;

private:
    explicit redactor(std::shared_ptr<const impl> p) : impl_(std::move(p)) {}
    std::shared_ptr<const impl> impl_;
};

/// `details.agentctx.redactions`: `{"<rule>": count, ...}` with only non-zero counts.
boost::json::object redactions_json(const std::map<std::string, std::size_t>& counts);

/// Shannon entropy of the bytes of `s` in bits per byte (0 for an empty string).
double shannon_entropy(std::string_view s) noexcept;

}  // namespace agentctx::compaction
