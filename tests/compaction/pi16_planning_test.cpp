// Pi 1.6 with the delta's vectors: projected cut points, recovery suffix, preparation.
#include <agentctx/compaction/prepare.hpp>

#include "session_text.hpp"

#include <gtest/gtest.h>

using namespace agentctx::compaction;
using agentctx::test::ids;
using agentctx::test::keep;
using agentctx::test::session_text;
namespace json = boost::json;

namespace {

std::string x(std::size_t n)
{
    return std::string(n, 'x');
}

result<compaction_preparation> plan(const session_text& s, std::int64_t k, compat_mode mode = compat_mode::pi)
{
    diagnostics diag;
    return prepare_compaction(s.path(), keep(k), {.mode = mode}, diag);
}

json::object call_block(std::string_view id, std::string_view args_path)
{
    return {
        {"type", "toolCall"}, {"id", id}, {"name", "read"}, {"arguments", json::object{{"path", args_path}}}};
}

session_text& assistant_calls(
    session_text& s, std::string_view id, json::array calls, const char* stop = "toolUse"
)
{
    return s.message(id, {{"role", "assistant"}, {"content", std::move(calls)}, {"stopReason", stop}});
}

json::object usage_of(std::int64_t total)
{
    return session_text::usage(total);
}

// Pi 1.6 base B = [U 4000, A 4000 (usage 3000), U 8000, A_len ("partial", length, usage 100)].
session_text recovery_base()
{
    session_text s;
    s.user("u0", x(4000)).assistant("a0", x(4000), 3000);
    s.user("u1", x(8000));
    s.message(
        "alen",
        {{"role", "assistant"},
         {"content", json::array{json::object{{"type", "text"}, {"text", "partial"}}}},
         {"usage", usage_of(100)},
         {"stopReason", "length"}}
    );
    return s;
}

struct expectation
{
    std::string first_kept;
    bool split;
    std::vector<std::string> history, prefix;
};

void expect_plan(
    const session_text& s, std::int64_t k, const expectation& e, compat_mode mode = compat_mode::pi
)
{
    auto p = plan(s, k, mode);
    ASSERT_TRUE(p) << p.error().message();
    EXPECT_EQ(p->first_kept_entry_id, e.first_kept);
    EXPECT_EQ(p->is_split_turn, e.split);
    EXPECT_EQ(ids(p->messages_to_summarize), e.history);
    EXPECT_EQ(ids(p->turn_prefix_messages), e.prefix);
}

}  // namespace

// Pi 1.6, the 1.6 column (keep 1000).
TEST(pi16_cut, trailing_oversized_results_keep_their_assistant)
{
    session_text s;
    s.user("u0", x(400)).assistant("a0", x(400)).user("u1", x(400));
    assistant_calls(s, "a1", {call_block("c1", "p"), call_block("c2", "q")});
    s.tool_result("r1", "c1", "read", x(8000)).tool_result("r2", "c2", "read", x(8000));
    expect_plan(s, 1000, {"a1", true, {"u0", "a0"}, {"u1"}});
    // agentctx keeps the newest exchanges of the current turn (keepRecentExchanges): here its only
    // one, so the turn is kept whole.
    expect_plan(s, 1000, {"u1", false, {"u0", "a0"}, {}}, compat_mode::agentctx);
}

TEST(pi16_cut, custom_messages_count_toward_the_budget)
{
    session_text s;
    s.user("u0", x(4000))
        .assistant("a0", x(4000))
        .custom_message("cm", x(40))
        .user("u1", x(2000))
        .assistant("a1", x(2000));
    expect_plan(s, 1000, {"u1", false, {"u0", "a0", "cm"}, {}});
    EXPECT_EQ(plan(s, 1000)->tokens_before, 3010);  // all-zero usage: the pure estimate (0.73.1: 0)

    session_text t;
    t.user("u0", x(4000)).assistant("a0", x(4000)).custom_message("cm", x(2000)).assistant("a1", x(2000));
    expect_plan(t, 1000, {"cm", false, {"u0", "a0"}, {}});

    session_text v;
    v.user("u0", x(4000))
        .assistant("a0", x(4000))
        .user("u1", x(400))
        .custom_message("cm", x(4000))
        .assistant("a1", x(40));
    expect_plan(v, 1000, {"cm", false, {"u0", "a0", "u1"}, {}});
}

