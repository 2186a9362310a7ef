// prepare_compaction: ranges, repeated compaction, file lists, fail-closed errors.
#include <agentctx/compaction/prepare.hpp>

#include "session_text.hpp"

#include <gtest/gtest.h>

using namespace agentctx::compaction;
using agentctx::test::ids;
using agentctx::test::keep;
using agentctx::test::session_text;
using agentctx::test::tokens;
namespace json = boost::json;

namespace {

json::object file_call(std::string_view id, std::string_view name, std::string_view path)
{
    return {{"type", "toolCall"}, {"id", id}, {"name", name}, {"arguments", json::object{{"path", path}}}};
}

}  // namespace

TEST(prepare, first_compaction_summarizes_before_the_cut)
{
    session_text s;
    s.user("u1", tokens(100)).assistant("a1", tokens(100));
    s.user("u2", tokens(100)).assistant("a2", tokens(100));
    diagnostics diag;
    const auto p = prepare_compaction(s.path(), keep(200), {}, diag).value();
    EXPECT_EQ(p.first_kept_entry_id, "u2");
    EXPECT_EQ(ids(p.messages_to_summarize), (std::vector<std::string>{"u1", "a1"}));
    EXPECT_FALSE(p.is_split_turn);
    EXPECT_FALSE(p.previous_summary);
    EXPECT_EQ(p.tokens_before, 400);
}

TEST(prepare, repeated_compaction_restarts_at_the_previous_kept_entry_and_carries_summary_and_files)
{
    session_text s;
    s.user("u1", tokens(100));
    s.message(
        "a1",
        {{"role", "assistant"},
         {"content", json::array{file_call("c1", "read", "src/a.ts"), file_call("c2", "edit", "src/b.ts")}},
         {"stopReason", "toolUse"}}
    );
    s.tool_result("r1", "c1", "read", tokens(10)).tool_result("r2", "c2", "edit", "ok");
    s.user("u2", tokens(100)).assistant("a2", tokens(100));
    s.entry(
        "compaction",
        "cmp",
        {{"summary", "PREVIOUS"},
         {"firstKeptEntryId", "u2"},
         {"tokensBefore", 500},
         {"details",
          json::object{
              {"readFiles", json::array{"src/old.ts", "src/z.ts"}},
              {"modifiedFiles", json::array{"src/m.ts"}}}},
         {"fromHook", false}}
    );
    s.user("u3", tokens(100));
    s.message(
        "a3",
        {{"role", "assistant"},
         {"content", json::array{file_call("c3", "write", "src/z.ts")}},
         {"stopReason", "toolUse"}}
    );
    s.tool_result("r3", "c3", "write", "ok");
    s.user("u4", tokens(100)).assistant("a4", tokens(100));
    diagnostics diag;
    const auto p = prepare_compaction(s.path(), keep(200), {}, diag).value();
    EXPECT_EQ(p.boundary_start, 4u);  // u2, the previous firstKeptEntryId
    EXPECT_EQ(p.previous_summary, "PREVIOUS");
    EXPECT_EQ(p.first_kept_entry_id, "u4");
    // The compaction entry contributes nothing; u2/a2 (kept last time) are summarized now.
    EXPECT_EQ(ids(p.messages_to_summarize), (std::vector<std::string>{"u2", "a2", "u3", "a3", "r3"}));
    const auto lists = compute_file_lists(p.file_ops);
    // src/z.ts was read before and is written now: it moves to modified.
    EXPECT_EQ(lists.read_files, (std::vector<std::string>{"src/old.ts"}));
    EXPECT_EQ(lists.modified_files, (std::vector<std::string>{"src/m.ts", "src/z.ts"}));
    // a1's files lie before the range and are not re-extracted (they live in the previous details).
    EXPECT_EQ(p.file_ops.read.count("src/a.ts"), 0u);
}

