// Tool-result clearing decided on the projected context: trigger, keep, running batch, exclusions,
// clearAtLeast.
#include <agentctx/compaction/json_text.hpp>
#include <agentctx/compaction/projection.hpp>
#include <agentctx/compaction/tool_clearing.hpp>

#include "session_text.hpp"

#include <gtest/gtest.h>

using namespace agentctx::compaction;
using agentctx::test::session_text;
using agentctx::test::tokens;
namespace json = boost::json;

namespace {

// A prompt, then `n` tool rounds of a 2,000-token read each, then (unless `running`) a final answer.
session_text rounds(int n, bool running = false)
{
    session_text s;
    s.user("u", "fix the bug");
    for (int i = 1; i <= n; ++i)
    {
        const auto k = std::to_string(i);
        s.tool_call(
            "a" + k,
            "c" + k,
            i % 2 ? "read" : "bash",
            i % 2 ? json::object{{"path", "src/f" + k + ".cpp"}} : json::object{{"command", "make test" + k}}
        );
        s.tool_result("r" + k, "c" + k, i % 2 ? "read" : "bash", tokens(2000));
    }
    if (!running)
        s.assistant("done", "fixed");
    return s;
}

std::vector<context_message> context_of(const session_text& s)
{
    const auto path = s.path();
    return build_session_context(path).messages;
}

clear_tool_results_settings settings()
{
    clear_tool_results_settings c;
    c.trigger = {10000, 0};
    c.keep = 3;
    c.clear_at_least = 1000;
    return c;
}

clearing_plan plan(
    const std::vector<context_message>& ctx,
    const clear_tool_results_settings& c,
    std::int64_t tokens_now = 12000
)
{
    clearing_input in;
    in.context = ctx;
    in.context_tokens = tokens_now;
    in.threshold = 100000;
    return plan_tool_clearing(c, in);
}

std::vector<std::string> targets(const clearing_plan& p)
{
    std::vector<std::string> out;
    for (const auto& e : p.edits)
        out.push_back(e.target_id);
    return out;
}

}  // namespace

TEST(tool_clearing, clears_every_result_older_than_the_kept_tool_uses)
{
    const auto ctx = context_of(rounds(6));
    const auto p = plan(ctx, settings());
    EXPECT_EQ(targets(p), (std::vector<std::string>{"r1", "r2", "r3"}));
    EXPECT_EQ(p.results, 3);
    const std::string first =
        "[Tool result cleared: read(path: src/f1.cpp), 8000 chars (~2000 tokens); the original is entry r1]";
    EXPECT_EQ(
        stringify(p.edits[0].replacement),
        stringify(json::object{{"content", json::array{json::object{{"type", "text"}, {"text", first}}}}})
    );
    EXPECT_EQ(p.edits[0].tokens, 2000 - static_cast<std::int64_t>((first.size() + 3) / 4));
    EXPECT_EQ(p.tokens, p.edits[0].tokens + p.edits[1].tokens + p.edits[2].tokens);
    EXPECT_NE(stringify(p.edits[1].replacement).find("bash(command: make test2)"), std::string::npos);
}

TEST(tool_clearing, nothing_under_the_trigger_and_a_fraction_is_of_the_threshold)
{
    const auto ctx = context_of(rounds(6));
    auto c = settings();
    EXPECT_TRUE(plan(ctx, c, 9999).edits.empty());
    EXPECT_EQ(plan(ctx, c, 9999).reason, "under the clearing trigger (9999 < 10000)");
    c.trigger = {0, 0.5};  // of the 100,000-token threshold
    EXPECT_TRUE(plan(ctx, c, 49999).edits.empty());
    EXPECT_EQ(plan(ctx, c, 50000).edits.size(), 3u);
}

