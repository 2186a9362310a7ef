// Settings layering: defaults, global, trusted project (deep merge), overrides; errors name the field.
#include <agentctx/compaction/projection.hpp>
#include <agentctx/compaction/settings.hpp>
#include <agentctx/compaction/token_accounting.hpp>

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
    EXPECT_EQ(s.retry.max_agent_delay_ms, 60000);
}

TEST(settings, trusted_project_deep_merges_over_global_and_overrides_win)
{
    settings_layers l;
    l.global =
        obj(R"({"compaction":{"reserveTokens":10000,"keepRecentTokens":5000},"retry":{"maxRetries":5}})");
    l.project = obj(R"({"compaction":{"keepRecentTokens":0}})");
    l.project_trusted = true;
    diagnostics diag;
    auto s = resolve_settings(l, diag).value();
    EXPECT_EQ(s.reserve_tokens, 10000);  // kept from global: the merge is per field
    EXPECT_EQ(s.keep_recent_tokens, 0);  // 0 is honoured
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

TEST(settings, wrong_types_name_the_field)
{
    // Pi 1.6 validates the token budgets on the merged settings with its own message (delta
    // Pi 1.6); 0.73.1-era agentctx named the layer instead.
    settings_layers l;
    l.project = obj(R"({"compaction":{"reserveTokens":"lots"}})");
    l.project_trusted = true;
    diagnostics diag;
    auto s = resolve_settings(l, diag);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error(), make_error_code(errc::invalid_settings));
    EXPECT_EQ(diag.field, "compaction.reserveTokens");
    EXPECT_EQ(
        diag.message, "Invalid compaction.reserveTokens setting: lots. Expected a non-negative safe integer."
    );

    // The other fields are checked per layer and name it.
    settings_layers g;
    g.global = obj(R"({"compaction":{"enabled":1}})");
    EXPECT_EQ(resolve_settings(g, diag).error(), make_error_code(errc::invalid_settings));
    EXPECT_EQ(diag.field, "compaction.enabled");
    EXPECT_NE(diag.message.find("global settings"), std::string::npos) << diag.message;
    g.global = obj(R"({"compaction":{"keepRecentTokens":-5}})");
    EXPECT_EQ(resolve_settings(g, diag).error(), make_error_code(errc::invalid_settings));
    EXPECT_EQ(
        diag.message, "Invalid compaction.keepRecentTokens setting: -5. Expected a non-negative safe integer."
    );
    g.global = obj(R"({"compaction":[]})");
    EXPECT_EQ(resolve_settings(g, diag).error(), make_error_code(errc::invalid_settings));
    EXPECT_EQ(diag.field, "compaction");
}

TEST(settings, deep_merge_is_recursive)
{
    const auto m = deep_merge(obj(R"({"a":{"b":{"c":1,"d":2}},"x":1})"), obj(R"({"a":{"b":{"d":3}},"y":2})"));
    EXPECT_EQ(m, obj(R"({"a":{"b":{"c":1,"d":3}},"x":1,"y":2})"));
}

TEST(settings, deep_merge_replaces_arrays_and_scalars_whole)
{
    const auto m =
        deep_merge(obj(R"({"a":[1,2,3],"b":{"c":1},"d":{"e":1}})"), obj(R"({"a":[9],"b":5,"d":{"e":null}})"));
    EXPECT_EQ(m, obj(R"({"a":[9],"b":5,"d":{"e":null}})"));
}

TEST(settings, global_and_project_merge_at_every_depth)
{
    // 0.73.1 merged one level: the project's modelOverrides object replaced the global one.
    settings_layers l;
    l.global = obj(
        R"({"compaction":{"modelOverrides":{"prov/org/big":{"reserveTokens":1000,"keepRecentTokens":50}}}})"
    );
    l.project = obj(R"({"compaction":{"modelOverrides":{"prov/org/big":{"keepRecentTokens":7}}}})");
    l.project_trusted = true;
    diagnostics diag;
    const auto s = resolve_settings(l, diag, std::string("prov/org/big")).value();
    EXPECT_EQ(s.reserve_tokens, 1000);   // global leaf kept
    EXPECT_EQ(s.keep_recent_tokens, 7);  // project leaf wins
}

