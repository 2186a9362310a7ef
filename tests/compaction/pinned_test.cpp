// Pinned entries: kept verbatim after the summary, never summarized, never moving the cut, never duplicated.
#include <agentctx/compaction/pinned.hpp>
#include <agentctx/compaction/prepare.hpp>
#include <agentctx/compaction/request_view.hpp>
#include <agentctx/compaction/summary.hpp>

#include "session_text.hpp"

#include <boost/json/serialize.hpp>

#include <gtest/gtest.h>

using namespace agentctx::compaction;
using agentctx::test::ids;
using agentctx::test::keep;
using agentctx::test::session_text;
using agentctx::test::tokens;
namespace json = boost::json;

namespace {

session_text& reminder(session_text& s, std::string_view id, std::string_view text)
{
    return s.entry(
        "custom_message",
        id,
        {{"customType", "reminder"},
         {"content", text},
         {"display", false},
         {"details", json::object{{"v", 1}}}}
    );
}

pin_policy reminders()
{
    pin_policy p;
    p.custom_types = {"reminder"};
    return p;
}

// Plans and assembles with the model's summary `text`, then appends the compaction entry as the
// runtime writes it (details.agentctx.pinned).
compaction_result compact(
    session_text& s, const std::string& id, const pin_policy& pins, const std::string& text
)
{
    diagnostics diag;
    const auto path = s.path();
    const auto p = prepare_compaction(path, keep(200), {.pins = &pins}, diag);
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
    return *r;
}

std::size_t count(std::string_view hay, std::string_view needle)
{
    std::size_t n = 0;
    for (std::size_t p = 0; (p = hay.find(needle, p)) != std::string_view::npos; p += needle.size())
        ++n;
    return n;
}

}  // namespace

TEST(pinned, a_pinned_entry_is_not_summarized_and_does_not_move_the_cut)
{
    session_text s;
    s.user("u1", tokens(100)).assistant("a1", tokens(100));
    reminder(s, "rem", "Always run the linter before committing.");
    s.user("u2", tokens(100)).assistant("a2", tokens(100));
    s.user("u3", tokens(100)).assistant("a3", tokens(100));
    diagnostics diag;
    const auto plain = prepare_compaction(s.path(), keep(200), {}, diag).value();
    const auto pins = reminders();
    const auto p = prepare_compaction(s.path(), keep(200), {.pins = &pins}, diag).value();
    EXPECT_EQ(p.first_kept_entry_id, plain.first_kept_entry_id);
    EXPECT_EQ(p.first_kept_entry_id, "u3");
    EXPECT_EQ(ids(plain.messages_to_summarize), (std::vector<std::string>{"u1", "a1", "rem", "u2", "a2"}));
    EXPECT_EQ(ids(p.messages_to_summarize), (std::vector<std::string>{"u1", "a1", "u2", "a2"}));
    ASSERT_EQ(p.pinned.size(), 1u);
    EXPECT_EQ(p.pinned[0].as_object().at("id"), "rem");
    // Verbatim: the entry's own JSON, metadata included.
    EXPECT_EQ(p.pinned[0].as_object().at("details"), (json::object{{"v", 1}}));
    EXPECT_TRUE(plain.pinned.empty());
}

TEST(pinned, only_standalone_entries_are_pinnable)
{
    session_text s;
    s.user("u1", "hello").assistant("a1", "hi");
    const auto path = s.path();
    pin_policy p;
    p.ids = {"u1", "a1"};
    EXPECT_TRUE(p.pins(*path[0]));
    EXPECT_FALSE(p.pins(*path[1]));  // an assistant message could carry tool calls
    pin_policy by_predicate;
    by_predicate.predicate = [](const entry& e) { return e.id == "u1"; };
    EXPECT_TRUE(by_predicate.pins(*path[0]));
    EXPECT_FALSE(pin_policy{}.pins(*path[0]));
}

TEST(pinned, the_compaction_carries_the_block_for_pi_and_agentctx_shows_the_entry_after_the_summary)
{
    session_text s;
    s.user("u1", tokens(100)).assistant("a1", tokens(100));
    reminder(s, "rem", "Always run the linter before committing.");
    s.user("u2", tokens(100)).assistant("a2", tokens(100));
    s.user("u3", tokens(100)).assistant("a3", tokens(100));
    const auto r = compact(s, "c1", reminders(), "## Goal\nship it");
    // Pi's projection shows the summary text: the block keeps the reminder there.
    EXPECT_EQ(count(r.summary, pinned_block_open), 1u);
    EXPECT_NE(
        r.summary.find("[reminder]\nAlways run the linter before committing.\n</pinned-entries>"),
        std::string::npos
    ) << r.summary;
    EXPECT_TRUE(r.summary.ends_with(pinned_block_close));

    const auto ctx = build_session_context(s.path());
    ASSERT_GE(ctx.messages.size(), 4u);
    const auto& summary = *ctx.messages[0].msg;
    EXPECT_EQ(summary.role, role::compaction_summary);
    EXPECT_EQ(summary.summary.find(pinned_block_open), std::string::npos);  // agentctx shows the entry itself
    EXPECT_EQ(summary.summary.find("## Goal\nship it"), 0u);
    const auto& pinned = *ctx.messages[1].msg;
    EXPECT_EQ(pinned.role, role::custom);
    EXPECT_EQ(pinned.custom_type, "reminder");
    EXPECT_EQ(content_text(pinned.content), "Always run the linter before committing.");
    EXPECT_EQ(ctx.messages[1].entry_id, "c1");
    EXPECT_EQ(ids(ctx.messages), (std::vector<std::string>{"c1", "c1", "u3", "a3"}));

    // A tight request view trims old groups, never the pinned entry.
    const auto fit = fit_request(ctx, {.max_tokens = 150});
    ASSERT_GE(fit.messages.size(), 2u);
    EXPECT_EQ(fit.messages[1].msg->custom_type, "reminder");
}