TEST(pi16_cut, a_bash_execution_starts_a_turn)
{
    session_text s;
    s.user("u0", x(4000)).assistant("a0", x(4000)).bash("b", x(2000)).assistant("a1", x(2000));
    expect_plan(s, 1000, {"b", false, {"u0", "a0"}, {}});
}

TEST(pi16_cut, too_small_sessions_are_nothing_to_compact)
{
    session_text s;
    s.user("u0", x(40)).assistant("a0", x(40));
    auto p = plan(s, 20000);
    ASSERT_FALSE(p);
    EXPECT_EQ(p.error(), make_error_code(errc::nothing_to_compact));
}

TEST(pi16_cut, the_look_back_passes_omitted_entries)
{
    session_text s;
    s.user("u0", x(4000));
    s.message(
        "aerr",
        {{"role", "assistant"}, {"content", json::array{}}, {"stopReason", "error"}, {"errorMessage", "boom"}}
    );
    s.edit("e", "aerr");
    s.user("u1", x(4000)).assistant("a1", x(4000));
    expect_plan(s, 1500, {"aerr", true, {}, {"u0"}});
    // agentctx: the prompt chosen as the cut starts the kept turn; omitted entries are like metadata.
    expect_plan(s, 1500, {"aerr", false, {"u0"}, {}}, compat_mode::agentctx);
}

TEST(pi16_cut, metadata_before_a_prompt_pi_reports_a_split_agentctx_does_not)
{
    session_text s;
    s.user("u0", x(4000))
        .assistant("a0", x(4000))
        .model_change("mc")
        .user("u1", x(2000))
        .assistant("a1", x(2000));
    expect_plan(s, 1000, {"mc", true, {}, {"u0", "a0"}});
    expect_plan(s, 1000, {"mc", false, {"u0", "a0"}, {}}, compat_mode::agentctx);
}

TEST(pi16_cut, interleaved_rounds_pi_orphans_a_result_agentctx_does_not)
{
    session_text s;
    s.user("u0", x(400));
    assistant_calls(s, "a1", {call_block("cx", "x")});
    assistant_calls(s, "a2", {call_block("cy", "yyyy")});  // read + {"path":"yyyy"}: 19 chars, 5 tokens
    s.tool_result("rx", "cx", "read", x(4000)).tool_result("ry", "cy", "read", x(4000));
    s.user("u1", x(400)).assistant("a3", x(400));
    expect_plan(s, 2205, {"a2", true, {}, {"u0", "a1"}});
    expect_plan(s, 2205, {"u1", false, {"u0", "a1", "a2", "rx", "ry"}, {}}, compat_mode::agentctx);
}

// Pi 1.6 table.
TEST(pi16_recovery_suffix, an_omitted_failed_attempt_is_passed)
{
    auto s = recovery_base();
    s.edit("e1", "alen");
    expect_plan(s, 1000, {"alen", true, {"u0", "a0"}, {"u1"}});
    expect_plan(s, 1000, {"alen", true, {"u0", "a0"}, {"u1"}}, compat_mode::agentctx);
    EXPECT_EQ(plan(s, 1000)->tokens_before, 4000);  // the edit follows every usage: pure estimate
    EXPECT_EQ(plan(recovery_base(), 1000)->tokens_before, 100);  // without it: the length response's usage
    s.model_change("mc");
    expect_plan(s, 1000, {"alen", true, {"u0", "a0"}, {"u1"}});
}

TEST(pi16_recovery_suffix, a_visible_entry_or_a_replacement_of_the_input_blocks)
{
    auto s = recovery_base();
    s.edit("e1", "alen").custom_message("cm", "hi");
    expect_plan(s, 1000, {"u1", false, {"u0", "a0"}, {}});
    auto t = recovery_base();
    t.edit("e1", "alen").edit("e2", "u1", json::value(x(8000)));
    expect_plan(t, 1000, {"u1", false, {"u0", "a0"}, {}});
}

TEST(pi16_recovery_suffix, a_replacement_of_the_omitted_attempt_itself_does_not_block)
{
    auto s = recovery_base();
    s.edit("e1", "alen", "z").edit("e2", "alen");
    expect_plan(s, 1000, {"alen", true, {"u0", "a0"}, {"u1"}});
}

