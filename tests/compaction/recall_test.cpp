// The recall gate's probes (rules and their overrides, artifacts, open work, decisions), their match
// against a summary, the verbatim rules part and the follow-up request.
#include <agentctx/compaction/projection.hpp>
#include <agentctx/compaction/recall.hpp>
#include <agentctx/compaction/recall_carry.hpp>

#include "session_text.hpp"

#include <gtest/gtest.h>

using namespace agentctx::compaction;
using agentctx::test::session_text;
namespace json = boost::json;

namespace {

std::vector<recall_probe> probes_of(const session_text& s, std::span<const std::string> carried = {})
{
    const auto ctx = build_session_context(s.path());
    return extract_probes(ctx.messages, carried);
}

std::vector<std::string> texts(const std::vector<recall_probe>& ps, probe_kind k)
{
    std::vector<std::string> out;
    for (const auto& p : ps)
        if (p.kind == k)
            out.push_back(p.text);
    return out;
}

using strings = std::vector<std::string>;

session_text& failed_result(
    session_text& s, std::string_view id, std::string_view call_id, std::string_view text
)
{
    return s.message(
        id,
        {{"role", "toolResult"},
         {"toolCallId", call_id},
         {"toolName", "bash"},
         {"content", json::array{json::object{{"type", "text"}, {"text", text}}}},
         {"isError", true}}
    );
}

}  // namespace

TEST(recall_probes, user_rules_are_imperatives_negations_and_constraints)
{
    session_text s;
    s.user(
        "u1",
        "Fix the CSV export. Never push to main. Keep the public signature of `export_rows`. "
        "Please always run the tests before a commit. EU suppliers only. You must not touch vendor/. "
        "From now on, write commit messages in English."
    );
    s.assistant("a1", "On it.");
    const auto ps = probes_of(s);
    EXPECT_EQ(
        texts(ps, probe_kind::rule),
        (strings{
            "Never push to main.",
            "Keep the public signature of `export_rows`.",
            "Please always run the tests before a commit.",
            "EU suppliers only.",
            "You must not touch vendor/.",
            "From now on, write commit messages in English."})
    );
    ASSERT_FALSE(ps.empty());
    EXPECT_EQ(ps[0].terms, (strings{"push", "main"}));
    EXPECT_TRUE(ps[0].negative);
    EXPECT_EQ(ps[0].entry_id, "u1");
    EXPECT_EQ(ps[1].names, (strings{"export_rows"}));
    EXPECT_FALSE(ps[1].negative);
}

TEST(recall_probes, near_misses_are_not_rules)
{
    session_text s;
    s.user(
        "u1",
        "Should we always use tabs? I never liked that library. It must be a caching bug. "
        "Fix the flaky test. Don't. There is only one config file.\n"
        "```\nnever run this in production\n```\n> always quote variables\n"
        "Ok."
    );
    s.assistant("a1", "You must never push to main.");  // the assistant's words are not the user's rules
    EXPECT_EQ(texts(probes_of(s), probe_kind::rule), strings{});
}

TEST(recall_probes, a_later_statement_that_contradicts_a_rule_overrides_it)
{
    session_text s;
    s.user("u1", "Never push to main. Use tabs for indentation. Always run the linter.");
    s.assistant("a1", "Understood.");
    s.user("u2", "Actually, you may push to main now. Use spaces instead of tabs.");
    s.assistant("a2", "Noted.");
    const auto ps = probes_of(s);
    const auto rules = texts(ps, probe_kind::rule);
    EXPECT_EQ(
        rules,
        (strings{
            "Always run the linter.", "Actually, you may push to main now.", "Use spaces instead of tabs."})
    );
    ASSERT_GE(ps.size(), 3u);
    EXPECT_EQ(ps[0].overrides, "");
    EXPECT_EQ(ps[1].overrides, "Never push to main.");
    EXPECT_EQ(ps[1].entry_id, "u2");
    EXPECT_EQ(ps[2].overrides, "Use tabs for indentation.");
}

TEST(recall_probes, an_unrelated_permission_or_a_different_rule_overrides_nothing)
{
    session_text s;
    s.user("u1", "Never push to main. Use pytest for tests.");
    s.user(
        "u2", "You may rename the helper module. Use black for formatting. Never push to main on Fridays."
    );
    const auto rules = texts(probes_of(s), probe_kind::rule);
    // `You may rename` is no rule and contradicts none; `Use black` and `Use pytest` are both kept;
    // the Friday rule restates the first one, which it replaces (not an override).
    EXPECT_EQ(
        rules,
        (strings{"Use pytest for tests.", "Use black for formatting.", "Never push to main on Fridays."})
    );
}

