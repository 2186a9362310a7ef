// The vector string skipper and the loop for uncaptured values: they may only decide faster, never
// differently. Each case scans a line with and without them and wants the same verdict, message
// and captured fields.
#include "json/line_indexer.hpp"
#include "json/string_skip.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace detail = agentctx::compaction::detail;
using agentctx::compaction::errc;

namespace {

struct verdict
{
    errc code;
    std::string message;
    std::string type, id;
};

verdict scan(const std::string& line, detail::string_skip_width mode)
{
    detail::line_fields f;
    verdict v;
    v.code = detail::line_indexer::scan(line, 64, f, v.message, mode);
    v.type = f.type;
    v.id = f.id;
    return v;
}

// The line with `content` as the body of an uncaptured string value, `pad` plain bytes before it
// (moving it across the 64-byte blocks), and fields after it.
std::string line_with(const std::string& content, std::size_t pad = 0)
{
    return R"({"type":"message","x":")" + std::string(pad, 'p') + content + R"(","id":"a1","n":[1,"two"]})";
}

// Both scans must agree; returns the verdict for further checks.
verdict same_both_ways(const std::string& line, detail::string_skip_width width)
{
    const verdict v = scan(line, width);
    const verdict s = scan(line, detail::string_skip_width::scalar);
    EXPECT_EQ(v.code, s.code) << "line: " << line;
    EXPECT_EQ(v.message, s.message) << "line: " << line;
    EXPECT_EQ(v.type, s.type) << "line: " << line;
    EXPECT_EQ(v.id, s.id) << "line: " << line;
    return v;
}

// Pieces that exercise every way out of the vector loop, valid and invalid.
const std::vector<std::string> pieces = {
    "a",
    "plain text ",
    "\\n",
    "\\\"",
    "\\\\",
    "\\/",
    "\\b\\f\\r\\t",
    "\\u0041",
    "\\u001b[31m",
    "\\ud83d\\ude80",
    "\\ud83d",
    "\\ude80",
    "\\u12",
    "\\x",
    "\\",
    "\\\\\\",
    "\"",
    "\x01",
    "\n",
    "\t",
    "\x7f",
    "\xc3\xa9",
    "\xe2\x94\x80",
    "\xf0\x9f\x9a\x80",
    "\xc3",
    "\xe2\x94",
    "\xf0\x9f\x9a",
    "\x80",
    "\xbf\xbf",
    "\xc0\xaf",
    "\xe0\x80\xaf",
    "\xed\xa0\x80",
    "\xf4\x90\x80\x80",
    "\xf5\x80\x80\x80",
    "\xff",
    "\xef\xbb\xbf",
};

// Each test runs for every vector width; a width this machine lacks is skipped and says so.
class string_skip : public ::testing::TestWithParam<detail::string_skip_width>
{
protected:
    void SetUp() override
    {
        if (!detail::has_string_skip_width(GetParam()))
            GTEST_SKIP() << "this machine lacks " << name(GetParam()) << ": the scalar scanner runs alone";
    }

    static const char* name(detail::string_skip_width w)
    {
        return w == detail::string_skip_width::avx2 ? "AVX2" : "AVX-512";
    }

    detail::string_skip skip(const std::string& text, std::size_t slack = 0) const
    {
        return detail::skip_string(text.data(), text.data() + text.size() + slack, GetParam());
    }

    verdict same_both_ways(const std::string& line) const { return ::same_both_ways(line, GetParam()); }
};

}  // namespace

INSTANTIATE_TEST_SUITE_P(
    widths,
    string_skip,
    ::testing::Values(detail::string_skip_width::avx2, detail::string_skip_width::avx512),
    [](const auto& info) { return info.param == detail::string_skip_width::avx2 ? "avx2" : "avx512"; }
);