TEST(prepare, hook_made_previous_compaction_details_are_not_carried)
{
    session_text s;
    s.user("u1", tokens(100)).assistant("a1", tokens(100));
    s.entry(
        "compaction",
        "cmp",
        {{"summary", "HOOK"},
         {"firstKeptEntryId", "u1"},
         {"tokensBefore", 1},
         {"details", json::object{{"readFiles", json::array{"x"}}}},
         {"fromHook", true}}
    );
    s.user("u2", tokens(100)).assistant("a2", tokens(100));
    diagnostics diag;
    const auto p = prepare_compaction(s.path(), keep(200), {}, diag).value();
    EXPECT_TRUE(p.file_ops.read.empty());
    EXPECT_EQ(p.previous_summary, "HOOK");
}

TEST(prepare, previous_kept_entry_missing_from_the_path_falls_back_to_after_the_compaction)
{
    session_text s;
    s.user("u1", tokens(100)).assistant("a1", tokens(100));
    s.compaction("cmp", "ghost", "S");
    s.user("u2", tokens(100))
        .assistant("a2", tokens(100))
        .user("u3", tokens(100))
        .assistant("a3", tokens(100));
    diagnostics diag;
    const auto p = prepare_compaction(s.path(), keep(200), {}, diag).value();
    EXPECT_EQ(p.boundary_start, 3u);
    EXPECT_EQ(ids(p.messages_to_summarize), (std::vector<std::string>{"u2", "a2"}));
}

TEST(prepare, already_compacted)
{
    session_text s;
    s.user("u1", "x").compaction("c1", "u1", "S");
    diagnostics diag;
    for (auto mode : {compat_mode::agentctx, compat_mode::pi})
        EXPECT_EQ(
            prepare_compaction(s.path(), keep(1), {.mode = mode}, diag).error(),
            make_error_code(errc::already_compacted)
        );
}

TEST(prepare, nothing_to_compact_instead_of_an_empty_conversation)
{
    session_text s;
    s.user("u1", "small").assistant("a1", "small");
    diagnostics diag;
    auto r = prepare_compaction(s.path(), keep(20000), {}, diag);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), make_error_code(errc::nothing_to_compact));
    // Pi 1.6 returns undefined too (#4811; 0.73.1 called the model with an empty conversation).
    auto pi = prepare_compaction(s.path(), keep(20000), {.mode = compat_mode::pi}, diag);
    ASSERT_FALSE(pi);
    EXPECT_EQ(pi.error(), make_error_code(errc::nothing_to_compact));
}

TEST(prepare, invalid_transcripts_are_reported_and_still_compact)
{
    session_text s;
    s.user("u1", tokens(100));
    s.message(
        "a1",
        {{"role", "assistant"},
         {"content", json::array{file_call("c1", "read", "a"), file_call("c1", "read", "b")}},
         {"stopReason", "toolUse"}}
    );
    s.tool_result("r1", "c1", "read", "x")
        .tool_result("r2", "c1", "read", "y")
        .tool_result("r3", "zz", "read", "z");
    s.tool_result("r4", "c1", "bash", "w");
    s.user("u2", tokens(100)).assistant("a2", tokens(100));
    const auto path = s.path();
    const auto issues = validate_transcript(path);
    // c1 declared twice in a1 is a conflict of live calls: a barrier (r1, r2 and r4 could answer
    // either declaration, so neither a second answer nor a name is judged). r3 answers nothing.
    ASSERT_EQ(issues.size(), 2u);
    EXPECT_EQ(issues[0].kind, transcript_issue_kind::duplicate_call_id);
    EXPECT_EQ(issues[0].entry_id, "a1");
    EXPECT_TRUE(is_barrier(issues[0].kind));
    EXPECT_EQ(issues[1].kind, transcript_issue_kind::result_without_call);
    EXPECT_EQ(issues[1].entry_id, "r3");
    // Reported with the plan, never a reason not to compact.
    diagnostics diag;
    auto r = prepare_compaction(path, keep(200), {}, diag);
    ASSERT_TRUE(r) << diag.message;
    EXPECT_EQ(r->first_kept_entry_id, "u2");
    ASSERT_EQ(r->transcript_issues.size(), 2u);
    EXPECT_EQ(r->transcript_issues[1].kind, transcript_issue_kind::result_without_call);
    EXPECT_EQ(r->transcript_issues[1].entry_id, "r3");
    const auto pi = prepare_compaction(path, keep(200), {.mode = compat_mode::pi}, diag);
    ASSERT_TRUE(pi);  // Pi does not validate
    EXPECT_TRUE(pi->transcript_issues.empty());
}

