// Redaction: every rule's shapes are caught, look-alikes are not, counts, allowlist, idempotence, settings.
#include <agentctx/compaction/redaction.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

using namespace agentctx::compaction;

namespace {

constexpr std::string_view upper_digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
constexpr std::string_view letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
constexpr std::string_view alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
constexpr std::string_view alnum_us = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_";
constexpr std::string_view b64url = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
constexpr std::string_view b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr std::string_view digits = "0123456789";

// Fake secrets are generated, never committed: a seeded pick from `alphabet`.
std::string fake(std::string_view alphabet, std::size_t n, std::uint64_t seed = 1)
{
    std::string s;
    std::uint64_t x = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    for (std::size_t i = 0; i < n; ++i)
    {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        s += alphabet[(x >> 33) % alphabet.size()];
    }
    return s;
}

std::string base64url(std::string_view in)
{
    std::string out;
    std::uint32_t buf = 0;
    int bits = 0;
    for (unsigned char c : in)
    {
        buf = (buf << 8) | c;
        bits += 8;
        while (bits >= 6)
        {
            bits -= 6;
            out += b64url[(buf >> bits) & 63];
        }
    }
    if (bits > 0)
        out += b64url[(buf << (6 - bits)) & 63];
    return out;
}

std::string fake_jwt(std::uint64_t seed = 3)
{
    return base64url(R"({"alg":"HS256","typ":"JWT"})") + "." +
           base64url(R"({"sub":"1234567890","name":"Test User","iat":1516239022})") + "." +
           fake(b64url, 43, seed);
}

std::string fake_pem(std::string_view kind, std::string_view newline = "\n")
{
    std::string s = "-----BEGIN " + std::string(kind) + "PRIVATE KEY-----";
    for (int i = 0; i < 5; ++i)
        s += std::string(newline) + fake(b64, 64, static_cast<std::uint64_t>(i + 10));
    s += std::string(newline) + fake(b64, 20, 99) + "==" + std::string(newline);
    return s + "-----END " + std::string(kind) + "PRIVATE KEY-----";
}

const redactor& default_redactor()
{
    static const redactor r = [] {
        diagnostics diag;
        return redactor::create(redaction_settings{}, diag).value();
    }();
    return r;
}

struct sample
{
    std::string rule;
    std::string secret;
};

std::vector<sample> positives()
{
    return {
        {"aws_access_key_id", "AKIA" + fake(upper_digits, 16, 1)},
        {"aws_access_key_id", "ASIA" + fake(upper_digits, 16, 2)},
        {"aws_access_key_id", "ABIA" + fake(upper_digits, 16, 3)},
        {"aws_access_key_id", "ACCA" + fake(upper_digits, 16, 4)},
        {"github_token", "ghp_" + fake(alnum, 36, 5)},
        {"github_token", "gho_" + fake(alnum, 36, 6)},
        {"github_token", "ghu_" + fake(alnum, 36, 7)},
        {"github_token", "ghs_" + fake(alnum, 36, 8)},
        {"github_token", "ghr_" + fake(alnum, 36, 9)},
        {"github_token", "github_pat_" + fake(alnum_us, 82, 10)},
        {"gitlab_token", "glpat-" + fake(b64url, 20, 11)},
        {"openai_api_key", "sk-" + fake(alnum, 48, 12)},
        {"openai_api_key", "sk-proj-" + fake(b64url, 100, 13)},
        {"anthropic_api_key", "sk-ant-api03-" + fake(b64url, 93, 14) + "AA"},
        {"anthropic_api_key", "sk-ant-admin01-" + fake(b64url, 60, 15)},
        {"slack_token",
         "xoxb-" + fake(digits, 12, 16) + "-" + fake(digits, 13, 17) + "-" + fake(alnum, 24, 18)},
        {"slack_token",
         "xoxp-" + fake(digits, 12, 19) + "-" + fake(digits, 12, 20) + "-" + fake(digits, 12, 21) + "-" +
             fake("0123456789abcdef", 32, 22)},
        {"slack_webhook",
         "https://hooks.slack.com/services/T" + fake(upper_digits, 8, 23) + "/B" +
             fake(upper_digits, 10, 24) + "/" + fake(alnum, 24, 25)},
        {"private_key", fake_pem("RSA ")},
        {"private_key", fake_pem("OPENSSH ")},
        {"private_key", fake_pem("")},
        {"private_key", fake_pem("EC ", "\\n")},  // JSON-escaped newlines
        {"jwt", fake_jwt()},
        {"google_api_key", "AIza" + fake(b64url, 35, 26)},
        {"stripe_key", "sk_live_" + fake(alnum, 24, 27)},
        {"stripe_key", "rk_live_" + fake(alnum, 99, 28)},
        {"stripe_key", "sk_test_" + fake(alnum, 32, 29)},
        {"npm_token", "npm_" + fake(alnum, 36, 30)},
        {"huggingface_token", "hf_" + fake(letters, 34, 31)},
    };
}

}  // namespace

