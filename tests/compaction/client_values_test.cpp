// Values clients write: usage counts in range, finite numbers, base64 images; saturating token sums.
#include <agentctx/compaction/client_values.hpp>
#include <agentctx/compaction/token_accounting.hpp>

#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace agentctx::compaction;
namespace json = boost::json;

namespace {

// The refusal of `fields` as "<code> <field>: <message>", or "ok".
std::string verdict(const std::string& fields)
{
    diagnostics diag;
    const auto r = check_client_values(json::parse(fields).as_object(), diag);
    return r ? std::string("ok")
             : std::string(to_string(static_cast<errc>(r.error().value()))) + " " + diag.field;
}

std::string assistant_with_usage(const std::string& usage)
{
    return R"({"type":"message","message":{"role":"assistant","content":[],"usage":)" + usage + "}}";
}

}  // namespace

TEST(client_values, usage_counts_must_be_whole_numbers_from_zero_to_the_bound)
{
    EXPECT_EQ(verdict(assistant_with_usage(R"({"input":10,"output":0,"totalTokens":1000000000000})")), "ok");
    EXPECT_EQ(
        verdict(assistant_with_usage(R"({"input":9223372036854775807})")), "invalid_value message.usage.input"
    );
    EXPECT_EQ(
        verdict(assistant_with_usage(R"({"input":1,"output":-1})")), "invalid_value message.usage.output"
    );
    EXPECT_EQ(
        verdict(assistant_with_usage(R"({"cacheRead":18446744073709551615})")),
        "invalid_value message.usage.cacheRead"
    );
    EXPECT_EQ(
        verdict(assistant_with_usage(R"({"totalTokens":1000000000001})")),
        "invalid_value message.usage.totalTokens"
    );
    EXPECT_EQ(verdict(R"({"type":"usage","usage":{"reasoning":-5}})"), "invalid_value usage.reasoning");
    diagnostics diag;
    usage u;
    u.cache_write = -1;
    EXPECT_FALSE(check_usage(u, "usage", diag));
    EXPECT_EQ(diag.field, "usage.cacheWrite");
    EXPECT_EQ(
        diag.message, "field 'usage.cacheWrite': a token count must be a whole number from 0 to 1000000000000"
    );
}

TEST(client_values, a_number_out_of_the_double_range_is_refused_with_its_path)
{
    // Boost.JSON reads 1e400 as infinity; written back it would be null.
    EXPECT_EQ(
        verdict(
            R"({"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"n","arguments":{"x":[1,1e400]}}]}})"
        ),
        "invalid_value message.content[0].arguments.x[1]"
    );
    json::object o{{"type", "custom"}, {"data", json::object{{"v", std::nan("")}}}};
    diagnostics diag;
    EXPECT_FALSE(check_client_values(o, diag));
    EXPECT_EQ(diag.field, "data.v");
    EXPECT_EQ(first_non_finite(json::parse(R"({"a":[1.5,{"b":-1e308}]})"), ""), std::nullopt);
}

TEST(client_values, images_need_base64_data_and_an_accepted_media_type)
{
    const auto image = [](const std::string& data, const std::string& mime) {
        return R"({"type":"message","message":{"role":"user","content":[{"type":"text","text":"see"},{"type":"image","data":")" +
               data + R"(","mimeType":")" + mime + R"("}]}})";
    };
    EXPECT_EQ(verdict(image("iVBORw0KGgo=", "image/png")), "ok");
    EXPECT_EQ(verdict(image("aGk=", "image/webp")), "ok");
    EXPECT_EQ(verdict(image("not base64!", "image/png")), "invalid_value message.content[1].data");
    EXPECT_EQ(verdict(image("aGk", "image/png")), "ok");  // unpadded
    EXPECT_EQ(verdict(image("aGkxa", "image/png")), "invalid_value message.content[1].data");
    EXPECT_EQ(verdict(image("aG=", "image/png")), "invalid_value message.content[1].data");
    EXPECT_EQ(verdict(image("a=Gk", "image/png")), "invalid_value message.content[1].data");
    EXPECT_EQ(verdict(image("", "image/png")), "invalid_value message.content[1].data");
    EXPECT_EQ(verdict(image("aGk=", "text/html")), "invalid_value message.content[1].mimeType");
    EXPECT_EQ(
        verdict(
            R"({"type":"custom_message","customType":"x","content":[{"type":"image","data":"aGk=","mimeType":"image/svg+xml"}]})"
        ),
        "invalid_value content[0].mimeType"
    );
}

TEST(client_values, context_token_sums_saturate_and_never_go_negative)
{
    constexpr auto max = std::numeric_limits<std::int64_t>::max();
    usage u;
    u.input = max;
    u.output = 10;
    EXPECT_EQ(calculate_context_tokens(u), max);
    u.input = -100;  // a file written before usage was checked
    EXPECT_EQ(calculate_context_tokens(u), 10);
    u.total_tokens = -5;
    EXPECT_EQ(calculate_context_tokens(u), 0);
    EXPECT_EQ(saturating_add(max, 1), max);
    EXPECT_EQ(
        saturating_add(std::numeric_limits<std::int64_t>::min(), -1), std::numeric_limits<std::int64_t>::min()
    );
}