TEST(pi16_recovery_suffix, a_tool_call_attempt_needs_every_part_omitted)
{
    auto make = [](bool omit_call) {
        session_text s;
        s.user("u0", x(4000)).assistant("a0", x(4000), 3000);
        s.user("u1", x(8000));
        assistant_calls(s, "alen", {call_block("c1", "p")}, "length");
        s.tool_result("r1", "c1", "read", "not executed");
        if (omit_call)
            s.edit("e1", "alen");
        s.edit("e2", "r1");
        return s;
    };
    expect_plan(make(true), 1000, {"alen", true, {"u0", "a0"}, {"u1"}});
    expect_plan(make(false), 1000, {"u1", false, {"u0", "a0"}, {}});
}

TEST(pi16_recovery_suffix, under_budget_nothing_to_compact)
{
    auto s = recovery_base();
    s.edit("e1", "alen");
    auto p = plan(s, 100000);
    ASSERT_FALSE(p);
    EXPECT_EQ(p.error(), make_error_code(errc::nothing_to_compact));
}

// Pi 1.6 repeated compactions and the checklist cases for them.
TEST(pi16_prepare, retain_none_previous_compaction)
{
    session_text s;
    s.user("u0", x(400)).assistant("a0", x(400), 500);
    s.entry(
        "compaction",
        "C1",
        {{"summary", "S1"},
         {"firstKeptEntryId", "C1"},
         {"tokensBefore", 500},
         {"details",
          json::object{{"readFiles", json::array{"r.ts"}}, {"modifiedFiles", json::array{"m.ts"}}}},
         {"fromHook", false}}
    );
    s.user("u1", x(4000)).assistant("a1", x(4000), 2100).user("u2", x(400)).assistant("a2", x(400), 2300);
    auto p = plan(s, 150);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->first_kept_entry_id, "u2");
    EXPECT_EQ(p->first_kept_index, 5u);
    EXPECT_FALSE(p->is_split_turn);
    EXPECT_EQ(ids(p->messages_to_summarize), (std::vector<std::string>{"u1", "a1"}));
    EXPECT_EQ(p->previous_summary, "S1");
    EXPECT_EQ(p->file_ops.read, (std::set<std::string>{"r.ts"}));
    EXPECT_EQ(p->file_ops.edited, (std::set<std::string>{"m.ts"}));
    EXPECT_EQ(p->tokens_before, 2300);
}

TEST(pi16_prepare, an_older_compaction_in_the_kept_range_and_a_system_entry)
{
    session_text s;
    s.user("e1", x(400)).assistant("a0", x(400), 500);
    s.compaction("C1", "e1", "S1");
    s.user("u1", x(400)).assistant("a1", x(400), 600);
    s.compaction("C2", "e1", "S2");
    s.system("sy", {{"a", "x"}});
    s.user("u2", x(400)).assistant("a2", x(400), 700);
    auto p = plan(s, 150);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->first_kept_entry_id, "u2");
    EXPECT_EQ(p->first_kept_projected, 7u);
    EXPECT_EQ(ids(p->messages_to_summarize), (std::vector<std::string>{"e1", "a0", "u1", "a1"}));
    EXPECT_EQ(p->previous_summary, "S2");
    EXPECT_EQ(p->tokens_before, 700);
}

TEST(pi16_prepare, split_turn_with_no_history)
{
    session_text s;
    s.model_change("mc").user("u0", x(40)).assistant("a0", x(40));
    auto p = plan(s, 1);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->first_kept_entry_id, "a0");
    EXPECT_TRUE(p->is_split_turn);
    EXPECT_EQ(p->turn_start_index, 1u);
    EXPECT_TRUE(p->messages_to_summarize.empty());
    EXPECT_EQ(ids(p->turn_prefix_messages), (std::vector<std::string>{"u0"}));
}

