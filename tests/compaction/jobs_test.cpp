// Queued background jobs: the launch carried verbatim while the job runs, listed in the summary,
// never called finished, and ordinary history once its completion entry arrives.
#include <agentctx/compaction/jobs.hpp>
#include <agentctx/compaction/pinned.hpp>
#include <agentctx/compaction/prepare.hpp>
#include <agentctx/compaction/summary.hpp>
#include <agentctx/compaction/transcript.hpp>
#include <agentctx/compaction/unresolved_calls.hpp>

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

// start_build queues a build; its result's text names the job; a `job_done` custom message whose
// details.jobId is the id completes it.
job_rules build_jobs()
{
    job_rule r;
    r.tools = {"start_build"};
    r.id_source = job_rule::id_from::result_text;
    r.id_pattern = "queued job ([a-z0-9-]+)";
    r.completion_custom_types = {"job_done"};
    r.completion_field = "jobId";
    return {{r}};
}

// u1 a1, then a turn that launches the build (l1: the call, l2: its result), then two more turns.
session_text launched()
{
    session_text s;
    s.user("u1", tokens(100)).assistant("a1", tokens(100));
    s.user("u2", "build it please");
    s.tool_call("l1", "call_1", "start_build", {{"target", "all"}});
    s.tool_result("l2", "call_1", "start_build", "queued job build-42");
    s.assistant("a2", "The build is queued.");
    s.user("u3", tokens(100)).assistant("a3", tokens(100));
    s.user("u4", tokens(100)).assistant("a4", tokens(100));
    return s;
}

void job_done(session_text& s, std::string_view id, std::string_view job)
{
    s.entry(
        "custom_message",
        id,
        {{"customType", "job_done"},
         {"content", "build finished"},
         {"display", false},
         {"details", json::object{{"jobId", job}}}}
    );
}

// Plans with the jobs, assembles with `text`, appends the compaction as the runtime writes it.
compaction_result compact(
    session_text& s,
    const std::string& id,
    const job_rules& jobs,
    const std::string& text,
    compaction_preparation* plan = nullptr
)
{
    diagnostics diag;
    const auto path = s.path();
    auto p = prepare_compaction(path, keep(200), {.jobs = &jobs}, diag);
    EXPECT_TRUE(p) << diag.message;
    auto r = assemble_compaction(path, *p, text, std::nullopt, 0, keep(200), diag);
    EXPECT_TRUE(r) << diag.message;
    json::object details = r->details.as_object();
    if (!r->pinned.empty())
        details["agentctx"] = json::object{{"pinned", r->pinned}};
    s.entry(
        "compaction",
        id,
        {{"summary", r->summary},
         {"firstKeptEntryId", r->first_kept_entry_id},
         {"tokensBefore", r->tokens_before},
         {"details", details},
         {"fromHook", false}}
    );
    if (plan)
        *plan = std::move(*p);
    return *r;
}

std::vector<std::string> carried_ids(const json::array& pinned)
{
    std::vector<std::string> out;
    for (const auto& v : pinned)
        out.emplace_back(v.as_object().at("id").as_string());
    return out;
}

}  // namespace

TEST(jobs, a_running_job_is_found_with_its_id_and_launch_exchange)
{
    const auto s = launched();
    const auto ctx = build_session_context(s.path());
    const auto jobs = find_running_jobs(ctx.entries, build_jobs());
    ASSERT_EQ(jobs.size(), 1u);
    EXPECT_EQ(jobs[0], (running_job{"build-42", "start_build", "call_1", {"l1", "l2"}}));
}

TEST(jobs, a_compaction_while_a_job_runs_keeps_the_launch_exchange_verbatim_and_whole)
{
    auto s = launched();
    diagnostics diag;
    const auto plain = prepare_compaction(s.path(), keep(200), {}, diag).value();
    const auto jobs = build_jobs();
    const auto p = prepare_compaction(s.path(), keep(200), {.jobs = &jobs}, diag).value();
    // The cut is the one without jobs; the launch is carried, not summarized.
    EXPECT_EQ(plain.first_kept_entry_id, "u4");
    EXPECT_EQ(p.first_kept_entry_id, "u4");
    EXPECT_EQ(
        ids(plain.messages_to_summarize),
        (std::vector<std::string>{"u1", "a1", "u2", "l1", "l2", "a2", "u3", "a3"})
    );
    EXPECT_EQ(ids(p.messages_to_summarize), (std::vector<std::string>{"u1", "a1", "u2", "a2", "u3", "a3"}));
    EXPECT_EQ(carried_ids(p.pinned), (std::vector<std::string>{"l1", "l2"}));

    compact(s, "c1", jobs, "## Goal\nbuild");
    const auto ctx = build_session_context(s.path());
    ASSERT_EQ(ctx.messages.size(), 5u);  // summary, the call, its result, u4, a4
    EXPECT_EQ(ctx.messages[0].msg->role, role::compaction_summary);
    EXPECT_EQ(ctx.messages[1].msg->role, role::assistant);
    ASSERT_EQ(ctx.messages[1].msg->content.blocks.size(), 1u);
    EXPECT_EQ(std::get<tool_call_block>(ctx.messages[1].msg->content.blocks[0]).id, "call_1");
    EXPECT_EQ(ctx.messages[2].msg->role, role::tool_result);
    EXPECT_EQ(ctx.messages[2].msg->tool_call_id, "call_1");
    EXPECT_EQ(content_text(ctx.messages[2].msg->content), "queued job build-42");
    EXPECT_EQ(ctx.messages[3].entry_id, "u4");
    EXPECT_TRUE(ctx.dropped.empty());
    // The carried exchange keeps the request's tool pairing.
    EXPECT_TRUE(
        validate_transcript(std::span<const projected_entry>(ctx.entries), 0, ctx.entries.size()).empty()
    );
    // The job is still found running across the compaction, under its own entry ids.
    EXPECT_EQ(
        find_running_jobs(ctx.entries, jobs),
        (std::vector<running_job>{{"build-42", "start_build", "call_1", {"l1", "l2"}}})
    );
}