TEST(redaction, each_rule_replaces_its_secret_with_the_marker)
{
    for (const auto& s : positives())
    {
        SCOPED_TRACE(s.rule + ": " + s.secret);
        const auto r = default_redactor().redact("before " + s.secret + " after");
        EXPECT_EQ(r.text, "before [REDACTED:" + s.rule + "] after");
        EXPECT_EQ(r.counts, (std::map<std::string, std::size_t>{{s.rule, 1}}));
    }
}

TEST(redaction, secrets_are_found_inside_quotes_json_and_urls)
{
    const auto gh = "ghp_" + fake(alnum, 36, 40);
    const auto aws = "AKIA" + fake(upper_digits, 16, 41);
    EXPECT_EQ(
        default_redactor().redact("{\"t\":\"" + gh + "\"}").text, "{\"t\":\"[REDACTED:github_token]\"}"
    );
    EXPECT_EQ(default_redactor().redact("'" + aws + "',").text, "'[REDACTED:aws_access_key_id]',");
    EXPECT_EQ(
        default_redactor().redact("https://x:" + gh + "@github.com/o/r.git").text,
        "https://x:[REDACTED:github_token]@github.com/o/r.git"
    );
    EXPECT_EQ(
        default_redactor().redact("line1\n" + aws + "\nline3").text,
        "line1\n[REDACTED:aws_access_key_id]\nline3"
    );
    // Inside a serialized JSON string a line break is the two bytes `\n`.
    EXPECT_EQ(
        default_redactor().redact("\"out\":\"line1\\n" + aws + "\\t" + gh + "\"").text,
        "\"out\":\"line1\\n[REDACTED:aws_access_key_id]\\t[REDACTED:github_token]\""
    );
}

