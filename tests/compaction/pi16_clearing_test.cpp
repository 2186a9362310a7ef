// Tool-result clearing's context_edit entries project in agentctx as Pi 1.6.0 projects them.
#include <agentctx/compaction/json_text.hpp>
#include <agentctx/compaction/projection.hpp>
#include <agentctx/compaction/session_log.hpp>
#include <agentctx/compaction/token_estimate.hpp>

#include "file_text.hpp"

#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

using namespace agentctx::compaction;
namespace json = boost::json;

namespace {

// tests/fixtures/pi16_clearing.jsonl was written by agentctx's clearing tier (results and input
// clearing, keep 2) and a manual compaction: 17 reads, 30 context_edit entries, one compaction.
// tests/fixtures/pi16_clearing_projection.json is Pi 1.6.0's projection of it at four leaves:
// after the first clearing, after the second, at the compaction, and after a clearing past it,
// printed by `node tests/tools/pi16_project.mjs PI_DIR tests/fixtures/pi16_clearing.jsonl LEAVES`.
session_log fixture()
{
    load_report report;
    diagnostics diag;
    auto log = session_log::load(
        agentctx::test::read_text(AGENTCTX_FIXTURES_DIR "/pi16_clearing.jsonl"), {}, report, diag
    );
    EXPECT_TRUE(log) << diag.message;
    return std::move(*log);
}

json::object expected()
{
    return json::parse(agentctx::test::read_text(AGENTCTX_FIXTURES_DIR "/pi16_clearing_projection.json"))
        .as_object();
}

std::string text_of(const message& m)
{
    if (m.role == role::compaction_summary)
        return m.summary;
    if (m.content.is_string)
        return m.content.text;
    std::string out;
    for (const auto& b : m.content.blocks)
        if (const auto* t = std::get_if<text_block>(&b))
            out += t->text;
    return out;
}

json::array calls_of(const message& m)
{
    json::array out;
    for (const auto& b : m.content.blocks)
        if (const auto* c = std::get_if<tool_call_block>(&b))
            out.push_back(json::object{{"id", c->id}, {"arguments", c->arguments}});
    return out;
}

// One leaf: every message of Pi's projection in order, with its entry, estimate, text and calls.
// agentctx shows a compaction's pinned entries as their own messages where Pi reads them inside
// the summary text; those are matched against the summary Pi shows.
void expect_same_projection(const session_log& log, const std::string& leaf, const json::array& pi)
{
    SCOPED_TRACE("leaf " + leaf);
    diagnostics diag;
    const auto ctx = build_session_context(log, log.find(leaf), diag);
    ASSERT_TRUE(ctx) << diag.message;
    std::size_t p = 0;
    std::string pi_summary;
    for (const auto& m : ctx->messages)
    {
        if (m.msg->role == role::user && !pi_summary.empty() && p > 0 &&
            pi.at(p - 1).at("entryId").as_string() == m.entry_id)
        {
            EXPECT_NE(pi_summary.find(text_of(*m.msg)), std::string::npos)
                << "pinned entry not in Pi's summary";
            continue;
        }
        ASSERT_LT(p, pi.size()) << "agentctx projects more messages than Pi";
        const auto& want = pi.at(p++).as_object();
        EXPECT_EQ(to_string(m.msg->role), want.at("role").as_string());
        EXPECT_EQ(m.entry_id, want.at("entryId").as_string());
        if (m.msg->role == role::compaction_summary)
        {
            pi_summary = want.at("text").as_string();
            EXPECT_TRUE(pi_summary.starts_with(text_of(*m.msg)));
            continue;
        }
        EXPECT_EQ(static_cast<std::int64_t>(estimate_tokens(*m.msg)), want.at("tokens").as_int64())
            << m.entry_id;
        EXPECT_EQ(text_of(*m.msg), want.at("text").as_string()) << m.entry_id;
        EXPECT_EQ(stringify(calls_of(*m.msg)), stringify(want.at("calls"))) << m.entry_id;
    }
    EXPECT_EQ(p, pi.size()) << "Pi projects more messages than agentctx";
}

TEST(pi16_clearing, cleared_results_and_inputs_project_as_in_pi_at_every_stage)
{
    const auto log = fixture();
    const auto pi = expected();
    ASSERT_EQ(pi.size(), 4u);
    std::size_t placeholders = 0;
    for (const auto& [leaf, messages] : pi)
    {
        expect_same_projection(log, std::string(leaf), messages.as_array());
        for (const auto& m : messages.as_array())
            placeholders += m.at("text").as_string().starts_with("[Tool result cleared: ");
    }
    // The stages hold 3, 11, 1 and 5 cleared results: the check covers real edits.
    EXPECT_EQ(placeholders, 20u);
}

}  // namespace
