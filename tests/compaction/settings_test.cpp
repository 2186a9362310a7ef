// Settings layering: defaults, global, trusted project (deep merge), overrides; errors name the field.
#include <agentctx/compaction/settings.hpp>

#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

using namespace agentctx::compaction;

namespace {

boost::json::object obj(std::string_view s)
{
    return boost::json::parse(s).as_object();
}

}  // namespace

TEST(settings, defaults)
{
    diagnostics diag;
    const auto s = resolve_settings({}, diag).value();
    EXPECT_TRUE(s.enabled);
    EXPECT_EQ(s.reserve_tokens, 16384);
    EXPECT_EQ(s.keep_recent_tokens, 20000);
    EXPECT_TRUE(s.retry.enabled);
    EXPECT_EQ(s.retry.max_retries, 3);
    EXPECT_EQ(s.retry.base_delay_ms, 2000);
}

TEST(settings, trusted_project_deep_merges_over_global_and_overrides_win)
{
    settings_layers l;
    l.global = obj(R"({"compaction":{"reserveTokens":10000,"keepRecentTokens":5000},"retry":{"maxRetries":5}})");
    l.project = obj(R"({"compaction":{"keepRecentTokens":0}})");
    l.project_trusted = true;
    diagnostics diag;
    auto s = resolve_settings(l, diag).value();
    EXPECT_EQ(s.reserve_tokens, 10000);   // kept from global: the merge is per field
    EXPECT_EQ(s.keep_recent_tokens, 0);   // 0 is honoured
    EXPECT_EQ(s.retry.max_retries, 5);
    l.overrides = obj(R"({"compaction":{"enabled":false}})");
    s = resolve_settings(l, diag).value();
    EXPECT_FALSE(s.enabled);
    EXPECT_EQ(s.reserve_tokens, 10000);
}

TEST(settings, untrusted_project_is_ignored_even_when_invalid)
{
    settings_layers l;
    l.global = obj(R"({"compaction":{"reserveTokens":9000}})");
    l.project = obj(R"({"compaction":{"reserveTokens":"lots"}})");
    diagnostics diag;
    const auto s = resolve_settings(l, diag);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->reserve_tokens, 9000);
}

TEST(settings, wrong_types_name_the_field_and_the_layer)
{
    settings_layers l;
    l.project = obj(R"({"compaction":{"reserveTokens":"lots"}})");
    l.project_trusted = true;
    diagnostics diag;
    auto s = resolve_settings(l, diag);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error(), make_error_code(errc::invalid_settings));
    EXPECT_EQ(diag.field, "compaction.reserveTokens");
    EXPECT_NE(diag.message.find("project settings"), std::string::npos) << diag.message;

    settings_layers g;
    g.global = obj(R"({"compaction":{"enabled":1}})");
    EXPECT_EQ(resolve_settings(g, diag).error(), make_error_code(errc::invalid_settings));
    EXPECT_EQ(diag.field, "compaction.enabled");
    g.global = obj(R"({"compaction":{"keepRecentTokens":-5}})");
    EXPECT_EQ(resolve_settings(g, diag).error(), make_error_code(errc::invalid_settings));
    g.global = obj(R"({"compaction":[]})");
    EXPECT_EQ(resolve_settings(g, diag).error(), make_error_code(errc::invalid_settings));
    EXPECT_EQ(diag.field, "compaction");
}

TEST(settings, deep_merge_is_recursive)
{
    const auto m = deep_merge(obj(R"({"a":{"b":{"c":1,"d":2}},"x":1})"), obj(R"({"a":{"b":{"d":3}},"y":2})"));
    EXPECT_EQ(m, obj(R"({"a":{"b":{"c":1,"d":3}},"x":1,"y":2})"));
}