TEST(redaction, look_alikes_are_not_redacted)
{
    const std::vector<std::string> negatives = {
        "AKIA" + fake(upper_digits, 15, 1),
        "AKIA" + fake(upper_digits, 17, 1),
        "AKIAexampleexample12",
        "xAKIA" + fake(upper_digits, 16, 1),
        "my_ghp_" + fake(alnum, 36, 5),
        "ghp_" + fake(alnum, 35, 5),
        "ghp_" + fake(alnum, 37, 5),
        "github_pat_" + fake(alnum_us, 81, 10),
        "glpat-" + fake(alnum, 19, 11),
        "we use sk-learn and sk-abc123 here",
        "sk-proj-short",
        "sk-" + std::string(48, 'x'),
        "sk-ant-short",
        "xoxb-not-a-token",
        "https://hooks.slack.com/services/your/webhook/url",
        "-----BEGIN PUBLIC KEY-----\n" + fake(b64, 64, 2) + "\n-----END PUBLIC KEY-----",
        "-----BEGIN CERTIFICATE-----\n" + fake(b64, 64, 3) + "\n-----END CERTIFICATE-----",
        "iVBORw0KGgoAAAANSUhEUgAA" + fake(b64, 400, 4) + "==",
        "data:application/json;base64," +
            base64url(R"({"name":"agentctx","version":"0.1.0","private":true})"),
        "eyJhbGciOiJIUzI1NiJ9.short",
        "AIza" + fake(alnum, 34, 26) + " end",
        "sk_live_" + fake(alnum, 23, 27),
        "pk_live_" + fake(alnum, 24, 27),
        "npm_" + fake(alnum, 35, 30),
        "npm_config_cache=/tmp/npm",
        "hf_" + fake(letters, 33, 31),
        "from huggingface_hub import hf_hub_download",
        "password = changeme",
        "password = hunter",
        "token: <your-token>",
        "api_key = ${OPENAI_API_KEY}",
        "password: ********************",
        "token = aaaaaaaaaaaaaaaaaaaaaaaa",
        "\"secret\": \"[REDACTED:generic_secret]\"",
        "550e8400-e29b-41d4-a716-446655440000",
        "commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
        "The token limit was reached, so the key point is to compact the conversation: keep going.",
        "\"max_tokens\": 4096, \"input_tokens\": 12345",
        "Authorization: Bearer <token>",
        "password_hash = bcrypt.hashpw(password.encode(), salt)",
        "secret_key = settings.SECRET_KEY",
        "token = process.env.GITHUB_TOKEN;",
        "API_KEY=YOUR_API_KEY_HERE",
        "api_key: your-api-key-goes-here",
        "password=$DB_PASSWORD_VALUE",
        "const token = tokenizer.encodeBatch(lines);",
    };
    for (const auto& n : negatives)
    {
        SCOPED_TRACE(n);
        const auto r = default_redactor().redact(n);
        EXPECT_EQ(r.text, n);
        EXPECT_TRUE(r.counts.empty());
    }
}

TEST(redaction, generic_secret_replaces_only_the_value)
{
    const auto v = fake(alnum, 32, 50);
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"api_key = " + v, "api_key = [REDACTED:generic_secret]"},
        {"API_KEY=" + v, "API_KEY=[REDACTED:generic_secret]"},
        {"export DB_PASSWORD=\"" + v + "\"", "export DB_PASSWORD=\"[REDACTED:generic_secret]\""},
        {"{\"client_secret\": \"" + v + "\"}", "{\"client_secret\": \"[REDACTED:generic_secret]\"}"},
        {"  passwd: '" + v + "'", "  passwd: '[REDACTED:generic_secret]'"},
        {"token := " + v + ";", "token := [REDACTED:generic_secret];"},
        {"{\\\"auth_token\\\":\\\"" + v + "\\\"}", "{\\\"auth_token\\\":\\\"[REDACTED:generic_secret]\\\"}"},
        {"Authorization: Bearer " + v, "Authorization: Bearer [REDACTED:generic_secret]"},
        {"password = CorrectHorseBatteryStaple", "password = [REDACTED:generic_secret]"},
    };
    for (const auto& [in, want] : cases)
    {
        SCOPED_TRACE(in);
        const auto r = default_redactor().redact(in);
        EXPECT_EQ(r.text, want);
        EXPECT_EQ(r.counts, (std::map<std::string, std::size_t>{{"generic_secret", 1}}));
    }
}

TEST(redaction, a_specific_rule_wins_over_the_generic_assignment)
{
    const auto gh = "ghp_" + fake(alnum, 36, 51);
    const auto r = default_redactor().redact("GITHUB_TOKEN=" + gh);
    EXPECT_EQ(r.text, "GITHUB_TOKEN=[REDACTED:github_token]");
    EXPECT_EQ(r.counts, (std::map<std::string, std::size_t>{{"github_token", 1}}));
}