TEST_P(string_skip, plain_and_escaped_text_is_skipped_to_the_closing_quote)
{
    const std::string text =
        std::string(200, 'a') + "\\n" + std::string(100, 'b') + "\\\"" + std::string(70, 'c') + "\"";
    const std::string padded = text + std::string(40, ' ');
    const auto s = skip(padded);
    ASSERT_TRUE(s.closed);
    EXPECT_EQ(s.at, padded.data() + text.size());
}

TEST_P(string_skip, valid_utf8_stays_in_the_vector_loop)
{
    std::string text;
    for (int i = 0; i < 40; ++i)
        text += "r\xc3\xa9sum\xc3\xa9 \xf0\x9f\x9a\x80 \xe2\x94\x80\xe2\x94\x80 ";
    text += "\"";
    const std::string padded = text + std::string(64, ' ');
    const auto s = skip(padded);
    ASSERT_TRUE(s.closed);
    EXPECT_EQ(s.at, padded.data() + text.size());
}

TEST_P(string_skip, hands_over_at_a_boundary_never_inside_an_escape_or_a_sequence)
{
    // A \u escape after a backslash that ends a block, and an emoji split across a block
    // boundary followed by an invalid byte: where it stops, the scalar scanner must be able to
    // start.
    for (std::size_t pad = 0; pad < 70; ++pad)
    {
        const std::string a = std::string(pad, 'x') + "\\u0041" + std::string(100, 'y') + "\"";
        const auto sa = skip(a);
        EXPECT_FALSE(sa.closed) << pad;
        EXPECT_EQ(sa.at, a.data() + pad) << "not at the backslash of \\u at pad " << pad;
        const std::string b = std::string(pad, 'x') + "\xf0\x9f\x9a\x80\xff" + std::string(100, 'y') + "\"";
        const auto sb = skip(b);
        EXPECT_FALSE(sb.closed) << pad;
        EXPECT_TRUE(sb.at <= b.data() + pad + 4) << pad;
        const auto lead = static_cast<unsigned char>(*sb.at);
        EXPECT_FALSE(lead >= 0x80 && lead < 0xC0) << "stopped on a continuation byte at pad " << pad;
    }
}

TEST_P(string_skip, every_piece_at_every_offset_across_two_block_boundaries)
{
    std::size_t failures = 0;
    for (const auto& piece : pieces)
        for (std::size_t pad = 0; pad < 140 && failures == 0; ++pad)
        {
            same_both_ways(line_with(piece + std::string(90, 'z'), pad));
            same_both_ways(line_with(std::string(90, 'z') + piece, pad));
            failures += ::testing::Test::HasFailure();
        }
}

TEST_P(string_skip, backslash_runs_of_every_length_at_every_offset)
{
    for (std::size_t run = 1; run <= 6; ++run)
        for (std::size_t pad = 0; pad < 132; ++pad)
            for (const char* after : {"\"", "n", "u0041", "x", "\\", "\xc3\xa9"})
            {
                const std::string content = std::string(run, '\\') + after + std::string(80, 'q');
                const verdict v = same_both_ways(line_with(content, pad));
                // An even run escapes itself: then the quote ends the string early and the rest is not JSON.
                if (run % 2 == 0 && std::string(after) == "\"")
                {
                    EXPECT_EQ(v.code, errc::invalid_json);
                }
                if (::testing::Test::HasFailure())
                    return;
            }
}

TEST_P(string_skip, random_strings_of_pieces_agree_with_the_scalar_scanner)
{
    std::mt19937_64 rng(20261202);
    std::size_t accepted = 0, rejected = 0;
    for (int i = 0; i < 30000; ++i)
    {
        std::string content;
        const std::size_t n = rng() % 60;
        // Mostly valid text (so strings get long), with a rare piece that may be invalid.
        for (std::size_t k = 0; k < n; ++k)
        {
            const auto r = rng() % 100;
            content += r < 60   ? std::string(rng() % 12, 'a' + static_cast<char>(rng() % 26))
                       : r < 97 ? pieces[rng() % 10] + pieces[21 + rng() % 3]
                                : pieces[rng() % pieces.size()];
        }
        const verdict v = same_both_ways(line_with(content, rng() % 64));
        (v.code == errc{} ? accepted : rejected)++;
        if (::testing::Test::HasFailure())
            return;
    }
    // Both kinds occur, so both the skip and the hand-over are exercised.
    EXPECT_GT(accepted, 5000u);
    EXPECT_GT(rejected, 2000u);
}