TEST(tool_clearing, clear_at_least_refuses_a_clearing_that_frees_too_little)
{
    const auto ctx = context_of(rounds(6));
    auto c = settings();
    const auto freed = plan(ctx, c).tokens;
    c.clear_at_least = freed + 1;
    const auto p = plan(ctx, c);
    EXPECT_TRUE(p.edits.empty());
    EXPECT_EQ(p.tokens, 0);
    c.clear_at_least = freed;
    EXPECT_EQ(plan(ctx, c).edits.size(), 3u);
}

TEST(tool_clearing, never_clears_the_running_batch_even_with_keep_zero)
{
    // The last assistant calls c5 and c6 at once; their results are the running batch.
    session_text s = rounds(4, true);
    json::array calls{
        json::object{
            {"type", "toolCall"}, {"id", "c5"}, {"name", "read"}, {"arguments", json::object{{"path", "x"}}}},
        json::object{
            {"type", "toolCall"},
            {"id", "c6"},
            {"name", "read"},
            {"arguments", json::object{{"path", "y"}}}}};
    s.message(
        "a5",
        {{"role", "assistant"},
         {"content", calls},
         {"api", "anthropic-messages"},
         {"provider", "anthropic"},
         {"model", "claude-sonnet-4-5"},
         {"stopReason", "toolUse"}}
    );
    s.tool_result("r5", "c5", "read", tokens(3000)).tool_result("r6", "c6", "read", tokens(3000));
    auto c = settings();
    c.keep = 0;
    EXPECT_EQ(targets(plan(context_of(s), c)), (std::vector<std::string>{"r1", "r2", "r3", "r4"}));
    c.keep = 3;  // the batch counts among the newest tool uses: r4 is the third
    EXPECT_EQ(targets(plan(context_of(s), c)), (std::vector<std::string>{"r1", "r2", "r3"}));
}

TEST(tool_clearing, excluded_tools_and_protected_entries_stay)
{
    const auto ctx = context_of(rounds(6));
    auto c = settings();
    c.exclude_tools = {"bash"};
    EXPECT_EQ(targets(plan(ctx, c)), (std::vector<std::string>{"r1", "r3"}));
    clearing_input in;
    in.context = ctx;
    in.context_tokens = 12000;
    in.protected_entry = [](const std::string& id) { return id == "r3"; };
    EXPECT_EQ(targets(plan_tool_clearing(settings(), in)), (std::vector<std::string>{"r1", "r2"}));
}

TEST(tool_clearing, a_cleared_result_is_not_cleared_again)
{
    session_text s = rounds(6);
    const auto first = plan(context_of(s), settings());
    s.edit("e1", "r1", first.edits[0].replacement.at("content"));
    const auto again = plan(context_of(s), settings());
    EXPECT_EQ(targets(again), (std::vector<std::string>{"r2", "r3"}));
}

TEST(tool_clearing, small_results_are_left_alone)
{
    session_text s;
    s.user("u", "go");
    for (int i = 1; i <= 6; ++i)
        s.tool_call("a" + std::to_string(i), "c" + std::to_string(i), "ls", {})
            .tool_result(
                "r" + std::to_string(i), "c" + std::to_string(i), "ls", i == 2 ? tokens(5000) : "ok"
            );
    s.assistant("done", "ok");
    EXPECT_EQ(targets(plan(context_of(s), settings())), (std::vector<std::string>{"r2"}));
}