TEST(redaction, counts_are_per_rule)
{
    const std::string text = "a " + ("AKIA" + fake(upper_digits, 16, 60)) + " b " +
                             ("ASIA" + fake(upper_digits, 16, 61)) + " c " + ("ghp_" + fake(alnum, 36, 62)) +
                             " d " + fake_jwt(63) + " e password=" + fake(alnum, 24, 64) + " f " +
                             ("AKIA" + fake(upper_digits, 16, 60));
    const auto r = default_redactor().redact(text);
    EXPECT_EQ(
        r.counts,
        (std::map<std::string, std::size_t>{
            {"aws_access_key_id", 3}, {"github_token", 1}, {"jwt", 1}, {"generic_secret", 1}})
    );
    EXPECT_EQ(
        r.text,
        "a [REDACTED:aws_access_key_id] b [REDACTED:aws_access_key_id] c [REDACTED:github_token] d "
        "[REDACTED:jwt] e password=[REDACTED:generic_secret] f [REDACTED:aws_access_key_id]"
    );
}

TEST(redaction, allowlist_exact_strings_and_patterns_suppress_matches)
{
    const auto keep = "AKIA" + fake(upper_digits, 16, 70);
    const auto drop = "AKIA" + fake(upper_digits, 16, 71);
    const auto test_key = "sk_test_" + fake(alnum, 24, 72);
    diagnostics diag;
    const auto r =
        redactor::create(redaction_settings{.allowlist = {keep, "re:sk_test_[A-Za-z0-9]+"}}, diag).value();
    const auto out = r.redact(keep + " " + drop + " " + test_key);
    EXPECT_EQ(out.text, keep + " [REDACTED:aws_access_key_id] " + test_key);
    EXPECT_EQ(out.counts, (std::map<std::string, std::size_t>{{"aws_access_key_id", 1}}));
}

TEST(redaction, redactors_made_from_different_settings_keep_their_own_rules_while_others_live)
{
    // Redactors of equal settings share one compiled state; each settings value keeps its own.
    const auto key = "AKIA" + fake(upper_digits, 16, 74);
    diagnostics diag;
    const auto plain = redactor::create(redaction_settings{}, diag).value();
    const auto allowing = redactor::create(redaction_settings{.allowlist = {key}}, diag).value();
    const auto prefix_only =
        redactor::create(redaction_settings{.allowlist = {key.substr(0, 10)}}, diag).value();
    const auto off = redactor::create(redaction_settings{.enabled = false, .allowlist = {}}, diag).value();
    const auto plain_again = redactor::create(redaction_settings{}, diag).value();
    EXPECT_EQ(plain.redact(key).text, "[REDACTED:aws_access_key_id]");
    EXPECT_EQ(allowing.redact(key).text, key);
    EXPECT_EQ(prefix_only.redact(key).text, "[REDACTED:aws_access_key_id]");
    EXPECT_EQ(off.redact(key).text, key);
    EXPECT_EQ(plain_again.redact(key).text, "[REDACTED:aws_access_key_id]");
    // An invalid allowlist is refused every time, never served from a valid one's state.
    EXPECT_FALSE(redactor::create(redaction_settings{.allowlist = {"re:(bad"}}, diag));
    EXPECT_FALSE(redactor::create(redaction_settings{.allowlist = {"re:(bad"}}, diag));
}

TEST(redaction, allowlist_pattern_must_match_the_whole_secret)
{
    const auto key = "AKIA" + fake(upper_digits, 16, 73);
    diagnostics diag;
    const auto r = redactor::create(redaction_settings{.allowlist = {"re:AKIA"}}, diag).value();
    EXPECT_EQ(r.redact(key).text, "[REDACTED:aws_access_key_id]");
}