TEST(settings, retry_max_agent_delay)
{
    settings_layers l;
    l.global = obj(R"({"retry":{"maxAgentDelayMs":5000}})");
    diagnostics diag;
    EXPECT_EQ(resolve_settings(l, diag).value().retry.max_agent_delay_ms, 5000);
    l.global = obj(R"({"retry":{"maxAgentDelayMs":-1}})");
    EXPECT_EQ(resolve_settings(l, diag).error(), make_error_code(errc::invalid_settings));
    EXPECT_EQ(diag.field, "retry.maxAgentDelayMs");
}

namespace {

const std::string big = override_key(model_ref{"prov", "org/big"});

result<compaction_settings> for_big(
    std::string_view compaction, diagnostics& diag, std::optional<std::string> m = big
)
{
    settings_layers l;
    l.global = obj(std::string(R"({"compaction":)") + std::string(compaction) + "}");
    return resolve_settings(l, diag, m);
}

std::string error_of(std::string_view compaction, std::optional<std::string> m = big)
{
    diagnostics diag;
    auto r = for_big(compaction, diag, m);
    if (r)
        return "ok";
    EXPECT_EQ(r.error(), make_error_code(errc::invalid_settings));
    return diag.message;
}

}  // namespace

TEST(settings, model_overrides_verified_vectors)
{
    // Pi 1.6, model {provider:"prov", id:"org/big"}.
    diagnostics diag;
    auto s = for_big("{}", diag).value();
    EXPECT_EQ(s.reserve_tokens, 16384);
    EXPECT_EQ(s.keep_recent_tokens, 20000);
    s = for_big(R"({"reserveTokens":1000,"modelOverrides":{"prov/org/big":{"keepRecentTokens":5}}})", diag)
            .value();
    EXPECT_EQ(s.reserve_tokens, 1000);
    EXPECT_EQ(s.keep_recent_tokens, 5);
    s = for_big(R"({"modelOverrides":{"prov/org/big":{"reserveTokens":400000}}})", diag).value();
    EXPECT_EQ(s.reserve_tokens, 400000);
    EXPECT_EQ(s.keep_recent_tokens, 20000);
    s = for_big(R"({"modelOverrides":{"Prov/org/big":{"reserveTokens":400000}}})", diag)
            .value();  // case-sensitive
    EXPECT_EQ(s.reserve_tokens, 16384);
    EXPECT_EQ(s.keep_recent_tokens, 20000);
    EXPECT_EQ(
        error_of(R"({"reserveTokens":-1,"modelOverrides":{"prov/org/big":{"reserveTokens":10}}})"),
        "Invalid compaction.reserveTokens setting: -1. Expected a non-negative safe integer."
    );
    EXPECT_EQ(
        error_of(R"({"modelOverrides":{"prov/org/big":5}})"),
        "Invalid compaction.modelOverrides[\"prov/org/big\"] setting: 5. Expected an object."
    );
    EXPECT_EQ(error_of(R"({"modelOverrides":{"prov/org/big":5}})", std::string("prov/other")), "ok");
    s = for_big(R"({"keepRecentTokens":0})", diag).value();
    EXPECT_EQ(s.keep_recent_tokens, 0);
}

TEST(settings, model_override_fields_resolve_independently_and_enabled_is_global)
{
    diagnostics diag;
    const auto s =
        for_big(
            R"({"enabled":false,"keepRecentTokens":9,"modelOverrides":{"prov/org/big":{"reserveTokens":0,"enabled":true}}})",
            diag
        )
            .value();
    EXPECT_FALSE(s.enabled);
    EXPECT_EQ(s.reserve_tokens, 0);  // 0 honoured in an override too
    EXPECT_EQ(s.keep_recent_tokens, 9);
    EXPECT_EQ(override_key(model_ref{"prov", "org/big"}), "prov/org/big");  // the id keeps its '/'
    EXPECT_EQ(error_of(R"({"modelOverrides":{"prov/org/big":5}})", std::string("prov/org")), "ok");
}