TEST(jobs, a_second_compaction_while_the_job_runs_carries_the_launch_again)
{
    auto s = launched();
    const auto jobs = build_jobs();
    compact(s, "c1", jobs, "first");
    s.user("u5", tokens(100)).assistant("a5", tokens(100));
    s.user("u6", tokens(100)).assistant("a6", tokens(100));
    compaction_preparation p;
    compact(s, "c2", jobs, "second", &p);
    EXPECT_EQ(carried_ids(p.pinned), (std::vector<std::string>{"l1", "l2"}));
    EXPECT_EQ(ids(p.messages_to_summarize), (std::vector<std::string>{"u4", "a4", "u5", "a5"}));
}

TEST(jobs, the_summary_lists_the_running_job_with_its_id)
{
    auto s = launched();
    const auto r = compact(s, "c1", build_jobs(), "## Goal\nbuild");
    EXPECT_EQ(
        r.summary,
        "## Goal\nbuild\n\n<running-jobs>\nBackground jobs still running (their launch is kept verbatim "
        "after this summary):\n- job build-42: `start_build` (call call_1), queued or running; no "
        "completion recorded\n</running-jobs>\n\n<pinned-entries>\nKept verbatim (pinned by the host; "
        "not part of the summary above):\n[assistant: running background job launch]\n\ncall call_1: "
        "start_build {\"target\":\"all\"}\n[toolResult start_build call_1]\nqueued job "
        "build-42\n</pinned-entries>"
    );
    // The next compaction updates the summary without the old list (it is rebuilt from the jobs then).
    s.user("u5", tokens(100)).assistant("a5", tokens(100));
    diagnostics diag;
    const auto jobs = build_jobs();
    const auto p = prepare_compaction(s.path(), keep(200), {.jobs = &jobs}, diag).value();
    EXPECT_EQ(p.previous_summary, "## Goal\nbuild");
    EXPECT_EQ(p.running_jobs.size(), 1u);
}

TEST(jobs, after_the_completion_entry_a_compaction_summarizes_the_launch)
{
    auto s = launched();
    const auto jobs = build_jobs();
    compact(s, "c1", jobs, "first");
    job_done(s, "d1", "build-42");
    s.user("u5", tokens(100)).assistant("a5", tokens(100));
    s.user("u6", tokens(100)).assistant("a6", tokens(100));
    EXPECT_TRUE(find_running_jobs(build_session_context(s.path()).entries, jobs).empty());
    compaction_preparation p;
    const auto r = compact(s, "c2", jobs, "second", &p);
    EXPECT_TRUE(p.pinned.empty());
    EXPECT_TRUE(p.running_jobs.empty());
    // The launch is history now, summarized before the range.
    EXPECT_EQ(
        ids(p.messages_to_summarize), (std::vector<std::string>{"l1", "l2", "u4", "a4", "d1", "u5", "a5"})
    );
    EXPECT_EQ(r.summary, "second");
}

TEST(jobs, a_completion_for_another_job_or_a_failed_launch_changes_nothing_else)
{
    auto s = launched();
    job_done(s, "d1", "build-7");  // not ours
    const auto jobs = build_jobs();
    EXPECT_EQ(find_running_jobs(build_session_context(s.path()).entries, jobs).size(), 1u);
    session_text failed;
    failed.user("u1", "build");
    failed.tool_call("l1", "call_1", "start_build", {});
    failed.message(
        "l2",
        {{"role", "toolResult"},
         {"toolCallId", "call_1"},
         {"toolName", "start_build"},
         {"content", json::array{json::object{{"type", "text"}, {"text", "queued job build-1"}}}},
         {"isError", true}}
    );
    EXPECT_TRUE(find_running_jobs(build_session_context(failed.path()).entries, jobs).empty());
}