TEST(recall_probes, carried_rules_come_first_and_a_statement_of_the_span_can_revoke_them)
{
    session_text s;
    s.user("u1", "You no longer need to avoid the staging database, use it freely.");
    const strings carried{"Never use the staging database.", "Answer in French."};
    const auto ps = probes_of(s, carried);
    const auto rules = texts(ps, probe_kind::rule);
    EXPECT_EQ(
        rules,
        (strings{"Answer in French.", "You no longer need to avoid the staging database, use it freely."})
    );
    ASSERT_GE(ps.size(), 2u);
    EXPECT_EQ(ps[0].entry_id, "");
    EXPECT_EQ(ps[1].overrides, "Never use the staging database.");
}

TEST(recall_probes, artifacts_are_modified_files_failed_commands_and_named_identifiers)
{
    session_text s;
    s.user("u1", "The bug is in `parse_row` or in ExportWriter.");
    s.tool_call("a1", "c1", "edit", {{"path", "src/export.py"}, {"oldText", "a"}, {"newText", "b"}});
    s.tool_result("r1", "c1", "edit", "ok");
    s.tool_call("a2", "c2", "read", {{"path", "src/reader.py"}});
    s.tool_result("r2", "c2", "read", "...");
    s.tool_call("a3", "c3", "bash", {{"command", "pytest tests/test_export.py"}});
    failed_result(s, "r3", "c3", "1 failed");
    s.tool_call("a4", "c4", "bash", {{"command", "make lint"}});
    failed_result(s, "r4", "c4", "error");
    s.tool_call("a5", "c5", "bash", {{"command", "make lint"}});
    s.tool_result("r5", "c5", "bash", "clean");  // its last run passed: not a probe
    s.assistant("a6", "Done for now.");
    const auto ps = probes_of(s);
    EXPECT_EQ(
        texts(ps, probe_kind::artifact),
        (strings{"src/export.py", "pytest tests/test_export.py", "parse_row", "ExportWriter"})
    );
    for (const auto& p : ps)
    {
        if (p.text == "src/export.py")
        {
            EXPECT_EQ(p.names, strings{"src/export.py"});
        }
        else if (p.text == "pytest tests/test_export.py")
        {
            EXPECT_EQ(p.terms, (strings{"pytest", "test", "test_export", "py"}));
        }
    }
}

TEST(recall_probes, open_work_is_the_unfinished_step_and_the_calls_nobody_answered)
{
    session_text s;
    s.user("u1", "Rename the config loader.");
    s.assistant("a1", "Renamed.");  // finished
    s.user("u2", "Now migrate the billing tables to the new schema. Then report.");
    s.calls("a2", {"call_a", "call_b"});
    s.tool_result("r2", "call_a", "bash", "ok");  // call_b never answered
    s.user("u3", "Status?");
    s.tool_call("a3", "c3", "bash", {{"command", "psql -f migrate.sql"}});
    const auto ps = probes_of(s);
    EXPECT_EQ(texts(ps, probe_kind::open_work), (strings{"Status?", "bash make"}));
}

TEST(recall_probes, a_finished_turn_leaves_no_open_step)
{
    session_text s;
    s.user("u1", "Migrate the billing tables.");
    s.assistant("a1", "Migrated all four tables.");
    EXPECT_EQ(texts(probes_of(s), probe_kind::open_work), strings{});
}

TEST(recall_probes, decisions_are_the_assistants_and_a_reversed_one_is_dropped)
{
    session_text s;
    s.user("u1", "Pick a queue.");
    s.assistant("a1", "I'll use Redis streams for the job queue. Is that fine?");
    s.assistant("a2", "I decided to cache the parsed schema in memory.");
    s.assistant("a3", "Switching to PostgreSQL instead of Redis streams for the job queue.");
    EXPECT_EQ(
        texts(probes_of(s), probe_kind::decision),
        (strings{
            "I decided to cache the parsed schema in memory.",
            "Switching to PostgreSQL instead of Redis streams for the job queue."})
    );
}