TEST(prepare, a_call_without_result_is_not_invalid)
{
    session_text s;
    s.user("u1", tokens(100));
    s.message(
        "a1",
        {{"role", "assistant"},
         {"content", json::array{file_call("c1", "read", "a")}},
         {"stopReason", "aborted"}}
    );
    s.user("u2", tokens(100)).assistant("a2", tokens(100));
    EXPECT_TRUE(validate_transcript(s.path()).empty());
    diagnostics diag;
    EXPECT_TRUE(prepare_compaction(s.path(), keep(200), {}, diag));
}

TEST(prepare, from_a_log_materializes_only_the_needed_range)
{
    session_text s;
    for (int i = 0; i < 20; ++i)
        s.user("u" + std::to_string(i), tokens(100)).assistant("a" + std::to_string(i), tokens(100));
    s.compaction("cmp", "u18", "S");
    s.user("u20", tokens(100)).assistant("a20", tokens(100));
    auto log = s.load();
    diagnostics diag;
    auto pp = load_planning_path(log, diag).value();
    EXPECT_EQ(pp.needed_from, 36u);           // u18
    EXPECT_TRUE(pp.entries[0]->raw.empty());  // a stand-in, never parsed
    EXPECT_FALSE(pp.entries[36]->raw.empty());
    const auto from_log = prepare_compaction(log, keep(200), {}, diag).value();
    const auto from_path = prepare_compaction(s.path(), keep(200), {}, diag).value();
    EXPECT_EQ(ids(from_log.messages_to_summarize), ids(from_path.messages_to_summarize));
    EXPECT_EQ(from_log.first_kept_entry_id, from_path.first_kept_entry_id);
    EXPECT_EQ(from_log.tokens_before, from_path.tokens_before);
}

TEST(file_ops, lists_are_sorted_by_utf16_and_read_only_excludes_modified)
{
    file_operations ops;
    ops.read = {"b.ts", "😀.ts", "～.ts", "a.ts", "w.ts"};
    ops.written = {"w.ts"};
    ops.edited = {"e.ts"};
    const auto l = compute_file_lists(ops);
    EXPECT_EQ(l.read_files, (std::vector<std::string>{"a.ts", "b.ts", "😀.ts", "～.ts"}));
    EXPECT_EQ(l.modified_files, (std::vector<std::string>{"e.ts", "w.ts"}));
    EXPECT_EQ(
        format_file_operations(l),
        "\n\n<read-files>\na.ts\nb.ts\n😀.ts\n～.ts\n</read-files>\n\n<modified-files>\ne.ts\nw.ts\n</"
        "modified-files>"
    );
    EXPECT_EQ(format_file_operations({}), "");
    EXPECT_EQ(format_file_operations({{}, {"m"}}), "\n\n<modified-files>\nm\n</modified-files>");
}

TEST(file_ops, only_read_write_edit_with_a_string_path)
{
    diagnostics diag;
    const auto m = decode_message(
                       boost::json::parse(R"({"role":"assistant","content":[
        {"type":"toolCall","id":"1","name":"read","arguments":{"path":"./a"}},
        {"type":"toolCall","id":"2","name":"grep","arguments":{"path":"src"}},
        {"type":"toolCall","id":"3","name":"edit","arguments":{"path":5}},
        {"type":"toolCall","id":"4","name":"write","arguments":{"path":""}},
        {"type":"toolCall","id":"5","name":"bash","arguments":{"command":"rm x"}},
        {"type":"toolCall","id":"6","name":"write","arguments":{"path":"a"}}]})")
                           .as_object(),
                       "",
                       diag
    )
                       .value();
    file_operations ops;
    extract_file_ops(m, ops);
    EXPECT_EQ(ops.read, (std::set<std::string>{"./a"}));  // no normalization: ./a is not a
    EXPECT_EQ(ops.written, (std::set<std::string>{"a"}));
    EXPECT_TRUE(ops.edited.empty());
}
