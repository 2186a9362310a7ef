// build_session_context and convert_to_llm.
#include <agentctx/compaction/llm_convert.hpp>
#include <agentctx/compaction/projection.hpp>

#include "session_text.hpp"

#include <gtest/gtest.h>

using namespace agentctx::compaction;
using agentctx::test::session_text;
namespace json = boost::json;

namespace {

session_context project(const session_text& s)
{
    auto log = s.load();
    diagnostics diag;
    auto ctx = build_session_context(log, diag);
    EXPECT_TRUE(ctx) << diag.message;
    return ctx ? *ctx : session_context{};
}

std::vector<std::string> entry_ids(const session_context& c)
{
    std::vector<std::string> out;
    for (const auto& m : c.messages)
        out.push_back(m.entry_id);
    return out;
}

}  // namespace

TEST(projection, no_compaction_emits_every_message_on_the_path)
{
    session_text s;
    s.user("u1", "one").assistant("a1", "r1").user("u2", "two").assistant("a2", "r2");
    const auto ctx = project(s);
    EXPECT_EQ(entry_ids(ctx), (std::vector<std::string>{"u1", "a1", "u2", "a2"}));
    EXPECT_EQ(ctx.thinking_level, "off");
    ASSERT_TRUE(ctx.model);
    EXPECT_EQ(*ctx.model, (model_ref{"anthropic", "claude-sonnet-4-5"}));
    EXPECT_EQ(ctx.leaf_id, "a2");
}

TEST(projection, one_compaction_summary_then_kept_then_later)
{
    session_text s;
    s.user("u1", "one").assistant("a1", "r1").user("u2", "two").assistant("a2", "r2");
    s.compaction("c1", "u2", "First summary", 1234);
    s.user("u3", "three").assistant("a3", "r3");
    const auto ctx = project(s);
    EXPECT_EQ(entry_ids(ctx), (std::vector<std::string>{"c1", "u2", "a2", "u3", "a3"}));
    EXPECT_EQ(ctx.messages[0].msg->role, role::compaction_summary);
    EXPECT_EQ(ctx.messages[0].msg->summary, "First summary");
    EXPECT_EQ(ctx.messages[0].msg->tokens_before, 1234);
    EXPECT_EQ(ctx.messages[0].msg->timestamp, parse_iso_timestamp("2026-01-15T09:00:05.000Z"));
}

TEST(projection, two_compactions_only_the_latest_counts)
{
    session_text s;
    s.user("u1", "one").assistant("a1", "r1");
    s.compaction("c1", "u1", "First summary");
    s.user("u2", "two").assistant("a2", "r2");
    s.compaction("c2", "u2", "Second summary");
    s.user("u3", "three").assistant("a3", "r3");
    const auto ctx = project(s);
    EXPECT_EQ(entry_ids(ctx), (std::vector<std::string>{"c2", "u2", "a2", "u3", "a3"}));
    EXPECT_EQ(ctx.messages[0].msg->summary, "Second summary");
}

TEST(projection, older_compaction_inside_the_kept_range_emits_nothing)
{
    session_text s;
    s.user("u1", "one").assistant("a1", "r1");
    s.compaction("c1", "u1", "First summary");
    s.user("u2", "two").assistant("a2", "r2");
    s.compaction("c2", "a1", "Second summary");  // kept range a1, c1, u2, a2
    s.user("u3", "three");
    const auto ctx = project(s);
    EXPECT_EQ(entry_ids(ctx), (std::vector<std::string>{"c2", "a1", "u2", "a2", "u3"}));
}

TEST(projection, first_kept_entry_off_the_path_keeps_nothing_before_the_compaction)
{
    session_text s;
    s.user("u1", "one").assistant("a1", "r1");
    s.user("x1", "other branch", "u1");
    s.compaction("c1", "a1", "Summary", 10, "x1");  // a1 is not an ancestor of c1
    s.user("u3", "three");
    load_report report;
    diagnostics diag;
    auto log = session_log::load(s.text, {}, report, diag);
    ASSERT_TRUE(log);
    ASSERT_EQ(report.notes.size(), 1u);
    EXPECT_EQ(report.notes[0].line, 5u);
    auto ctx = build_session_context(*log, diag);
    ASSERT_TRUE(ctx);
    EXPECT_EQ(entry_ids(*ctx), (std::vector<std::string>{"c1", "u3"}));
}

