// The built-in secret detectors (shapes after gitleaks' default rules) and the entropy measure.
#include <agentctx/compaction/redaction.hpp>

#include <array>
#include <cmath>

namespace agentctx::compaction {

namespace {

// Generic assignments (`api_key = v`, `"password": "v"`, `TOKEN: v`): only the value is the secret,
// and only when it looks random, so `password = hunter` and `token: <your-token>` stay.
constexpr double generic_min_entropy = 3.5;
constexpr std::size_t generic_min_length = 12;

std::vector<redaction_rule> make_rules()
{
    // No pattern starts with \b: `word_start` does that job, so RE2 can skip ahead to the literal.
    // It is set only where a rejected match cannot hide the start of the next one (bounded length,
    // or a run that cannot contain the rule's literal), so the scan stays linear; the distinctive
    // `glpat-`, `sk-ant-`, `sk-proj-`, `xoxb-`, `eyJ...eyJ` shapes need no left boundary.
    return {
        // A whole PEM block; the second shape catches a block whose END line was cut off.
        {.name = "private_key",
         .pattern =
             R"((-----BEGIN[ A-Z0-9_-]{0,64}PRIVATE KEY(?: BLOCK)?-----[\s\S]*?-----END[ A-Z0-9_-]{0,64}PRIVATE KEY(?: BLOCK)?-----))"},
        {.name = "private_key",
         .pattern =
             R"((-----BEGIN[ A-Z0-9_-]{0,64}PRIVATE KEY(?: BLOCK)?-----(?:(?:\s|\\[rn])*[A-Za-z0-9+/=]{16,})*))"},
        {.name = "aws_access_key_id",
         .pattern = R"((A(?:KIA|SIA|BIA|CCA)[A-Z0-9]{16})\b)",
         .word_start = true},
        {.name = "github_token", .pattern = R"((gh[pousr]_[A-Za-z0-9]{36})\b)", .word_start = true},
        {.name = "github_token", .pattern = R"((github_pat_[A-Za-z0-9_]{82})\b)", .word_start = true},
        {.name = "gitlab_token", .pattern = R"((glpat-[A-Za-z0-9_-]{20,}))"},
        {.name = "anthropic_api_key", .pattern = R"((sk-ant-[A-Za-z0-9_-]{32,}))"},
        {.name = "openai_api_key",
         .pattern = R"((sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}))",
         .min_entropy = 3.0},
        {.name = "openai_api_key",
         .pattern = R"((sk-[A-Za-z0-9]{32,})\b)",
         .min_entropy = 3.0,
         .word_start = true},
        {.name = "slack_token", .pattern = R"((xox[baprs]-[0-9]{6,}-[A-Za-z0-9-]{10,}))"},
        {.name = "slack_webhook",
         .pattern = R"((https?://hooks\.slack\.com/services/T[A-Z0-9]{6,}/B[A-Z0-9]{6,}/[A-Za-z0-9]{16,}))"},
        {.name = "jwt", .pattern = R"((eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{10,}))"},
        {.name = "google_api_key",
         .pattern = R"((AIza[0-9A-Za-z_-]{35})(?:[^0-9A-Za-z_-]|$))",
         .word_start = true},
        {.name = "stripe_key", .pattern = R"((sk_(?:live|test)_[A-Za-z0-9]{24,}))", .word_start = true},
        {.name = "stripe_key", .pattern = R"((rk_(?:live|test)_[A-Za-z0-9]{24,}))", .word_start = true},
        {.name = "npm_token", .pattern = R"((npm_[A-Za-z0-9]{36})\b)", .word_start = true},
        {.name = "huggingface_token",
         .pattern = R"((hf_[A-Za-z]{34,})\b)",
         .min_entropy = 3.0,
         .word_start = true},
        {.name = "generic_secret",
         .pattern =
             R"((?i)(?:key|secret|token|passw(?:or)?d|pwd|credential)[a-z0-9_.-]{0,24}(?:\\?["'])?[ \t]{0,8}(?::=|=>|=|:)[ \t]{0,8}(?:\\?["'`])?([A-Za-z0-9_+/=.~!@#$%^*-]{12,}))",
         .min_entropy = generic_min_entropy,
         .min_length = generic_min_length,
         .skip_identifiers = true},
        // A password written as a quoted literal is one whatever its entropy or alphabet
        // (`password = "hunter22"`, `"db_password": "Tr0ub4dor&3"`); a placeholder (`"${PW}"`,
        // `"<password>"`, `"****"`, an earlier marker) is not.
        {.name = "generic_secret",
         .pattern =
             R"((?i)(?:passw(?:or)?d|passphrase|pwd)[a-z0-9_.-]{0,24}(?:\\?["'])?[ \t]{0,8}(?::=|=>|=|:)[ \t]{0,8}\\?["']([^"'\\\s$<*\[{][^"'\\\r\n]{5,127})\\?["'])",
         .min_length = 6},
        {.name = "generic_secret",
         .pattern = R"((?i)bearer[ \t]+([A-Za-z0-9_+/=.~-]{12,}))",
         .min_entropy = generic_min_entropy,
         .min_length = generic_min_length,
         .word_start = true},
    };
}

}  // namespace

const std::vector<redaction_rule>& default_redaction_rules()
{
    static const std::vector<redaction_rule> rules = make_rules();
    return rules;
}

double shannon_entropy(std::string_view s) noexcept
{
    if (s.empty())
        return 0;
    std::array<std::size_t, 256> freq{};
    for (unsigned char c : s)
        ++freq[c];
    const double n = static_cast<double>(s.size());
    double h = 0;
    for (std::size_t f : freq)
    {
        if (f == 0)
            continue;
        const double p = static_cast<double>(f) / n;
        h -= p * std::log2(p);
    }
    return h;
}

}  // namespace agentctx::compaction