TEST(pi16_prepare, nested_calls_feed_file_lists)
{
    session_text s;
    s.user("u0", "go");
    s.message(
        "a0",
        {{"role", "assistant"},
         {"content",
          json::array{json::object{
              {"type", "toolCall"}, {"id", "t7"}, {"name", "codemode"}, {"arguments", json::object{}}}}},
         {"stopReason", "toolUse"}}
    );
    json::array calls{
        json::object{
            {"id", "t7/1"},
            {"name", "read"},
            {"arguments", json::object{{"path", "n/read.ts"}}},
            {"status", "ok"}},
        json::object{
            {"id", "t7/2"},
            {"name", "edit"},
            {"arguments", json::object{{"path", "n/edit.ts"}}},
            {"status", "error"}},
        json::object{{"id", "t7/3"}, {"name", "write"}, {"argumentsBytes", 20480}, {"status", "ok"}},
        json::object{
            {"id", "t7/4"},
            {"name", "grep"},
            {"arguments", json::object{{"path", "n/grep.ts"}}},
            {"status", "ok"}},
    };
    s.message(
        "r0",
        {{"role", "toolResult"},
         {"toolCallId", "t7"},
         {"toolName", "codemode"},
         {"content", json::array{json::object{{"type", "text"}, {"text", "ok"}}}},
         {"isError", false},
         {"durationMs", 412},
         {"nestedCalls", json::object{{"calls", calls}, {"complete", false}}}}
    );
    s.user("u1", x(4000)).assistant("a1", x(4000));
    auto p = plan(s, 1000);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->file_ops.read, (std::set<std::string>{"n/read.ts"}));
    EXPECT_EQ(p->file_ops.edited, (std::set<std::string>{"n/edit.ts"}));
    EXPECT_TRUE(p->file_ops.written.empty());
}

TEST(pi16_prepare, system_messages_are_never_summarized)
{
    session_text s;
    s.system("sy", {{"pre", x(4000)}});
    s.user("u0", x(4000)).assistant("a0", x(4000)).user("u1", x(4000)).assistant("a1", x(4000));
    auto p = plan(s, 1000);
    ASSERT_TRUE(p);
    EXPECT_EQ(ids(p->messages_to_summarize), (std::vector<std::string>{"u0", "a0"}));
}

TEST(pi16_prepare, a_migrated_v1_compaction_starts_the_range_at_its_kept_boundary)
{
    // v1: no ids; the compaction names its kept entry by index (the header is index 0).
    session_text s(1);
    s.raw(
        R"({"type":"message","timestamp":"2026-01-15T09:00:01.000Z","message":{"role":"user","content":")" +
        x(4000) + R"("}})"
    );
    s.raw(
        R"({"type":"message","timestamp":"2026-01-15T09:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":")" +
        x(4000) + R"("}],"stopReason":"stop"}})"
    );
    s.raw(
        R"({"type":"message","timestamp":"2026-01-15T09:00:03.000Z","message":{"role":"user","content":")" +
        x(4000) + R"("}})"
    );
    s.raw(
        R"({"type":"message","timestamp":"2026-01-15T09:00:04.000Z","message":{"role":"assistant","content":[{"type":"text","text":")" +
        x(4000) + R"("}],"stopReason":"stop"}})"
    );
    s.raw(
        R"({"type":"compaction","timestamp":"2026-01-15T09:00:05.000Z","summary":"S","firstKeptEntryIndex":3,"tokensBefore":4000})"
    );
    s.raw(
        R"({"type":"message","timestamp":"2026-01-15T09:00:06.000Z","message":{"role":"user","content":")" +
        x(4000) + R"("}})"
    );
    s.raw(
        R"({"type":"message","timestamp":"2026-01-15T09:00:07.000Z","message":{"role":"assistant","content":[{"type":"text","text":")" +
        x(4000) + R"("}],"stopReason":"stop"}})"
    );
    auto log = s.load();
    diagnostics diag;
    auto p = prepare_compaction(log, keep(1000), {.mode = compat_mode::pi}, diag);
    ASSERT_TRUE(p) << diag.message;
    // Entries 3 and 4 (the second user/assistant pair) were kept by the first compaction: they are
    // summarized now (0 before the fix: the range started after the compaction); the new user
    // message is the prefix of the split turn ending in the last assistant.
    EXPECT_EQ(p->messages_to_summarize.size(), 2u);
    EXPECT_EQ(p->turn_prefix_messages.size(), 1u);
    EXPECT_TRUE(p->is_split_turn);
    EXPECT_EQ(p->previous_summary, "S");
}