TEST(projection, branch_summaries_are_messages_unless_empty)
{
    session_text s;
    s.user("u1", "one").assistant("a1", "r1");
    s.entry("branch_summary", "b1", {{"fromId", "a1"}, {"summary", "explored X"}, {"fromHook", false}});
    s.entry("branch_summary", "b2", {{"fromId", "b1"}, {"summary", ""}});
    s.user("u2", "two");
    const auto ctx = project(s);
    EXPECT_EQ(entry_ids(ctx), (std::vector<std::string>{"u1", "a1", "b1", "u2"}));
    EXPECT_EQ(ctx.messages[2].msg->role, role::branch_summary);
    EXPECT_EQ(ctx.messages[2].msg->from_id, "a1");
}

TEST(projection, a_fork_follows_only_the_leafs_branch)
{
    session_text s;
    s.user("u1", "one").assistant("a1", "r1").user("u2", "abandoned").assistant("a2", "r2");
    s.user("u3", "forked", "a1").assistant("a3", "r3");
    const auto ctx = project(s);
    EXPECT_EQ(entry_ids(ctx), (std::vector<std::string>{"u1", "a1", "u3", "a3"}));
    // Projecting an explicit leaf on the other branch.
    auto log = s.load();
    diagnostics diag;
    auto other = build_session_context(log, log.find("a2"), diag);
    ASSERT_TRUE(other);
    EXPECT_EQ(entry_ids(*other), (std::vector<std::string>{"u1", "a1", "u2", "a2"}));
}

TEST(projection, metadata_sets_thinking_level_and_model_but_emits_nothing)
{
    session_text s;
    s.entry("model_change", "m1", {{"provider", "openai"}, {"modelId", "gpt-5"}});
    s.entry("thinking_level_change", "t1", {{"thinkingLevel", "high"}});
    s.user("u1", "one").assistant("a1", "r1");  // the assistant's model wins over the earlier change
    s.entry("label", "l1", {{"targetId", "u1"}, {"label", "start"}});
    s.entry("session_info", "i1", {{"name", "demo"}});
    s.entry("custom", "x1", {{"customType", "ext"}, {"data", json::object{{"k", 1}}}});
    auto ctx = project(s);
    EXPECT_EQ(entry_ids(ctx), (std::vector<std::string>{"u1", "a1"}));
    EXPECT_EQ(ctx.thinking_level, "high");
    EXPECT_EQ(*ctx.model, (model_ref{"anthropic", "claude-sonnet-4-5"}));
    s.entry("model_change", "m2", {{"provider", "openai"}, {"modelId", "gpt-5"}});
    ctx = project(s);
    EXPECT_EQ(*ctx.model, (model_ref{"openai", "gpt-5"}));
}

TEST(projection, custom_messages_and_bash_executions_are_in_context)
{
    session_text s;
    s.user("u1", "one");
    s.entry(
        "custom_message", "cm", {{"customType", "note"}, {"content", "remember this"}, {"display", true}}
    );
    s.message(
        "b1",
        {{"role", "bashExecution"},
         {"command", "ls"},
         {"output", "a"},
         {"exitCode", 0},
         {"cancelled", false},
         {"truncated", false},
         {"excludeFromContext", true}}
    );
    s.message(
        "b2",
        {{"role", "bashExecution"},
         {"command", "make"},
         {"output", ""},
         {"exitCode", 2},
         {"cancelled", false},
         {"truncated", true},
         {"fullOutputPath", "/tmp/out.txt"}}
    );
    const auto ctx = project(s);
    EXPECT_EQ(entry_ids(ctx), (std::vector<std::string>{"u1", "cm", "b1", "b2"}));
    EXPECT_EQ(ctx.messages[1].msg->role, role::custom);

    std::vector<std::shared_ptr<const message>> msgs;
    for (const auto& m : ctx.messages)
        msgs.push_back(m.msg);
    const auto llm = convert_to_llm(msgs);
    ASSERT_EQ(llm.size(), 3u);  // the excluded bash execution vanishes
    EXPECT_EQ(llm[1]->role, role::user);
    EXPECT_EQ(content_text(llm[1]->content), "remember this");
    EXPECT_EQ(
        content_text(llm[2]->content),
        "Ran `make`\n(no output)\n\nCommand exited with code 2\n\n[Output truncated. Full output: "
        "/tmp/out.txt]"
    );
}