TEST(settings, ordinary_budget_errors_use_js_string_even_with_a_valid_override)
{
    const std::string valid =
        R"(,"modelOverrides":{"prov/org/big":{"reserveTokens":10,"keepRecentTokens":10}}})";
    const std::string tail = ". Expected a non-negative safe integer.";
    EXPECT_EQ(
        error_of(R"({"reserveTokens":null)" + valid), "Invalid compaction.reserveTokens setting: null" + tail
    );
    EXPECT_EQ(
        error_of(R"({"reserveTokens":1.5)" + valid), "Invalid compaction.reserveTokens setting: 1.5" + tail
    );
    EXPECT_EQ(
        error_of(R"({"reserveTokens":"5")" + valid), "Invalid compaction.reserveTokens setting: 5" + tail
    );
    EXPECT_EQ(
        error_of(R"({"keepRecentTokens":{"a":1})" + valid),
        "Invalid compaction.keepRecentTokens setting: [object Object]" + tail
    );
    EXPECT_EQ(
        error_of(R"({"keepRecentTokens":[1,[2,3],null,"x"])" + valid),
        "Invalid compaction.keepRecentTokens setting: 1,2,3,,x" + tail
    );
    EXPECT_EQ(
        error_of(R"({"keepRecentTokens":9007199254740992)" + valid),
        "Invalid compaction.keepRecentTokens setting: 9007199254740992" + tail
    );
    EXPECT_EQ(
        error_of(R"({"keepRecentTokens":true)" + valid),
        "Invalid compaction.keepRecentTokens setting: true" + tail
    );
    EXPECT_EQ(
        error_of(R"({"reserveTokens":1e21)" + valid), "Invalid compaction.reserveTokens setting: 1e+21" + tail
    );
    EXPECT_EQ(error_of(R"({"reserveTokens":9007199254740991,"keepRecentTokens":2.0})"), "ok");
}

TEST(settings, override_entry_and_field_errors)
{
    const std::string tail = ". Expected a non-negative safe integer.";
    EXPECT_EQ(
        error_of(R"({"modelOverrides":{"prov/org/big":null}})"),
        "Invalid compaction.modelOverrides[\"prov/org/big\"] setting: null. Expected an object."
    );
    EXPECT_EQ(
        error_of(R"({"modelOverrides":{"prov/org/big":[1,2]}})"),
        "Invalid compaction.modelOverrides[\"prov/org/big\"] setting: 1,2. Expected an object."
    );
    EXPECT_EQ(
        error_of(R"({"modelOverrides":{"prov/org/big":"big"}})"),
        "Invalid compaction.modelOverrides[\"prov/org/big\"] setting: big. Expected an object."
    );
    EXPECT_EQ(
        error_of(R"({"modelOverrides":{"prov/org/big":{"reserveTokens":-1}}})"),
        "Invalid compaction.modelOverrides[\"prov/org/big\"].reserveTokens setting: -1" + tail
    );
    EXPECT_EQ(
        error_of(R"({"modelOverrides":{"prov/org/big":{"keepRecentTokens":"7"}}})"),
        "Invalid compaction.modelOverrides[\"prov/org/big\"].keepRecentTokens setting: 7" + tail
    );
    diagnostics diag;
    EXPECT_FALSE(for_big(R"({"modelOverrides":{"prov/org/big":{"keepRecentTokens":0.5}}})", diag));
    EXPECT_EQ(diag.field, "compaction.modelOverrides[\"prov/org/big\"].keepRecentTokens");
    // Other models' entries are never inspected; a non-object modelOverrides has no entry.
    EXPECT_EQ(error_of(R"({"modelOverrides":{"a/b":5,"c/d":{"reserveTokens":-1},"prov/org/big":{}}})"), "ok");
    EXPECT_EQ(error_of(R"({"modelOverrides":5})"), "ok");
    EXPECT_EQ(error_of(R"({"modelOverrides":["prov/org/big"]})"), "ok");
}

TEST(settings, validation_order_is_per_field)
{
    // reserveTokens (ordinary, entry, override field) before keepRecentTokens.
    const std::string tail = ". Expected a non-negative safe integer.";
    EXPECT_EQ(
        error_of(R"({"keepRecentTokens":-1,"modelOverrides":{"prov/org/big":5}})"),
        "Invalid compaction.modelOverrides[\"prov/org/big\"] setting: 5. Expected an object."
    );
    EXPECT_EQ(
        error_of(R"({"keepRecentTokens":-1,"modelOverrides":{"prov/org/big":{"reserveTokens":-2}}})"),
        "Invalid compaction.modelOverrides[\"prov/org/big\"].reserveTokens setting: -2" + tail
    );
    EXPECT_EQ(
        error_of(R"({"keepRecentTokens":-1,"modelOverrides":{"prov/org/big":{"keepRecentTokens":-2}}})"),
        "Invalid compaction.keepRecentTokens setting: -1" + tail
    );
    EXPECT_EQ(
        error_of(R"({"reserveTokens":-1,"modelOverrides":{"prov/org/big":5}})"),
        "Invalid compaction.reserveTokens setting: -1" + tail
    );
}

