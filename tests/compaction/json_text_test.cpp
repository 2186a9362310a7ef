// JSON.stringify compatibility and UTF-16 arithmetic.
#include <agentctx/compaction/json_text.hpp>

#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

using namespace agentctx::compaction;

namespace {

std::string num(double d)
{
    std::string s;
    format_number_to(s, d);
    return s;
}

}  // namespace

TEST(json_text, numbers_follow_ecmascript_number_to_string)
{
    EXPECT_EQ(num(0.5), "0.5");
    EXPECT_EQ(num(-0.0), "0");
    EXPECT_EQ(num(1e21), "1e+21");
    EXPECT_EQ(num(1e20), "100000000000000000000");
    EXPECT_EQ(num(123456789012345680000.0), "123456789012345680000");
    EXPECT_EQ(num(1e-7), "1e-7");
    EXPECT_EQ(num(0.000001), "0.000001");
    EXPECT_EQ(num(1.5e-10), "1.5e-10");
    EXPECT_EQ(num(-2.5e+300), "-2.5e+300");
    EXPECT_EQ(num(0.1 + 0.2), "0.30000000000000004");
    EXPECT_EQ(num(100), "100");
    EXPECT_EQ(num(0.003), "0.003");
    EXPECT_EQ(num(5e-324), "5e-324");
    EXPECT_EQ(num(1.7976931348623157e308), "1.7976931348623157e+308");
}

TEST(json_text, non_finite_numbers_are_null)
{
    EXPECT_EQ(num(std::numeric_limits<double>::infinity()), "null");
    EXPECT_EQ(num(std::numeric_limits<double>::quiet_NaN()), "null");
}

TEST(json_text, parsed_numbers_print_as_javascript_would)
{
    auto v = boost::json::parse(R"([1.0,1e2,-0.0,0.5,12345678901234,2.50,1E21])");
    EXPECT_EQ(stringify(v), "[1,100,0,0.5,12345678901234,2.5,1e+21]");
}

TEST(json_text, strings_are_escaped_as_json_stringify_does)
{
    std::string out;
    quote_to(out, std::string("a\"b\\c\b\f\n\r\t\x01\x1f\x7f\0", 14));
    EXPECT_EQ(out, "\"a\\\"b\\\\c\\b\\f\\n\\r\\t\\u0001\\u001f\x7f\\u0000\"");
    out.clear();
    quote_to(out, "é日本語🚀/");  // non-ASCII raw, '/' not escaped
    EXPECT_EQ(out, "\"é日本語🚀/\"");
}

TEST(json_text, objects_keep_key_order_and_have_no_spaces)
{
    auto v = boost::json::parse(R"({ "z": 1, "a": [true, false, null], "m": {"y": "x", "b": 2} })");
    EXPECT_EQ(stringify(v), R"({"z":1,"a":[true,false,null],"m":{"y":"x","b":2}})");
}

TEST(json_text, utf16_length_counts_code_units)
{
    EXPECT_EQ(utf16_length(""), 0u);
    EXPECT_EQ(utf16_length("abc"), 3u);
    EXPECT_EQ(utf16_length("é"), 1u);       // 2 bytes, 1 unit
    EXPECT_EQ(utf16_length("日本語"), 3u);  // 9 bytes, 3 units
    EXPECT_EQ(utf16_length("🚀"), 2u);       // 4 bytes, a surrogate pair
    EXPECT_EQ(utf16_length("a🚀b日"), 5u);
    EXPECT_EQ(utf16_length("\xff"), 1u);  // an invalid byte decodes to one U+FFFD
}

TEST(json_text, utf16_prefix_slices_like_javascript)
{
    EXPECT_EQ(utf16_prefix("abcdef", 3), "abc");
    EXPECT_EQ(utf16_prefix("日本語", 2), "日本");
    EXPECT_EQ(utf16_prefix("a🚀b", 3), "a🚀");
    // Cutting between the halves of 🚀 leaves a lone surrogate, which UTF-8 renders as U+FFFD.
    EXPECT_EQ(utf16_prefix("a🚀b", 2), "a\xEF\xBF\xBD");
    EXPECT_EQ(utf16_prefix("ab", 10), "ab");
}

TEST(json_text, utf8_validation)
{
    EXPECT_TRUE(is_valid_utf8("plain é 日本 🚀"));
    EXPECT_FALSE(is_valid_utf8("\xc3"));              // truncated
    EXPECT_FALSE(is_valid_utf8("\xc0\xaf"));          // overlong
    EXPECT_FALSE(is_valid_utf8("\xed\xa0\x80"));      // a surrogate
    EXPECT_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));  // above U+10FFFF
}

TEST(json_text, sort_order_is_utf16_code_units)
{
    // By code point U+FF5E < U+1F600; by UTF-16 units 😀 (0xD83D...) < ～ (0xFF5E), which is
    // the order JavaScript's default sort gives.
    std::vector<std::string> v{"～", "😀", "a", "B"};
    std::sort(v.begin(), v.end(), [](const auto& x, const auto& y) { return utf16_less(x, y); });
    EXPECT_EQ(v, (std::vector<std::string>{"B", "a", "😀", "～"}));
    EXPECT_TRUE(utf16_less("ab", "abc"));
    EXPECT_FALSE(utf16_less("abc", "ab"));
    EXPECT_FALSE(utf16_less("ab", "ab"));
}