TEST(tool_clearing, clears_the_arguments_of_cleared_calls_when_asked)
{
    session_text s;
    s.user("u", "write");
    for (int i = 1; i <= 5; ++i)
    {
        const auto k = std::to_string(i);
        s.tool_call(
            "a" + k, "c" + k, i == 1 ? "write" : "read", {{"path", "f" + k}, {"content", tokens(1000)}}
        );
        s.tool_result("r" + k, "c" + k, i == 1 ? "write" : "read", tokens(2000));
    }
    s.assistant("done", "ok");
    const auto path = s.path();
    auto c = settings();
    c.clear_input_tools = {"write"};
    clearing_input in;
    const auto ctx = build_session_context(path).messages;
    in.context = ctx;
    in.context_tokens = 12000;
    in.assistant_content = [&](const std::string& id) -> const json::array* {
        for (const auto& e : path)
            if (e->id == id)
                return &e->raw.at("message").as_object().at("content").as_array();
        return nullptr;
    };
    const auto p = plan_tool_clearing(c, in);
    ASSERT_EQ(targets(p), (std::vector<std::string>{"a1", "r1", "r2"}));
    EXPECT_TRUE(p.edits[0].input);
    const auto& block = p.edits[0].replacement.at("content").as_array().at(0).as_object();
    EXPECT_EQ(block.at("id"), "c1");
    EXPECT_TRUE(block.at("arguments").as_object().empty());
    EXPECT_EQ(
        p.edits[0].tokens,
        static_cast<std::int64_t>(
            (stringify(json::object{{"path", "f1"}, {"content", tokens(1000)}}).size() + 3) / 4
        )
    );
    EXPECT_EQ(p.results, 2);
}

TEST(tool_clearing, on_by_default_in_agentctx_mode_never_in_pi_mode)
{
    clear_tool_results_settings c;
    EXPECT_TRUE(clearing_enabled(c, compat_mode::agentctx));
    EXPECT_FALSE(clearing_enabled(c, compat_mode::pi));
    c.enabled = true;
    EXPECT_FALSE(clearing_enabled(c, compat_mode::pi));
    c.enabled = false;
    EXPECT_FALSE(clearing_enabled(c, compat_mode::agentctx));
}

TEST(tool_clearing, argument_key_names_the_path_or_command)
{
    EXPECT_EQ(argument_key({{"command", "ls"}, {"path", "a"}}), "path: a");
    EXPECT_EQ(argument_key({{"cmd", "ls -la"}}), "cmd: ls -la");
    EXPECT_EQ(argument_key({{"n", 3}}), "");
    EXPECT_EQ(argument_key({{"path", std::string(200, 'p')}}), "path: " + std::string(117, 'p') + "...");
}

TEST(tool_clearing_settings, reads_and_refuses_the_section)
{
    settings_layers layers;
    layers.overrides =
        json::parse(R"({"compaction": {"clearToolResults": {"enabled": true, "trigger": 0.25, "keep": 5,
        "clearAtLeast": 2000, "excludeTools": ["todo"], "clearToolInputs": ["write"]}, "workingBudget": 80000}})"
        )
            .as_object();
    diagnostics diag;
    const auto s = resolve_settings(layers, diag).value();
    EXPECT_EQ(s.clear_tool_results.enabled, true);
    EXPECT_EQ(s.clear_tool_results.trigger, (token_amount{0, 0.25}));
    EXPECT_EQ(s.clear_tool_results.keep, 5);
    EXPECT_EQ(s.clear_tool_results.clear_at_least, 2000);
    EXPECT_EQ(s.clear_tool_results.exclude_tools, std::vector<std::string>{"todo"});
    EXPECT_EQ(s.clear_tool_results.clear_input_tools, std::vector<std::string>{"write"});
    EXPECT_FALSE(s.clear_tool_results.clear_all_inputs);
    EXPECT_EQ(s.working_budget, (token_amount{80000, 0}));
    for (const char* bad :
         {R"({"compaction": {"clearToolResults": {"trigger": -1}}})",
          R"({"compaction": {"clearToolResults": {"keep": 1.5}}})",
          R"({"compaction": {"clearToolResults": {"clearToolInputs": "yes"}}})",
          R"({"compaction": {"clearToolResults": []}})",
          R"({"compaction": {"workingBudget": "80k"}})"})
    {
        layers.overrides = json::parse(bad).as_object();
        EXPECT_EQ(resolve_settings(layers, diag).error(), errc::invalid_settings) << bad;
    }
    EXPECT_EQ(
        diag.message,
        "override settings: field 'compaction.workingBudget': expected a fraction in (0, 1] or a token "
        "count, got \"80k\""
    );
}