TEST(settings, without_a_model_overrides_are_ignored)
{
    EXPECT_EQ(error_of(R"({"modelOverrides":{"prov/org/big":5}})", std::nullopt), "ok");
    diagnostics diag;
    const auto s =
        for_big(R"({"modelOverrides":{"prov/org/big":{"reserveTokens":1}}})", diag, std::nullopt).value();
    EXPECT_EQ(s.reserve_tokens, 16384);
    // The ordinary fields are still validated.
    EXPECT_EQ(
        error_of(R"({"reserveTokens":-1})", std::nullopt),
        "Invalid compaction.reserveTokens setting: -1. Expected a non-negative safe integer."
    );
}

TEST(settings, js_string_matches_javascript)
{
    EXPECT_EQ(js_string(boost::json::parse("null")), "null");
    EXPECT_EQ(js_string(boost::json::parse("1.5")), "1.5");
    EXPECT_EQ(js_string(boost::json::parse("-0.0")), "0");
    EXPECT_EQ(js_string(boost::json::parse(R"("5")")), "5");
    EXPECT_EQ(js_string(boost::json::parse(R"({"a":1})")), "[object Object]");
    EXPECT_EQ(js_string(boost::json::parse(R"([1,{"a":1},[null,false]])")), "1,[object Object],,false");
    EXPECT_EQ(js_string(boost::json::parse("[]")), "");
}

TEST(settings, threshold_vectors)
{
    // Pi 1.6 item 24: strict `tokens > window - reserve`.
    diagnostics diag;
    const auto d = resolve_settings({}, diag).value();
    EXPECT_FALSE(should_compact(183616, 200000, d));
    EXPECT_TRUE(should_compact(183617, 200000, d));
    const auto o = for_big(R"({"modelOverrides":{"prov/org/big":{"reserveTokens":400000}}})", diag).value();
    EXPECT_FALSE(should_compact(600000, 1000000, o));
    EXPECT_TRUE(should_compact(600001, 1000000, o));
}

TEST(settings, background_defaults_and_layers)
{
    diagnostics diag;
    const auto d = resolve_settings({}, diag).value();
    EXPECT_FALSE(d.background.enabled.has_value()
    );  // the mode decides: on in agentctx, off in Pi compatibility
    EXPECT_DOUBLE_EQ(d.background.start_at, 0.7);
    EXPECT_EQ(d.background.commit, background_commit::at_threshold);

    settings_layers l;
    l.global = obj(R"({"compaction":{"background":{"enabled":false,"startAt":0.5}}})");
    l.project = obj(R"({"compaction":{"background":{"commit":"when-ready"}}})");
    l.project_trusted = true;
    const auto s = resolve_settings(l, diag).value();
    EXPECT_EQ(s.background.enabled, std::optional<bool>(false));
    EXPECT_DOUBLE_EQ(s.background.start_at, 0.5);  // deep merge keeps the global field
    EXPECT_EQ(s.background.commit, background_commit::when_ready);
    l.overrides = obj(R"({"compaction":{"background":{"startAt":1}}})");
    EXPECT_DOUBLE_EQ(resolve_settings(l, diag).value().background.start_at, 1.0);
}

TEST(settings, background_errors_name_the_field_and_the_layer)
{
    struct bad
    {
        const char* json;
        const char* field;
        const char* message;
    };
    const bad cases[] = {
        {R"({"compaction":{"background":true}})",
         "compaction.background",
         "global settings: field 'compaction.background': expected object, got boolean"},
        {R"({"compaction":{"background":{"enabled":"yes"}}})",
         "compaction.background.enabled",
         "global settings: field 'compaction.background.enabled': expected boolean, got \"yes\""},
        {R"({"compaction":{"background":{"startAt":0}}})",
         "compaction.background.startAt",
         "global settings: field 'compaction.background.startAt': expected a number in (0, 1], got 0"},
        {R"({"compaction":{"background":{"startAt":1.5}}})",
         "compaction.background.startAt",
         "global settings: field 'compaction.background.startAt': expected a number in (0, 1], got 1.5"},
        {R"({"compaction":{"background":{"startAt":"0.7"}}})",
         "compaction.background.startAt",
         "global settings: field 'compaction.background.startAt': expected a number in (0, 1], got \"0.7\""},
        {R"({"compaction":{"background":{"commit":"later"}}})",
         "compaction.background.commit",
         "global settings: field 'compaction.background.commit': expected \"at-threshold\" or "
         "\"when-ready\", got \"later\""},
        {R"({"compaction":{"background":{"commit":1}}})",
         "compaction.background.commit",
         "global settings: field 'compaction.background.commit': expected \"at-threshold\" or "
         "\"when-ready\", got 1"},
    };
    for (const auto& c : cases)
    {
        settings_layers l;
        l.global = obj(c.json);
        diagnostics diag;
        const auto r = resolve_settings(l, diag);
        ASSERT_FALSE(r) << c.json;
        EXPECT_EQ(r.error(), make_error_code(errc::invalid_settings));
        EXPECT_EQ(diag.field, c.field);
        EXPECT_EQ(diag.message, c.message);
    }
    // An untrusted project's bad value is never read; an override's names its layer.
    settings_layers l;
    l.project = obj(R"({"compaction":{"background":{"startAt":-1}}})");
    diagnostics diag;
    EXPECT_TRUE(resolve_settings(l, diag));
    l.overrides = obj(R"({"compaction":{"background":{"enabled":1}}})");
    ASSERT_FALSE(resolve_settings(l, diag));
    EXPECT_EQ(
        diag.message, "override settings: field 'compaction.background.enabled': expected boolean, got 1"
    );
}

