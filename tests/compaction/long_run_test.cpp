// Long autonomous runs: repeated compaction inside one human turn keeps the newest exchanges and the
// instruction verbatim.
#include <agentctx/compaction/pinned.hpp>
#include <agentctx/compaction/prepare.hpp>
#include <agentctx/compaction/summary.hpp>

#include "session_text.hpp"

#include <gtest/gtest.h>

using namespace agentctx::compaction;
using agentctx::test::ids;
using agentctx::test::keep;
using agentctx::test::session_text;
using agentctx::test::tokens;
namespace json = boost::json;

namespace {

constexpr std::string_view instruction =
    "Port every parser module to the new AST API and keep the tests green.";

void exchange(session_text& s, int i)
{
    const std::string n = std::to_string(i);
    s.tool_call("a" + n, "call_" + n, "bash", {{"command", "edit module " + n}});
    s.tool_result("r" + n, "call_" + n, "bash", tokens(300));
}

// Plans, assembles with a fixed summary and appends the compaction as the runtime writes it.
compaction_preparation compact(
    session_text& s,
    const std::string& id,
    const compaction_settings& settings,
    const pin_policy* pins = nullptr
)
{
    diagnostics diag;
    const auto path = s.path();
    auto p = prepare_compaction(path, settings, {.pins = pins}, diag);
    EXPECT_TRUE(p) << diag.message;
    if (!p)
        return {};
    auto r = assemble_compaction(
        path,
        *p,
        std::string("## Goal\nport the parser (") + id + ")",
        p->is_split_turn ? std::optional<std::string>("## Turn\nearlier steps") : std::nullopt,
        0,
        settings,
        diag
    );
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
    return *p;
}

std::size_t occurrences(const std::vector<context_message>& msgs, std::string_view text)
{
    std::size_t n = 0;
    for (const auto& m : msgs)
        if (m.msg->role == role::user && content_text(m.msg->content) == text)
            ++n;
    return n;
}

bool summarizes(const compaction_preparation& p, std::string_view id)
{
    const auto a = ids(p.messages_to_summarize), b = ids(p.turn_prefix_messages);
    return std::find(a.begin(), a.end(), id) != a.end() || std::find(b.begin(), b.end(), id) != b.end();
}

}  // namespace

TEST(long_run, a_60_exchange_turn_compacts_repeatedly_keeping_four_exchanges_and_the_instruction)
{
    session_text s;
    s.user("u0", "earlier question").assistant("b0", "earlier answer");
    s.user("u1", instruction);
    const auto settings = keep(100);  // the token rule alone would keep one exchange
    int compactions = 0;
    for (int i = 0; i < 60; ++i)
    {
        exchange(s, i);
        if (i % 10 != 9)
            continue;
        const auto p = compact(s, "c" + std::to_string(i), settings);
        ++compactions;
        // The newest four exchanges are kept: the cut is at the fourth-newest call.
        EXPECT_EQ(p.first_kept_entry_id, "a" + std::to_string(i - 3)) << "after exchange " << i;
        // The instruction is never summarized, and shown verbatim exactly once after the summary.
        EXPECT_FALSE(summarizes(p, "u1")) << "after exchange " << i;
        const auto ctx = build_session_context(s.path());
        ASSERT_GE(ctx.messages.size(), 2u);
        EXPECT_EQ(ctx.messages[0].msg->role, role::compaction_summary);
        EXPECT_EQ(content_text(ctx.messages[1].msg->content), instruction);
        EXPECT_EQ(occurrences(ctx.messages, instruction), 1u);
        // Then exactly the last four exchanges.
        std::vector<std::string> expected{"c" + std::to_string(i), "c" + std::to_string(i)};
        for (int k = i - 3; k <= i; ++k)
        {
            expected.push_back("a" + std::to_string(k));
            expected.push_back("r" + std::to_string(k));
        }
        EXPECT_EQ(ids(ctx.messages), expected);
        // Pi's projection keeps it too: once, in the summary's labelled block.
        const std::string summary = s.path().back()->summary;
        EXPECT_EQ(summary.find(pinned_block_open), summary.rfind(pinned_block_open));
        EXPECT_NE(summary.find(std::string("[user]\n") + std::string(instruction)), std::string::npos);
    }
    EXPECT_EQ(compactions, 6);
}

TEST(long_run, the_first_compaction_of_the_turn_summarizes_the_earlier_steps_but_not_the_prompt)
{
    session_text s;
    s.user("u0", "earlier question").assistant("b0", tokens(100));
    s.user("u1", instruction);
    for (int i = 0; i < 8; ++i)
        exchange(s, i);
    diagnostics diag;
    const auto p = prepare_compaction(s.path(), keep(100), {}, diag).value();
    EXPECT_EQ(p.first_kept_entry_id, "a4");
    EXPECT_TRUE(p.is_split_turn);
    EXPECT_EQ(ids(p.messages_to_summarize), (std::vector<std::string>{"u0", "b0"}));
    EXPECT_EQ(
        ids(p.turn_prefix_messages),
        (std::vector<std::string>{"a0", "r0", "a1", "r1", "a2", "r2", "a3", "r3"})
    );
    ASSERT_EQ(p.pinned.size(), 1u);
    EXPECT_EQ(p.pinned[0].as_object().at("id"), "u1");
    // Pi's rules summarize the prompt into the turn prefix, as Pi 1.6 does.
    const auto pi = prepare_compaction(s.path(), keep(100), {.mode = compat_mode::pi}, diag).value();
    EXPECT_EQ(pi.first_kept_entry_id, "a7");
    EXPECT_EQ(ids(pi.turn_prefix_messages).front(), "u1");
    EXPECT_TRUE(pi.pinned.empty());
}