TEST(recall_probes, probes_are_bounded_and_redacted)
{
    session_text s;
    s.user("u1", "Always send the token sk-ant-api03-" + std::string(90, 'A') + " with requests.");
    s.user("u1b", "The key is sk-ant-api03_abcdef here.");  // a name that is a secret is no probe
    std::string many;
    for (int i = 0; i < 40; ++i)
        many += "Never touch module" + std::to_string(i) + "x. ";
    s.user("u2", many);
    const auto ctx = build_session_context(s.path());
    probe_limits lim;
    lim.max_rules = 5;
    lim.max_text_chars = 40;
    const auto ps = extract_probes(ctx.messages, {}, lim, [](std::string& t) {
        if (const auto at = t.find("sk-ant-"); at != std::string::npos)
            t.replace(at, t.find(' ', at) - at, "[REDACTED:anthropic_api_key]");
    });
    const auto rules = texts(ps, probe_kind::rule);
    ASSERT_EQ(rules.size(), 5u);
    EXPECT_EQ(rules[0], "Always send the token [REDACTED:anthr\u2026");
    EXPECT_EQ(rules[1], "Never touch module0x.");
    lim.max_rules = 24;
    const auto all = extract_probes(ctx.messages, {}, lim, [](std::string& t) {
        if (const auto at = t.find("sk-ant-"); at != std::string::npos)
            t.replace(at, t.find(' ', at) - at, "[REDACTED:anthropic_api_key]");
    });
    const auto r2 = texts(all, probe_kind::rule);
    ASSERT_EQ(r2.size(), 24u);
    EXPECT_EQ(texts(all, probe_kind::artifact), strings{});
    for (const auto& p : all)
    {
        EXPECT_LE(p.text.size(), 40u);
        EXPECT_EQ(p.text.find("sk-ant"), std::string::npos);
    }
}

TEST(recall_match, content_words_in_one_line_with_the_negation_of_a_prohibition)
{
    recall_probe never_push{
        probe_kind::rule, "Never push to main.", recall_terms("Never push to main."), {}, true, "u1", {}};
    EXPECT_TRUE(probe_found(never_push, "## Constraints\n- Do not push to `main` (user rule)\n"));
    EXPECT_TRUE(probe_found(never_push, "- never pushes to main"));
    // Words spread over lines, or a line without the negation, do not keep it.
    EXPECT_FALSE(probe_found(never_push, "- pushed the fix\n- main branch is protected, do not worry\n"));
    EXPECT_FALSE(probe_found(never_push, "- push to main after review"));
    recall_probe sig{
        probe_kind::rule,
        "Keep the public signature of `export_rows`.",
        recall_terms("Keep the public signature of `export_rows`."),
        {"export_rows"},
        false,
        "u1",
        {}};
    EXPECT_TRUE(probe_found(sig, "- The public signature of export_rows stays as it is"));
    EXPECT_FALSE(probe_found(sig, "- The public signature stays as it is"));  // the name is missing
    recall_probe file{probe_kind::artifact, "src/export.py", {}, {"src/export.py"}, false, "a1", {}};
    EXPECT_TRUE(probe_found(file, "<modified-files>\nsrc/export.py\n</modified-files>"));
    EXPECT_FALSE(probe_found(file, "edited export.py"));
    EXPECT_EQ(missing_probes(std::vector{never_push, sig, file}, "- never push to main").size(), 2u);
}

TEST(recall_verbatim, missing_rules_are_added_under_their_heading_and_read_back)
{
    std::vector<recall_probe> missing{
        {probe_kind::rule, "Never push to main.", {}, {}, true, "u1", {}},
        {probe_kind::artifact, "src/x.py", {}, {"src/x.py"}, false, "a1", {}},
        {probe_kind::rule, "EU suppliers only.", {}, {}, false, "u1", {}}};
    std::string summary = "## Goal\nShip it.\n";
    EXPECT_EQ(add_verbatim_rules(summary, missing), 2u);
    EXPECT_EQ(
        summary, "## Goal\nShip it.\n\n## User rules (verbatim)\n- Never push to main.\n- EU suppliers only."
    );
    EXPECT_EQ(parse_verbatim_rules(summary), (strings{"Never push to main.", "EU suppliers only."}));
    // A summary that has the part gets the lines inside it, before the next heading.
    std::string with_part = "## User rules (verbatim)\n- Answer in French.\n## Next Steps\n1. Test.";
    EXPECT_EQ(add_verbatim_rules(with_part, std::span(missing).first(1)), 1u);
    EXPECT_EQ(
        with_part,
        "## User rules (verbatim)\n- Answer in French.\n- Never push to main.\n## Next Steps\n1. Test."
    );
    // Bounded: what does not fit is counted.
    probe_limits lim;
    lim.verbatim_chars = 25;
    std::string small = "S";
    EXPECT_EQ(add_verbatim_rules(small, missing, lim), 1u);
    EXPECT_EQ(small, "S\n\n## User rules (verbatim)\n- Never push to main.\n- \u2026and 1 more rules");
    EXPECT_EQ(parse_verbatim_rules(small), strings{"Never push to main."});
}

TEST(recall_verbatim, carried_rules_come_from_details_then_the_verbatim_part)
{
    const json::value details =
        json::parse(R"({"agentctx":{"recall":{"rules":["Answer in French.","Never push to main."]}}})");
    EXPECT_EQ(
        carried_rules(
            details,
            "## User rules (verbatim)\n- Never push to main.\n- EU suppliers "
            "only.\n\n<read-files>\na\n</read-files>"
        ),
        (strings{"Answer in French.", "Never push to main.", "EU suppliers only."})
    );
    EXPECT_EQ(carried_rules(json::value(nullptr), "## Goal\nx"), strings{});
}