TEST(pinned, repeated_compactions_carry_each_pinned_entry_exactly_once)
{
    session_text s;
    s.user("u1", tokens(100)).assistant("a1", tokens(100));
    reminder(s, "rem1", "Reminder one.");
    s.user("u2", tokens(100)).assistant("a2", tokens(100));
    s.user("u3", tokens(100)).assistant("a3", tokens(100));
    const auto pins = reminders();
    compact(s, "c1", pins, "## Goal\nfirst");
    reminder(s, "rem2", "Reminder two.");
    s.user("u4", tokens(100)).assistant("a4", tokens(100));
    s.user("u5", tokens(100)).assistant("a5", tokens(100));

    diagnostics diag;
    const auto p2 = prepare_compaction(s.path(), keep(200), {.pins = &pins}, diag).value();
    ASSERT_TRUE(p2.previous_summary);
    EXPECT_EQ(
        p2.previous_summary->find(pinned_block_open), std::string::npos
    );  // the update prompt sees no block
    const auto r2 = compact(s, "c2", pins, "## Goal\nsecond");
    ASSERT_EQ(r2.pinned.size(), 2u);
    EXPECT_EQ(r2.pinned[0].as_object().at("id"), "rem1");
    EXPECT_EQ(r2.pinned[1].as_object().at("id"), "rem2");
    EXPECT_EQ(count(r2.summary, pinned_block_open), 1u);
    EXPECT_EQ(count(r2.summary, "Reminder one."), 1u);

    // A third compaction, with no policy at all: the carried pins stay.
    s.user("u6", tokens(100)).assistant("a6", tokens(100));
    s.user("u7", tokens(100)).assistant("a7", tokens(100));
    const auto r3 = compact(s, "c3", pin_policy{}, "## Goal\nthird");
    EXPECT_EQ(r3.pinned.size(), 2u);
    EXPECT_EQ(count(r3.summary, "Reminder one."), 1u);
    EXPECT_EQ(count(r3.summary, "Reminder two."), 1u);
    const auto ctx = build_session_context(s.path());
    std::vector<std::string> custom;
    for (const auto& m : ctx.messages)
        if (m.msg->role == role::custom)
            custom.push_back(content_text(m.msg->content));
    EXPECT_EQ(custom, (std::vector<std::string>{"Reminder one.", "Reminder two."}));
}

TEST(pinned, the_summarizer_is_told_what_is_kept)
{
    json::array pinned{json::object{{"type", "custom_message"}, {"id", "r"}, {"customType", "reminder"}}};
    const auto note = pinned_prompt_note(pinned);
    EXPECT_NE(note.find("<kept-verbatim>"), std::string::npos);
    EXPECT_NE(note.find("1 pinned entry (reminder)"), std::string::npos) << note;
    EXPECT_NE(note.find("Do not restate, paraphrase or replace them"), std::string::npos);
    EXPECT_TRUE(pinned_prompt_note({}).empty());
}

TEST(pinned, strip_leaves_text_without_a_trailing_block_alone)
{
    EXPECT_EQ(strip_pinned_block("plain"), "plain");
    const std::string quoted =
        std::string("a ") + std::string(pinned_block_open) + "x" + std::string(pinned_block_close) + " b";
    EXPECT_EQ(strip_pinned_block(quoted), quoted);
    EXPECT_EQ(
        strip_pinned_block(
            "S\n\n" + std::string(pinned_block_open) + "x\n" + std::string(pinned_block_close)
        ),
        "S"
    );
}

TEST(pinned, settings_pin_by_custom_type_strictly)
{
    diagnostics diag;
    auto p = parse_pin_settings(
        json::parse(R"({"pinned":{"customTypes":["reminder"],"ids":["e1"]}})").as_object(), diag
    );
    ASSERT_TRUE(p) << diag.message;
    EXPECT_EQ(p->custom_types, std::vector<std::string>{"reminder"});
    EXPECT_EQ(p->ids, std::vector<std::string>{"e1"});
    EXPECT_TRUE(parse_pin_settings(json::object{}, diag)->empty());
    auto bad = parse_pin_settings(json::parse(R"({"pinned":{"customTypes":[1]}})").as_object(), diag);
    EXPECT_EQ(bad.error(), make_error_code(errc::invalid_settings));
    EXPECT_EQ(diag.field, "pinned.customTypes[0]");
}