TEST_P(string_skip, a_string_ending_at_the_end_of_the_line_or_unterminated)
{
    for (std::size_t len = 0; len < 200; ++len)
    {
        same_both_ways("\"" + std::string(len, 'w') + "\"");
        same_both_ways("\"" + std::string(len, 'w'));
        same_both_ways("[\"" + std::string(len, 'w') + "\\");
        same_both_ways("[\"" + std::string(len, 'w') + "\xe2\x94");
    }
}

// Values nothing is captured from go through a loop instead of the recursion (with vectors on):
// random documents, cut and spliced at random, must get the recursion's verdict and message.
TEST_P(string_skip, uncaptured_values_are_checked_as_the_recursion_checks_them)
{
    std::mt19937_64 rng(7);
    const std::vector<std::string> atoms = {
        "{",    "}", "[",  "]",  ",",  ":",   "\"k\"", "\"v\"", "1",  "-2.5e3", "true",        "false",
        "null", " ", "\t", "\r", "\n", "tru", "nul",   "01",    "1.", "-",      "\"\\u00e9\"", "x"};
    std::size_t accepted = 0, rejected = 0;
    for (int i = 0; i < 40000; ++i)
    {
        // A valid document of random shape, then (most of the time) a few random edits.
        std::string value;
        std::function<void(int)> gen = [&](int depth) {
            const auto r = rng() % 10;
            if (depth > 5 || r < 4)
                value += atoms[6 + rng() % 7];
            else if (r < 7)
            {
                value += '{';
                for (std::size_t n = rng() % 4, k = 0; k < n; ++k)
                {
                    value += (k ? ",\"k" : "\"k") + std::to_string(k) + "\":";
                    gen(depth + 1);
                }
                value += '}';
            }
            else
            {
                value += '[';
                for (std::size_t n = rng() % 4, k = 0; k < n; ++k)
                {
                    if (k)
                        value += ',';
                    gen(depth + 1);
                }
                value += ']';
            }
        };
        gen(0);
        for (std::size_t edits = rng() % 4; edits > 0 && !value.empty(); --edits)
        {
            const std::size_t at = rng() % value.size();
            if (rng() % 2)
                value.insert(at, atoms[rng() % atoms.size()]);
            else
                value.erase(at, 1 + rng() % 3);
        }
        const verdict v = same_both_ways(
            R"({"type":"message","id":"a","message":{"role":"user","content":)" + value + "}}"
        );
        (v.code == errc{} ? accepted : rejected)++;
        if (::testing::Test::HasFailure())
            return;
    }
    EXPECT_GT(accepted, 5000u);
    EXPECT_GT(rejected, 5000u);
}

TEST_P(string_skip, nesting_at_and_past_the_limit_in_uncaptured_values)
{
    for (const std::size_t max_depth : {std::size_t{3}, std::size_t{64}, std::size_t{100}, std::size_t{200}})
        for (std::size_t n = 60; n < 140; n += 7)
            for (const char* open : {"[", "{\"a\":"})
            {
                std::string value;
                for (std::size_t k = 0; k < n; ++k)
                    value += open;
                value += "1";
                for (std::size_t k = 0; k < n; ++k)
                    value += open[0] == '[' ? "]" : "}";
                const std::string line = R"({"type":"message","id":"a","x":)" + value + "}";
                detail::line_fields f;
                std::string m1, m2;
                EXPECT_EQ(
                    detail::line_indexer::scan(line, max_depth, f, m1, GetParam()),
                    detail::line_indexer::scan(line, max_depth, f, m2, detail::string_skip_width::scalar)
                ) << max_depth
                  << " " << n;
                EXPECT_EQ(m1, m2);
            }
}
