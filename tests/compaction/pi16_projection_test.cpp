// Pi 1.6 with the delta's vectors: edits, system replay, checkpoints, estimates.
#include <agentctx/compaction/json_text.hpp>
#include <agentctx/compaction/projection.hpp>
#include <agentctx/compaction/token_accounting.hpp>

#include "session_text.hpp"

#include <gtest/gtest.h>

using namespace agentctx::compaction;
using agentctx::test::session_text;
using agentctx::test::tokens;
namespace json = boost::json;

namespace {

json::object tool(std::string_view name, std::string_view description)
{
    return {{"name", name}, {"description", description}, {"parameters", json::object{}}};
}

std::vector<std::string> roles(const session_context& ctx)
{
    std::vector<std::string> out;
    for (const auto& m : ctx.messages)
        out.emplace_back(to_string(m.msg->role));
    return out;
}

const message& message_of(const session_context& ctx, std::string_view entry_id)
{
    for (const auto& m : ctx.messages)
        if (m.entry_id == entry_id)
            return *m.msg;
    ADD_FAILURE() << "no message of " << entry_id;
    static const message none;
    return none;
}

std::string content_json(const message& m)
{
    if (m.content.is_string)
        return stringify(json::value(m.content.text));
    json::array a;
    for (const auto& b : m.content.blocks)
        if (const auto* t = std::get_if<text_block>(&b))
            a.push_back(json::object{{"type", "text"}, {"text", t->text}});
    return stringify(a);
}

session_context project(const session_text& s)
{
    const auto path = s.path();
    return build_session_context(path);
}

json::object zero_usage()
{
    return {{"input", 0}, {"output", 0}, {"cacheRead", 0}, {"cacheWrite", 0}, {"totalTokens", 0}};
}

}  // namespace

TEST(pi16_projection, system_replay_vector_of_delta_2_4)
{
    session_text s;
    s.system("s1", {{"pre", "P0"}, {"tools", "T0"}}, {tool("read", "r"), tool("bash", "b")});
    s.system("s2", {{"tools", "T1"}, {"extra", "E1"}}, {}, {json::object{{"name", "read"}}});
    s.system("s3", {{"pre", nullptr}}, {tool("read", "r2")}, {}, "more");
    s.user("u1", "hi");
    const auto ctx = project(s);
    ASSERT_TRUE(ctx.system);
    const double t1 = message_of(ctx, "s1").timestamp;
    json::object expected{
        {"role", "system"},
        {"content", "more"},
        {"sections", json::object{{"tools", "T1"}, {"extra", "E1"}}},
        {"toolsAdded", json::array{tool("bash", "b"), tool("read", "r2")}},
        {"timestamp", static_cast<std::int64_t>(t1)}};
    EXPECT_EQ(stringify(system_message_json(*ctx.system)), stringify(expected));
    // System messages after the latest compaction stay in the context, role system.
    EXPECT_EQ(roles(ctx), (std::vector<std::string>{"system", "system", "system", "user"}));
}

TEST(pi16_projection, sections_enumerate_integer_like_keys_first)
{
    session_text s;
    s.raw(
        R"({"type":"message","id":"s1","parentId":null,"timestamp":"2026-01-15T09:00:01.000Z","message":{"role":"system","content":"","sections":{"b":"B","10":"X","2":"Y"},"timestamp":1}})"
    );
    s.leaf = "s1";
    const auto ctx = project(s);
    ASSERT_TRUE(ctx.system);
    EXPECT_EQ(
        stringify(system_message_json(*ctx.system)),
        R"({"role":"system","content":"","sections":{"2":"Y","10":"X","b":"B"},"timestamp":1})"
    );
}

TEST(pi16_projection, compaction_projects_its_checkpoint_then_its_summary_delta_2_5)
{
    session_text s;
    s.system("S0", {{"pre", "P"}});
    s.user("u1", "a").assistant("a1", "b").user("u2", "c");
    s.system("S1", {{"cwd", "C"}});
    s.assistant("a2", "d");
    const json::object checkpoint{
        {"role", "system"},
        {"content", ""},
        {"sections", json::object{{"pre", "P"}, {"cwd", "C"}}},
        {"timestamp", 5}};
    s.entry(
        "compaction",
        "C1",
        {{"summary", "SUM"},
         {"firstKeptEntryId", "u2"},
         {"tokensBefore", 10},
         {"fromHook", false},
         {"systemMessage", checkpoint}}
    );
    s.user("u3", "e");
    s.system("S2", {{"extra", "E"}});
    s.assistant("a3", "f");
    const auto ctx = project(s);
    EXPECT_EQ(
        roles(ctx),
        (std::vector<std::string>{
            "system", "compactionSummary", "user", "assistant", "user", "system", "assistant"})
    );
    for (const auto& m : ctx.messages)
        EXPECT_NE(m.entry_id, "S1");  // a system message inside the kept range gives way
    ASSERT_TRUE(ctx.system);
    EXPECT_EQ(ctx.system->sections.size(), 3u);  // pre, cwd from the checkpoint, extra from S2
}