TEST(recall_followup, the_follow_up_extends_the_original_request)
{
    summary_prompt standalone{"SYS", "<conversation>...</conversation>\nWrite a checkpoint.", 1000};
    std::vector<recall_probe> missing{{probe_kind::rule, "Use spaces.", {}, {}, false, "u2", "Use tabs."}};
    const auto f = recall_followup_prompt(standalone, "## Goal\nX", missing);
    EXPECT_EQ(f.system_prompt, "SYS");
    EXPECT_EQ(f.max_output_tokens, 1000u);
    EXPECT_TRUE(f.prompt.starts_with(
        standalone.prompt + "\n\n<draft-checkpoint>\n## Goal\nX\n</draft-checkpoint>\n\n"
    ));
    EXPECT_NE(
        f.prompt.find("- (a rule the user set) Use spaces. [this replaces the earlier rule: Use tabs.]\n"),
        std::string::npos
    );

    auto head = std::make_shared<request_head>();
    head->messages.push_back(json::object{{"role", "user"}, {"content", "hi"}});
    head->chars = 10;
    summary_prompt cached{"", "INSTR", 500, std::nullopt, std::nullopt, head};
    const auto g = recall_followup_prompt(cached, "DRAFT", missing);
    ASSERT_TRUE(g.head);
    EXPECT_EQ(g.head->messages.size(), 3u);
    EXPECT_EQ(g.head->messages[0], head->messages[0]);  // the conversation's prefix is unchanged
    EXPECT_EQ(g.head->messages[1], json::value(json::object{{"role", "user"}, {"content", "INSTR"}}));
    EXPECT_EQ(g.head->messages[2], json::value(json::object{{"role", "assistant"}, {"content", "DRAFT"}}));
    EXPECT_EQ(head->messages.size(), 1u);  // the original request is untouched
    EXPECT_TRUE(g.prompt.starts_with("Your checkpoint above leaves out"));
}

TEST(recall_match, a_rule_of_two_clauses_may_be_kept_on_two_lines)
{
    const std::string rule =
        "Keep the public exportCsv() signature unchanged and do not add new dependencies.";
    const recall_probe p{probe_kind::rule, rule, recall_terms(rule), {"exportCsv()"}, true, "u1", {}};
    EXPECT_TRUE(probe_found(
        p,
        "## Constraints\n- Keep the public exportCsv() signature unchanged.\n- Do not add new dependencies."
    ));
    EXPECT_FALSE(probe_found(
        p, "## Constraints\n- Keep the public exportCsv() signature unchanged.\n- Add dependencies as needed."
    ));
}

TEST(recall_probes, abbreviations_end_no_sentence_and_name_nothing)
{
    session_text s;
    s.user("u1", "Fix the export, e.g. the quoted comma case. Never drop rows.");
    const auto ps = probes_of(s);
    EXPECT_EQ(texts(ps, probe_kind::rule), strings{"Never drop rows."});
    EXPECT_EQ(texts(ps, probe_kind::open_work), strings{"Fix the export, e.g. the quoted comma case."});
    EXPECT_EQ(texts(ps, probe_kind::artifact), strings{});
    EXPECT_EQ(
        recall_terms("The parser dropped rows, stopping early"),
        (strings{"parser", "drop", "row", "stop", "early"})
    );
}

TEST(recall_verbatim, a_revoked_rule_copied_from_the_previous_part_is_dropped)
{
    std::string summary =
        "## Goal\nShip.\n\n## User rules (verbatim)\n- Never push to main.\n- EU suppliers only.\n"
        "- Never push to main.\n## Next Steps\n1. Test.";
    const std::vector<recall_probe> probes{
        {probe_kind::rule, "EU suppliers only.", {}, {}, false, "", {}},
        {probe_kind::rule,
         "Actually, you may push to main now.",
         {},
         {},
         false,
         "u3",
         "Never push to main."}};
    EXPECT_EQ(drop_revoked_rules(summary, probes), 2u);
    EXPECT_EQ(
        summary, "## Goal\nShip.\n\n## User rules (verbatim)\n- EU suppliers only.\n## Next Steps\n1. Test."
    );
    // Outside the part, the model's own words are left alone.
    std::string own = "## Constraints\n- Never push to main.";
    EXPECT_EQ(drop_revoked_rules(own, probes), 0u);
    EXPECT_EQ(own, "## Constraints\n- Never push to main.");
}
