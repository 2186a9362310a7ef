// Required entries hold the cut: never summarized, and a compaction they block says so.
#include <agentctx/compaction/checkpoint.hpp>
#include <agentctx/compaction/prepare.hpp>
#include <agentctx/compaction/required.hpp>

#include "session_text.hpp"

#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

using namespace agentctx::compaction;
using agentctx::test::ids;
using agentctx::test::keep;
using agentctx::test::session_text;
using agentctx::test::tokens;
namespace json = boost::json;

namespace {

// Eight turns of 200 tokens; a host note after the third.
session_text turns()
{
    session_text s;
    for (int i = 0; i < 8; ++i)
    {
        const std::string n = std::to_string(i);
        s.user("u" + n, tokens(100)).assistant("a" + n, tokens(100));
        if (i == 2)
            s.custom_message("note", "the deploy window is Friday");
    }
    return s;
}

result<compaction_preparation> plan(
    const session_text& s,
    const required_policy& required,
    diagnostics& diag,
    compat_mode mode = compat_mode::agentctx
)
{
    plan_options opts;
    opts.mode = mode;
    opts.required = &required;
    return prepare_compaction(s.path(), keep(300), opts, diag);
}

}  // namespace

TEST(required, the_cut_stops_at_the_oldest_required_entry)
{
    const auto s = turns();
    diagnostics diag;
    EXPECT_EQ(plan(s, {}, diag).value().first_kept_entry_id, "a6");  // keepRecentTokens alone
    for (const auto mode : {compat_mode::agentctx, compat_mode::pi})
    {
        const auto p = plan(s, required_policy{.ids = {"u4", "u6"}}, diag, mode).value();
        EXPECT_EQ(p.first_kept_entry_id, "u4");
        EXPECT_FALSE(p.is_split_turn);
        EXPECT_EQ(
            ids(p.messages_to_summarize),
            (std::vector<std::string>{"u0", "a0", "u1", "a1", "u2", "a2", "note", "u3", "a3"})
        );
    }
}

TEST(required, a_custom_type_or_a_predicate_requires_entries_too)
{
    const auto s = turns();
    diagnostics diag;
    EXPECT_EQ(plan(s, required_policy{.custom_types = {"note"}}, diag).value().first_kept_entry_id, "note");
    const required_policy by_predicate{.predicate = [](const entry& e) { return e.id == "a5"; }};
    const auto p = plan(s, by_predicate, diag).value();
    EXPECT_EQ(p.first_kept_entry_id, "a5");  // an assistant without tool calls is a cut point itself
    EXPECT_TRUE(p.is_split_turn);            // u5 starts the turn: it is the split turn's prefix
    EXPECT_EQ(ids(p.messages_to_summarize).back(), "a4");
}

TEST(required, a_required_first_entry_leaves_nothing_to_summarize_and_is_budget_exceeded)
{
    const auto s = turns();
    diagnostics diag;
    const auto p = plan(s, required_policy{.ids = {"u0"}}, diag);
    ASSERT_FALSE(p);
    EXPECT_EQ(p.error(), make_error_code(errc::budget_exceeded));
    EXPECT_EQ(diag.field, "u0");
    EXPECT_NE(diag.message.find("required entry u0"), std::string::npos) << diag.message;
}

TEST(required, settings_are_read_strictly)
{
    diagnostics diag;
    const auto ok = parse_required_settings(
        json::parse(R"({"required":{"ids":["u1"],"customTypes":["spec"]}})").as_object(), diag
    );
    ASSERT_TRUE(ok) << diag.message;
    EXPECT_EQ(ok->ids, (std::vector<std::string>{"u1"}));
    EXPECT_EQ(ok->custom_types, (std::vector<std::string>{"spec"}));
    EXPECT_TRUE(parse_required_settings(json::object{}, diag).value().empty());
    const auto bad =
        parse_required_settings(json::parse(R"({"required":{"ids":["u1",""]}})").as_object(), diag);
    EXPECT_EQ(bad.error(), make_error_code(errc::invalid_settings));
    EXPECT_EQ(diag.field, "required.ids[1]");
    EXPECT_FALSE(parse_required_settings(json::parse(R"({"required":["u1"]})").as_object(), diag));
    EXPECT_EQ(diag.field, "required");
}

TEST(required, requirements_enter_the_config_digest_only_when_set)
{
    summary_config plain;
    summary_config with = plain;
    EXPECT_EQ(config_digest(plain), config_digest(with));
    with.required_ids = {"u1"};
    EXPECT_NE(config_digest(plain), config_digest(with));
}