TEST(redaction, redacting_twice_changes_nothing_more)
{
    std::string text;
    for (const auto& s : positives())
        text += "item " + s.rule + " = " + s.secret + "\n";
    text += "password = \"" + fake(alnum, 30, 80) + "\"\n";
    const auto once = default_redactor().redact(text);
    const auto twice = default_redactor().redact(once.text);
    EXPECT_EQ(twice.text, once.text);
    EXPECT_TRUE(twice.counts.empty());
    EXPECT_EQ(once.text.find("AKIA"), std::string::npos);
}

TEST(redaction, utf8_text_around_secrets_is_unchanged)
{
    const auto gh = "ghp_" + fake(alnum, 36, 90);
    const std::string before = "Schlüssel für München — «clé» 鍵 🔑: ";
    const std::string after = " ✓ naïve café 日本語";
    const auto r = default_redactor().redact(before + gh + after);
    EXPECT_EQ(r.text, before + "[REDACTED:github_token]" + after);
    // Invalid UTF-8 bytes pass through untouched as well.
    const std::string junk = "\xff\xfe\xc3";
    EXPECT_EQ(default_redactor().redact(junk + gh + junk).text, junk + "[REDACTED:github_token]" + junk);
}

TEST(redaction, private_key_block_is_replaced_whole_even_when_truncated)
{
    const auto pem = fake_pem("RSA ");
    const auto r = default_redactor().redact("$ cat id_rsa\n" + pem + "\n$ ls");
    EXPECT_EQ(r.text, "$ cat id_rsa\n[REDACTED:private_key]\n$ ls");
    const std::string truncated =
        "-----BEGIN OPENSSH PRIVATE KEY-----\n" + fake(b64, 64, 1) + "\n" + fake(b64, 64, 2);
    const auto t = default_redactor().redact("$ head -3 key\n" + truncated + "\nthe rest is cut");
    EXPECT_EQ(t.text, "$ head -3 key\n[REDACTED:private_key]\nthe rest is cut");
}

TEST(redaction, pathological_inputs_complete_with_correct_output)
{
    std::string a_eq;
    for (int i = 0; i < 512 * 1024; ++i)
        a_eq += "a=";
    EXPECT_EQ(default_redactor().redact(a_eq).text, a_eq);

    std::string key_eq;
    while (key_eq.size() < (1u << 20))
        key_eq += "key=";
    EXPECT_EQ(default_redactor().redact(key_eq).text, key_eq);

    std::string quotes = "password=";
    while (quotes.size() < (1u << 20))
        quotes += "\"'\\\"";
    EXPECT_EQ(default_redactor().redact(quotes).text, quotes);

    std::string headers;
    while (headers.size() < (1u << 20))
        headers += "-----BEGIN RSA PRIVATE KEY-----";
    const auto h = default_redactor().redact(headers);
    EXPECT_EQ(h.text.find("-----BEGIN"), std::string::npos);

    const auto aws = "AKIA" + fake(upper_digits, 16, 5);
    std::string many;
    std::string want;
    for (int i = 0; i < 20000; ++i)
    {
        many += aws + " ";
        want += "[REDACTED:aws_access_key_id] ";
    }
    const auto m = default_redactor().redact(many);
    EXPECT_EQ(m.text, want);
    EXPECT_EQ(m.counts.at("aws_access_key_id"), 20000u);

    std::string glued = "x";  // every AKIA follows a word byte: none is a key, each try is short
    while (glued.size() < (1u << 20))
        glued += "AKIA";
    EXPECT_EQ(default_redactor().redact(glued).text, glued);

    // Runs where every rule start follows a word byte, or where one long candidate holds many:
    // either nothing matches, or one span (no left boundary needed for the shape) takes the run.
    const std::vector<std::pair<std::string, std::string>> runs = {
        {"Xsk-ant-", "X[REDACTED:anthropic_api_key]"},
        {"Xglpat-", "X[REDACTED:gitlab_token]"},
        {"Xxoxb-1234567-", "X[REDACTED:slack_token]"},
        {"XeyJ-", ""},
        {"Xsk-proj-", ""},
        {"XAIza-", ""},
        {"Xsk_live_", ""},
        {"Xbearer ", ""},
        {"Xhf_", ""},
        {"Xsk-", ""}};
    for (const auto& [unit, want] : runs)
    {
        SCOPED_TRACE(unit);
        std::string run;
        while (run.size() < (1u << 20))
            run += unit;
        EXPECT_EQ(default_redactor().redact(run).text, want.empty() ? run : want);
    }

    std::string jwt_dots = "eyJ";
    while (jwt_dots.size() < (1u << 20))
        jwt_dots += "eyJaaaa.";
    EXPECT_EQ(default_redactor().redact(jwt_dots).text, jwt_dots);
}

