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
    return {
        // A whole PEM block; the second shape catches a block whose END line was cut off.
        {"private_key",
         R"((-----BEGIN[ A-Z0-9_-]{0,64}PRIVATE KEY(?: BLOCK)?-----[\s\S]*?-----END[ A-Z0-9_-]{0,64}PRIVATE KEY(?: BLOCK)?-----))"},
        {"private_key",
         R"((-----BEGIN[ A-Z0-9_-]{0,64}PRIVATE KEY(?: BLOCK)?-----(?:(?:\s|\\[rn])*[A-Za-z0-9+/=]{16,})*))"},
        {"aws_access_key_id", R"(\b((?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16})\b)"},
        {"github_token", R"(\b((?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36})\b)"},
        {"github_token", R"(\b(github_pat_[A-Za-z0-9_]{82})\b)"},
        {"gitlab_token", R"(\b(glpat-[A-Za-z0-9_-]{20,}))"},
        {"anthropic_api_key", R"(\b(sk-ant-[A-Za-z0-9_-]{32,}))"},
        {"openai_api_key", R"(\b(sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}))", 3.0},
        {"openai_api_key", R"(\b(sk-[A-Za-z0-9]{32,})\b)", 3.0},
        {"slack_token", R"(\b(xox[baprs]-[0-9]{6,}-[A-Za-z0-9-]{10,}))"},
        {"slack_webhook", R"((https?://hooks\.slack\.com/services/T[A-Z0-9]{6,}/B[A-Z0-9]{6,}/[A-Za-z0-9]{16,}))"},
        {"jwt", R"(\b(eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{10,}))"},
        {"google_api_key", R"(\b(AIza[0-9A-Za-z_-]{35})(?:[^0-9A-Za-z_-]|$))"},
        {"stripe_key", R"(\b((?:sk|rk)_(?:live|test)_[A-Za-z0-9]{24,}))"},
        {"npm_token", R"(\b(npm_[A-Za-z0-9]{36})\b)"},
        {"huggingface_token", R"(\b(hf_[A-Za-z]{34,})\b)", 3.0},
        {"generic_secret",
         R"((?i)(?:key|secret|token|passw(?:or)?d|pwd|credential)[a-z0-9_.-]{0,24}(?:\\?["'])?[ \t]{0,8}(?::=|=>|=|:)[ \t]{0,8}(?:\\?["'`])?([A-Za-z0-9_+/=.~!@#$%^*-]+))",
         generic_min_entropy, generic_min_length},
        {"generic_secret", R"((?i)\bbearer[ \t]+([A-Za-z0-9_+/=.~-]+))", generic_min_entropy, generic_min_length},
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