TEST(pi16_projection, legacy_compaction_without_checkpoint_drops_kept_system_messages)
{
    session_text s;
    s.user("u1", "a").assistant("a1", "b").user("u2", "c");
    s.system("S1", {{"cwd", "C"}});
    s.assistant("a2", "d");
    s.compaction("C1", "u2", "SUM");
    const auto ctx = project(s);
    EXPECT_EQ(roles(ctx), (std::vector<std::string>{"compactionSummary", "user", "assistant"}));
    EXPECT_FALSE(ctx.system);
}

TEST(pi16_projection, edits_latest_wins_and_are_branch_relative)
{
    session_text s;
    s.user("u1", "U1");
    s.assistant("a1", "A1-orig");
    s.tool_result("r1", "c1", "read", "R1-orig");
    s.custom_message("cm", "CM-orig");
    s.bash("bash", "out");
    s.entry("branch_summary", "bs", {{"fromId", "u1"}, {"summary", "BS"}});
    s.edit("e1", "u1", "U1-edit");
    s.edit("e2", "a1", "A1");
    s.edit("e3", "r1", "R1");
    s.edit("e4", "cm", "CM-edit");
    s.edit("e5", "bash", "B");
    s.edit("e6", "bs");
    s.edit("e7", "u1", json::array{json::object{{"type", "text"}, {"text", "U1-edit2"}}});
    const auto ctx = project(s);
    EXPECT_EQ(content_json(message_of(ctx, "u1")), R"([{"type":"text","text":"U1-edit2"}])");
    EXPECT_EQ(content_json(message_of(ctx, "a1")), R"([{"type":"text","text":"A1"}])");  // string normalized
    EXPECT_EQ(content_json(message_of(ctx, "r1")), R"([{"type":"text","text":"R1"}])");
    EXPECT_EQ(content_json(message_of(ctx, "cm")), R"("CM-edit")");
    EXPECT_EQ(message_of(ctx, "bash").output, "out");  // bashExecution keeps its fields
    for (const auto& m : ctx.messages)
        EXPECT_NE(m.entry_id, "bs");

    auto log = s.load();
    diagnostics diag;
    ASSERT_TRUE(log.branch("e3", diag));
    const auto at_e3 = build_session_context(log, diag).value();
    EXPECT_EQ(content_json(message_of(at_e3, "u1")), R"("U1-edit")");
    EXPECT_EQ(content_json(message_of(at_e3, "cm")), R"("CM-orig")");
    EXPECT_EQ(message_of(at_e3, "bs").summary, "BS");
}

TEST(pi16_projection, null_content_is_normalized)
{
    session_text s;
    s.message("u", {{"role", "user"}, {"content", nullptr}});
    s.message("a", {{"role", "assistant"}, {"content", nullptr}, {"stopReason", "stop"}});
    s.message("sy", {{"role", "system"}, {"content", nullptr}});
    const auto ctx = project(s);
    EXPECT_EQ(content_json(message_of(ctx, "u")), "[]");
    EXPECT_EQ(content_json(message_of(ctx, "a")), "[]");
    EXPECT_EQ(content_json(message_of(ctx, "sy")), R"("")");
}

TEST(pi16_projection, an_older_compaction_inside_the_kept_range_projects_nothing)
{
    session_text s;
    s.user("e1", tokens(100)).assistant("a1", tokens(100), 500);
    s.compaction("C1", "e1", "S1");
    s.user("u2", tokens(100)).assistant("a2", tokens(100), 600);
    s.compaction("C2", "e1", "S2");
    const auto ctx = project(s);
    ASSERT_EQ(ctx.entries.size(), 6u);  // C2, e1, a1, C1, u2, a2
    EXPECT_EQ(ctx.entries[3].source->id, "C1");
    EXPECT_TRUE(ctx.entries[3].messages.empty());
    EXPECT_EQ(
        roles(ctx), (std::vector<std::string>{"compactionSummary", "user", "assistant", "user", "assistant"})
    );
}