TEST(projection, convert_to_llm_wraps_summaries_exactly)
{
    session_text s;
    s.user("u1", "one");
    s.entry("branch_summary", "b1", {{"fromId", "u1"}, {"summary", "B"}});
    s.compaction("c1", "u1", "C");
    const auto ctx = project(s);
    std::vector<std::shared_ptr<const message>> msgs;
    for (const auto& m : ctx.messages)
        msgs.push_back(m.msg);
    const auto llm = convert_to_llm(msgs, summary_framing::pi);  // Pi 1.6's bytes, asked for
    ASSERT_EQ(llm.size(), 3u);
    EXPECT_EQ(
        content_text(llm[0]->content),
        "The conversation history before this point was compacted into the following "
        "summary:\n\n<summary>\nC\n</summary>"
    );
    EXPECT_EQ(
        content_text(llm[2]->content),
        "The following is a summary of a branch that this conversation came back "
        "from:\n\n<summary>\nB</summary>"
    );
    EXPECT_EQ(llm[1].get(), msgs[1].get());  // user messages are shared, not copied
    // Without the option: reference history.
    const auto framed = convert_to_llm(msgs);
    EXPECT_EQ(
        content_text(framed[0]->content), framed_summary("C", false, summary_framing::reference_history)
    );
    EXPECT_EQ(
        content_text(framed[2]->content), framed_summary("B", true, summary_framing::reference_history)
    );
}

TEST(projection, bash_text_for_cancelled_and_successful_commands)
{
    message m;
    m.role = role::bash_execution;
    m.command = "sleep 9";
    m.output = "partial";
    m.cancelled = true;
    m.exit_code = 130;
    EXPECT_EQ(bash_execution_to_text(m), "Ran `sleep 9`\n```\npartial\n```\n\n(command cancelled)");
    m.cancelled = false;
    m.exit_code = 0;
    EXPECT_EQ(bash_execution_to_text(m), "Ran `sleep 9`\n```\npartial\n```");
}

TEST(projection, empty_session_is_an_empty_context)
{
    session_text s;
    const auto ctx = project(s);
    EXPECT_TRUE(ctx.messages.empty());
    EXPECT_EQ(ctx.thinking_level, "off");
    EXPECT_FALSE(ctx.model);
    EXPECT_FALSE(ctx.leaf_id);
}

namespace {

// Counts which lines are read back, to prove projection materializes only what it emits.
class counting_reader final : public line_reader
{
public:
    explicit counting_reader(std::string text) : inner_(std::move(text)) {}
    result<std::string> read(std::uint64_t offset, std::size_t length) const override
    {
        ++reads;
        return inner_.read(offset, length);
    }
    mutable int reads = 0;

private:
    string_line_reader inner_;
};

}  // namespace

TEST(projection, only_entries_in_the_context_are_materialized)
{
    session_text s;
    for (int i = 0; i < 50; ++i)
        s.user("u" + std::to_string(i), "old").assistant("a" + std::to_string(i), "old");
    s.compaction("c1", "u49", "S");
    s.user("u50", "new");
    auto reader = std::make_shared<counting_reader>(s.text);
    session_log_builder b;
    b.feed(s.text);
    load_report report;
    diagnostics diag;
    auto log = b.finish(reader, report, diag);
    ASSERT_TRUE(log);
    auto ctx = build_session_context(*log, diag);
    ASSERT_TRUE(ctx);
    EXPECT_EQ(entry_ids(*ctx), (std::vector<std::string>{"c1", "u49", "a49", "u50"}));
    EXPECT_EQ(reader->reads, 4);  // c1, u49, a49, u50 — not the 98 older lines
}

TEST(projection, materialized_path_overload_matches_the_log_overload)
{
    session_text s;
    s.user("u1", "one").assistant("a1", "r1");
    s.compaction("c1", "a1", "S");
    s.user("u2", "two");
    auto log = s.load();
    diagnostics diag;
    std::vector<entry_ptr> path;
    for (auto i : log.active_path())
        path.push_back(log.get(i, diag).value());
    const auto a = build_session_context(path);
    const auto b = build_session_context(log, diag).value();
    EXPECT_EQ(entry_ids(a), entry_ids(b));
    EXPECT_EQ(a.thinking_level, b.thinking_level);
    EXPECT_EQ(a.model, b.model);
}