TEST(long_run, keep_recent_exchanges_is_a_setting_and_zero_turns_it_off)
{
    session_text s;
    s.user("u1", instruction);
    for (int i = 0; i < 8; ++i)
        exchange(s, i);
    diagnostics diag;
    auto two = keep(100);
    two.keep_recent_exchanges = 2;
    EXPECT_EQ(prepare_compaction(s.path(), two, {}, diag).value().first_kept_entry_id, "a6");
    auto off = keep(100);
    off.keep_recent_exchanges = 0;
    EXPECT_EQ(prepare_compaction(s.path(), off, {}, diag).value().first_kept_entry_id, "a7");

    settings_layers layers;
    layers.global = json::parse(R"({"compaction":{"keepRecentExchanges":6}})").as_object();
    EXPECT_EQ(resolve_settings(layers, diag).value().keep_recent_exchanges, 6);
    EXPECT_EQ(resolve_settings({}, diag).value().keep_recent_exchanges, 4);
    layers.global = json::parse(R"({"compaction":{"keepRecentExchanges":-1}})").as_object();
    const auto bad = resolve_settings(layers, diag);
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error(), errc::invalid_settings);
    EXPECT_EQ(diag.field, "compaction.keepRecentExchanges");
}

TEST(long_run, a_turn_with_fewer_exchanges_than_the_setting_is_kept_whole)
{
    session_text s;
    s.user("u0", tokens(400)).assistant("b0", tokens(400));
    s.user("u1", instruction);
    for (int i = 0; i < 3; ++i)
        exchange(s, i);
    diagnostics diag;
    const auto p = prepare_compaction(s.path(), keep(100), {}, diag).value();
    EXPECT_EQ(p.first_kept_entry_id, "u1");
    EXPECT_FALSE(p.is_split_turn);
    EXPECT_TRUE(p.pinned.empty());  // the instruction is kept in place
}

TEST(long_run, a_new_prompt_makes_the_carried_instruction_history)
{
    session_text s;
    s.user("u1", instruction);
    for (int i = 0; i < 8; ++i)
        exchange(s, i);
    compact(s, "c1", keep(100));
    s.user("u2", "now update the changelog");
    for (int i = 8; i < 16; ++i)
        exchange(s, i);
    const auto p = compact(s, "c2", keep(100));
    EXPECT_EQ(p.first_kept_entry_id, "a12");
    // The old instruction is summarized now (first: it is the oldest), the new one carried.
    ASSERT_FALSE(p.messages_to_summarize.empty());
    EXPECT_EQ(p.messages_to_summarize.front().entry_id, "u1");
    EXPECT_EQ(content_text(p.messages_to_summarize.front().msg->content), instruction);
    ASSERT_EQ(p.pinned.size(), 1u);
    EXPECT_EQ(p.pinned[0].as_object().at("id"), "u2");
    const auto ctx = build_session_context(s.path());
    EXPECT_EQ(occurrences(ctx.messages, instruction), 0u);
    EXPECT_EQ(occurrences(ctx.messages, "now update the changelog"), 1u);
}

TEST(long_run, only_the_latest_reminder_snapshot_stays_in_the_working_request)
{
    const auto snapshot = [](session_text& s, std::string_view id, std::string_view text) {
        s.entry("custom_message", id, {{"customType", "todo"}, {"content", text}, {"display", false}});
    };
    pin_policy pins;
    pins.snapshot_types = {"todo"};
    session_text s;
    s.user("u1", instruction);
    snapshot(s, "todo1", "1. parse  2. lower");
    for (int i = 0; i < 4; ++i)
        exchange(s, i);
    snapshot(s, "todo2", "1. parse [done]  2. lower");
    for (int i = 4; i < 12; ++i)
        exchange(s, i);
    const auto p = compact(s, "c1", keep(100), &pins);
    EXPECT_FALSE(summarizes(p, "todo1"));
    EXPECT_FALSE(summarizes(p, "todo2"));
    std::vector<std::string> carried;
    for (const auto& v : p.pinned)
        carried.emplace_back(v.as_object().at("id").as_string());
    EXPECT_EQ(carried, (std::vector<std::string>{"u1", "todo2"}));

    // A newer snapshot in the kept range retires the carried one at the next compaction.
    for (int i = 12; i < 14; ++i)
        exchange(s, i);
    snapshot(s, "todo3", "1. parse [done]  2. lower [done]");
    for (int i = 14; i < 16; ++i)
        exchange(s, i);
    diagnostics diag;
    const auto next = prepare_compaction(s.path(), keep(100), {.pins = &pins}, diag).value();
    carried.clear();
    for (const auto& v : next.pinned)
        carried.emplace_back(v.as_object().at("id").as_string());
    EXPECT_EQ(carried, (std::vector<std::string>{"u1"}));
    // History keeps every snapshot.
    EXPECT_NE(s.text.find("\"todo1\""), std::string::npos);
}