TEST(pi16_projection, retain_none_compaction_keeps_nothing_before_it)
{
    session_text s;
    s.user("u1", "a").assistant("a1", "b");
    s.compaction("C1", "C1", "SUM");
    s.user("u2", "c");
    const auto ctx = project(s);
    EXPECT_EQ(roles(ctx), (std::vector<std::string>{"compactionSummary", "user"}));
}

// Pi 1.6 vectors: T's JSON is 78 characters, [T] 80.
class projected_estimate : public ::testing::Test
{
protected:
    session_text base(bool zero_usage_assistant = false)
    {
        session_text s;
        s.system("S1", {{"a", std::string(400, 'p')}}, {tool("read", std::string(30, 'x'))});
        s.user("U1", std::string(400, 'x'));
        if (zero_usage_assistant)
            s.message(
                "A1",
                {{"role", "assistant"},
                 {"content", json::array{json::object{{"type", "text"}, {"text", std::string(400, 'x')}}}},
                 {"usage", zero_usage()},
                 {"stopReason", "stop"}}
            );
        else
            s.assistant("A1", std::string(400, 'x'), 5000);
        return s;
    }
};

TEST_F(projected_estimate, usage_valid_trailing_system_estimated_alone)
{
    auto s = base();
    s.system("S2", {{"a", std::string(800, 'q')}});
    s.user("U2", std::string(400, 'x'));
    EXPECT_EQ(estimate_projected_context_tokens(project(s)).tokens, 5300);
}

TEST_F(projected_estimate, an_edit_after_the_usage_falls_back_to_the_pure_estimate)
{
    auto s = base();
    s.system("S2", {{"a", std::string(800, 'q')}});
    s.user("U2", std::string(400, 'x'));
    s.edit("E1", "U1", "short");
    EXPECT_EQ(estimate_projected_context_tokens(project(s)).tokens, 422);
}

TEST_F(projected_estimate, an_edit_before_the_usage_keeps_it)
{
    session_text s;
    s.system("S1", {{"a", std::string(400, 'p')}}, {tool("read", std::string(30, 'x'))});
    s.user("U1", std::string(400, 'x'));
    s.edit("E1", "U1", "short");
    s.assistant("A1", std::string(400, 'x'), 5000);
    s.system("S2", {{"a", std::string(800, 'q')}});
    s.user("U2", std::string(400, 'x'));
    EXPECT_EQ(estimate_projected_context_tokens(project(s)).tokens, 5300);
}

TEST_F(projected_estimate, after_a_compaction_the_checkpoint_counts_once)
{
    auto s = base();
    const json::object checkpoint{
        {"role", "system"},
        {"content", ""},
        {"sections", json::object{{"a", std::string(400, 'p')}}},
        {"toolsAdded", json::array{tool("read", std::string(30, 'x'))}},
        {"timestamp", 1}};
    s.entry(
        "compaction",
        "C",
        {{"summary", std::string(100, 's')},
         {"firstKeptEntryId", "U1"},
         {"tokensBefore", 1},
         {"fromHook", false},
         {"systemMessage", checkpoint}}
    );
    s.user("U2", std::string(40, 'x'));
    EXPECT_EQ(estimate_projected_context_tokens(project(s)).tokens, 355);
}

TEST_F(projected_estimate, all_zero_usage_is_not_usage)
{
    auto s = base(true);
    s.user("U2", std::string(40, 'x'));
    const auto ctx = project(s);
    EXPECT_EQ(estimate_projected_context_tokens(ctx).tokens, 330);
    EXPECT_FALSE(has_usage(message_of(ctx, "A1")));
}

TEST(pi16_accounting, last_assistant_usage_skips_all_zero_usage)
{
    session_text s;
    s.user("u1", "a").assistant("a1", "b", 3000);
    s.message(
        "a2",
        {{"role", "assistant"}, {"content", json::array{}}, {"usage", zero_usage()}, {"stopReason", "stop"}}
    );
    const auto est = estimate_context_tokens(project(s).messages);
    ASSERT_TRUE(est.last_usage_index);
    EXPECT_EQ(*est.last_usage_index, 1u);
    EXPECT_EQ(est.usage_tokens, 3000);
}

TEST(pi16_accounting, context_usage_is_unknown_after_a_compaction_until_fresh_usage)
{
    session_text s;
    s.user("u1", tokens(100)).assistant("a1", tokens(100), 5000);
    s.compaction("C", "u1", "SUM");
    s.user("u2", "x");
    EXPECT_FALSE(context_usage(project(s), 200000)->tokens);
    s.assistant("a2", "y", 900);
    EXPECT_EQ(context_usage(project(s), 200000)->tokens, 900);
}