TEST(redaction, prefilter_and_sequential_scans_agree)
{
    std::string text;
    for (const auto& s : positives())
        text += "log line with " + s.rule + ": " + s.secret + " and some code x = y + 1;\n";
    diagnostics diag;
    const auto seq = redactor::create(default_redaction_rules(), {}, diag, false).value();
    const auto a = default_redactor().redact(text);
    const auto b = seq.redact(text);
    EXPECT_EQ(a.text, b.text);
    EXPECT_EQ(a.counts, b.counts);
    EXPECT_FALSE(a.counts.empty());
}

TEST(redaction, one_redactor_serves_several_threads)
{
    std::string text;
    for (const auto& s : positives())
        text += s.rule + ": " + s.secret + "\n";
    const auto want = default_redactor().redact(text);
    const redactor copy = default_redactor();  // copies share the compiled rules
    std::vector<std::thread> threads;
    std::vector<int> same(4, 0);
    for (std::size_t t = 0; t < same.size(); ++t)
        threads.emplace_back([&, t] {
            for (int i = 0; i < 20; ++i)
                same[t] += copy.redact(text).text == want.text ? 1 : 0;
        });
    for (auto& th : threads)
        th.join();
    EXPECT_EQ(same, std::vector<int>(4, 20));
}

TEST(redaction, disabled_settings_leave_text_unchanged)
{
    diagnostics diag;
    const auto r = redactor::create(redaction_settings{.enabled = false}, diag).value();
    const auto gh = "ghp_" + fake(alnum, 36, 91);
    const auto out = r.redact(gh);
    EXPECT_EQ(out.text, gh);
    EXPECT_TRUE(out.counts.empty());
}

TEST(redaction, custom_rules_and_invalid_patterns)
{
    diagnostics diag;
    const auto r = redactor::create({{"ticket", R"(\bTICKET-([0-9]{6})\b)"}}, {}, diag).value();
    EXPECT_EQ(r.redact("see TICKET-123456.").text, "see TICKET-[REDACTED:ticket].");

    EXPECT_EQ(redactor::create({{"bad", "(unclosed"}}, {}, diag).error(), errc::invalid_settings);
    EXPECT_EQ(diag.field, "rules[0].pattern");
    EXPECT_EQ(redactor::create({{"two", "(a)(b)"}}, {}, diag).error(), errc::invalid_settings);
    EXPECT_EQ(
        redactor::create(redaction_settings{.allowlist = {"ok", "re:(bad"}}, diag).error(),
        errc::invalid_settings
    );
    EXPECT_EQ(diag.field, "redaction.allowlist[1]");
}

TEST(redaction, redactions_json_lists_only_non_zero_counts)
{
    const auto j = redactions_json({{"jwt", 2}, {"github_token", 0}, {"aws_access_key_id", 1}});
    EXPECT_EQ(boost::json::serialize(j), R"({"aws_access_key_id":1,"jwt":2})");
    EXPECT_TRUE(redactions_json({}).empty());
}