TEST(jobs, the_unknown_outcome_note_of_a_running_jobs_call_never_says_it_finished)
{
    job_rule r;
    r.tools = {"start_build"};
    r.id_field = "jobId";
    r.completion_custom_types = {"job_done"};
    const job_rules jobs{{r}};
    session_text s;
    s.user("u1", "build");
    s.tool_call("l1", "call_1", "start_build", {{"jobId", "j7"}});
    s.user("u2", "anything else?");
    const auto msgs = build_session_context(s.path()).messages;
    const auto plain = with_unknown_outcomes(msgs);
    const auto noted = with_unknown_outcomes(msgs, compat_mode::agentctx, &jobs);
    ASSERT_EQ(noted.size(), 4u);
    EXPECT_EQ(ids(noted), (std::vector<std::string>{"u1", "l1", "l1", "u2"}));
    const std::string text = content_text(noted[2].msg->content);
    EXPECT_EQ(
        text,
        "This `start_build` call launched background job j7: queued work whose completion a later entry "
        "reports, not this call. No result is recorded here, so do not assume the job has finished. Unless "
        "a later entry reports its completion, it is queued or still running: check its status before "
        "launching it again."
    );
    EXPECT_EQ(text.find("interrupted"), std::string::npos);
    EXPECT_NE(content_text(plain[2].msg->content).find("interrupted"), std::string::npos);
    // Pi keeps its placeholder.
    EXPECT_EQ(
        content_text(with_unknown_outcomes(msgs, compat_mode::pi, &jobs)[2].msg->content), pi_no_result_text
    );
}

TEST(jobs, pi_mode_plans_as_without_jobs)
{
    const auto s = launched();
    const auto jobs = build_jobs();
    diagnostics diag;
    const auto p =
        prepare_compaction(s.path(), keep(200), {.mode = compat_mode::pi, .jobs = &jobs}, diag).value();
    EXPECT_TRUE(p.pinned.empty());
    EXPECT_EQ(
        ids(p.messages_to_summarize),
        (std::vector<std::string>{"u1", "a1", "u2", "l1", "l2", "a2", "u3", "a3"})
    );
}

TEST(jobs, a_carried_call_without_its_result_is_dropped_not_projected)
{
    session_text s;
    s.user("u1", "x");
    s.tool_call("l1", "call_1", "start_build", {});
    s.tool_result("l2", "call_1", "start_build", "queued job build-42");
    const auto path = s.path();
    json::array pinned{path[1]->raw};  // a hand-edited list: the call alone
    EXPECT_TRUE(carried_entries(pinned).empty());
    pinned.push_back(path[2]->raw);
    EXPECT_EQ(carried_entries(pinned).size(), 2u);
}

TEST(jobs, settings_are_read_strictly_and_errors_name_the_field)
{
    diagnostics diag;
    const auto ok = parse_job_settings(
        json::parse(
            R"j({"jobs":{"rules":[{"tools":["start_build"],"id":{"from":"resultText","pattern":"job (\\d+)"},)j"
            R"j("completedBy":{"customTypes":["job_done"],"field":"jobId"}}]}})j"
        )
            .as_object(),
        diag
    );
    ASSERT_TRUE(ok) << diag.message;
    ASSERT_EQ(ok->rules.size(), 1u);
    EXPECT_EQ(ok->rules[0].tools, (std::vector<std::string>{"start_build"}));
    EXPECT_EQ(ok->rules[0].id_source, job_rule::id_from::result_text);
    EXPECT_EQ(ok->rules[0].id_pattern, "job (\\d+)");
    EXPECT_EQ(ok->rules[0].completion_custom_types, (std::vector<std::string>{"job_done"}));
    EXPECT_EQ(ok->rules[0].completion_field, "jobId");
    EXPECT_TRUE(parse_job_settings(json::object{}, diag)->empty());

    const auto field_of = [](std::string_view text) {
        diagnostics d;
        auto r = parse_job_settings(json::parse(text).as_object(), d);
        EXPECT_FALSE(r);
        EXPECT_EQ(r.error(), make_error_code(errc::invalid_settings));
        return d.field;
    };
    EXPECT_EQ(field_of(R"({"jobs":[]})"), "jobs");
    EXPECT_EQ(
        field_of(
            R"({"jobs":{"rules":[{"tools":["b"],"id":{"from":"stdout"},"completedBy":{"tools":["s"]}}]}})"
        ),
        "jobs.rules[0].id.from"
    );
    EXPECT_EQ(
        field_of(
            R"j({"jobs":{"rules":[{"tools":["b"],"id":{"from":"resultText","pattern":"("},"completedBy":{"tools":["s"]}}]}})j"
        ),
        "jobs.rules[0].id.pattern"
    );
    EXPECT_EQ(
        field_of(
            R"({"jobs":{"rules":[{"tools":["b"],"id":{"from":"arguments","field":"id"},"completedBy":{}}]}})"
        ),
        "jobs.rules[0].completedBy"
    );
    EXPECT_EQ(
        field_of(
            R"({"jobs":{"rules":[{"tools":["b",3],"id":{"from":"arguments","field":"id"},"completedBy":{"tools":["s"]}}]}})"
        ),
        "jobs.rules[0].tools[1]"
    );
    EXPECT_EQ(field_of(R"({"jobs":{"rules":[{"tools":["b"],"idd":{}}]}})"), "jobs.rules[0].idd");
}