TEST(settings, summary_request_is_read_and_checked_per_layer)
{
    settings_layers l;
    diagnostics diag;
    EXPECT_FALSE(resolve_settings(l, diag)->summary_request.has_value()
    );  // the default depends on the provider
    l.global = obj(R"({"compaction":{"summaryRequest":"standalone"}})");
    EXPECT_EQ(resolve_settings(l, diag)->summary_request, summary_request_mode::standalone);
    l.overrides = obj(R"({"compaction":{"summaryRequest":"cache-friendly"}})");
    EXPECT_EQ(resolve_settings(l, diag)->summary_request, summary_request_mode::cache_friendly);
    const std::pair<const char*, const char*> bad[] = {
        {R"({"compaction":{"summaryRequest":"cached"}})",
         "override settings: field 'compaction.summaryRequest': expected \"cache-friendly\" or "
         "\"standalone\", got \"cached\""},
        {R"({"compaction":{"summaryRequest":true}})",
         "override settings: field 'compaction.summaryRequest': expected \"cache-friendly\" or "
         "\"standalone\", got boolean"},
        {R"({"compaction":{"summaryRequest":2}})",
         "override settings: field 'compaction.summaryRequest': expected \"cache-friendly\" or "
         "\"standalone\", got 2"},
    };
    for (const auto& [json, message] : bad)
    {
        l.overrides = obj(json);
        const auto r = resolve_settings(l, diag);
        ASSERT_FALSE(r) << json;
        EXPECT_EQ(r.error(), make_error_code(errc::invalid_settings));
        EXPECT_EQ(diag.field, "compaction.summaryRequest");
        EXPECT_EQ(diag.message, message);
    }
}

TEST(settings, recall_gate_is_read_and_checked_per_layer)
{
    settings_layers l;
    diagnostics diag;
    EXPECT_FALSE(resolve_settings(l, diag)->recall_gate.has_value());  // the default depends on the mode
    l.global = obj(R"({"compaction":{"recallGate":"check"}})");
    EXPECT_EQ(resolve_settings(l, diag)->recall_gate, recall_gate_mode::check);
    l.overrides = obj(R"({"compaction":{"recallGate":"off"}})");
    EXPECT_EQ(resolve_settings(l, diag)->recall_gate, recall_gate_mode::off);
    l.overrides = obj(R"({"compaction":{"recallGate":"repair"}})");
    EXPECT_EQ(resolve_settings(l, diag)->recall_gate, recall_gate_mode::repair);
    const std::pair<const char*, const char*> bad[] = {
        {R"({"compaction":{"recallGate":"fix"}})",
         "override settings: field 'compaction.recallGate': expected \"off\", \"check\" or \"repair\", got "
         "\"fix\""},
        {R"({"compaction":{"recallGate":false}})",
         "override settings: field 'compaction.recallGate': expected \"off\", \"check\" or \"repair\", got "
         "boolean"},
    };
    for (const auto& [json, message] : bad)
    {
        l.overrides = obj(json);
        const auto r = resolve_settings(l, diag);
        ASSERT_FALSE(r) << json;
        EXPECT_EQ(r.error(), make_error_code(errc::invalid_settings));
        EXPECT_EQ(diag.field, "compaction.recallGate");
        EXPECT_EQ(diag.message, message);
    }
}