TEST(redaction, shannon_entropy_in_bits_per_byte)
{
    EXPECT_DOUBLE_EQ(shannon_entropy(""), 0.0);
    EXPECT_DOUBLE_EQ(shannon_entropy("aaaa"), 0.0);
    EXPECT_DOUBLE_EQ(shannon_entropy("abab"), 1.0);
    EXPECT_DOUBLE_EQ(shannon_entropy("abcdefgh"), 3.0);
}

TEST(redaction_settings, absent_section_gives_defaults)
{
    diagnostics diag;
    const auto s = parse_redaction_settings(boost::json::object{}, diag).value();
    EXPECT_TRUE(s.enabled);
    EXPECT_TRUE(s.allowlist.empty());
}

TEST(redaction_settings, reads_enabled_and_allowlist)
{
    diagnostics diag;
    const auto s = parse_redaction_settings(
                       boost::json::parse(
                           R"({"compaction":{},"redaction":{"enabled":false,"allowlist":["x","re:AKIA.*"]}})"
                       )
                           .as_object(),
                       diag
    )
                       .value();
    EXPECT_FALSE(s.enabled);
    EXPECT_EQ(s.allowlist, (std::vector<std::string>{"x", "re:AKIA.*"}));
}

TEST(redaction_settings, wrong_types_name_the_field)
{
    const std::vector<std::pair<std::string, std::string>> cases = {
        {R"({"redaction":true})", "redaction"},
        {R"({"redaction":{"enabled":"yes"}})", "redaction.enabled"},
        {R"({"redaction":{"allowlist":"x"}})", "redaction.allowlist"},
        {R"({"redaction":{"allowlist":["x",3]}})", "redaction.allowlist[1]"},
        {R"({"redaction":{"allowlist":[""]}})", "redaction.allowlist[0]"},
        {R"({"redaction":{"allowlist":["re:(unclosed"]}})", "redaction.allowlist[0]"},
    };
    for (const auto& [json, field] : cases)
    {
        SCOPED_TRACE(json);
        diagnostics diag;
        const auto r = parse_redaction_settings(boost::json::parse(json).as_object(), diag);
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error(), errc::invalid_settings);
        EXPECT_EQ(diag.field, field);
        EXPECT_NE(diag.message.find(field), std::string::npos);
    }
}

TEST(redaction, a_quoted_password_literal_is_redacted_whatever_its_entropy)
{
    const std::vector<std::pair<std::string, std::string>> cases = {
        {R"(password = "hunter22")", R"(password = "[REDACTED:generic_secret]")"},
        {R"(db_password: 'Tr0ub4dor&3')", R"(db_password: '[REDACTED:generic_secret]')"},
        {R"({"password": "correct horse battery staple"})", R"({"password": "[REDACTED:generic_secret]"})"},
        {R"(connect(user="app", passwd="S3cure!Pass"))",
         R"(connect(user="app", passwd="[REDACTED:generic_secret]"))"},
        {R"({\"passphrase\":\"open sesame\"})", R"({\"passphrase\":\"[REDACTED:generic_secret]\"})"},
    };
    for (const auto& [in, want] : cases)
    {
        SCOPED_TRACE(in);
        const auto r = default_redactor().redact(in);
        EXPECT_EQ(r.text, want);
        EXPECT_EQ(r.counts, (std::map<std::string, std::size_t>{{"generic_secret", 1}}));
        EXPECT_EQ(default_redactor().redact(r.text).text, r.text);  // a marker is not a password
    }
    const std::vector<std::string> placeholders = {
        R"(password = "")",
        R"(password = "abc")",
        R"(password = "${DB_PASSWORD}")",
        R"(password: "<password>")",
        R"(password = "********")",
        R"("password": "[REDACTED:generic_secret]")",
        R"(password = os.environ["DB_PASSWORD"])",
    };
    for (const auto& n : placeholders)
    {
        SCOPED_TRACE(n);
        EXPECT_EQ(default_redactor().redact(n).text, n);
    }
}
