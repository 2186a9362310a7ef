// Differential: planning over the index (only projected entries materialized) gives exactly the
// plan of the fully materialized path, on generated sessions of every shape.
#include <agentctx/compaction/llm_convert.hpp>
#include <agentctx/compaction/prepare.hpp>
#include <agentctx/compaction/serialize.hpp>
#include <agentctx/compaction/token_estimate.hpp>

#include "session_generator.hpp"

#include <gtest/gtest.h>

using namespace agentctx::compaction;

namespace {

std::vector<entry_ptr> materialize(const session_log& log)
{
    diagnostics diag;
    std::vector<entry_ptr> path;
    for (auto i : log.active_path())
        path.push_back(log.get(i, diag).value());
    return path;
}

// Everything a message list tells the summarizer and the budget: ids, roles, tokens, the text.
std::string describe(const std::vector<context_message>& msgs)
{
    std::string out;
    std::vector<std::shared_ptr<const message>> v;
    for (const auto& m : msgs)
    {
        out += m.entry_id + ":" + std::string(to_string(m.msg->role)) + ":" +
               std::to_string(estimate_tokens(*m.msg)) + " ";
        v.push_back(m.msg);
    }
    return out + "\n" + serialize_conversation(convert_to_llm(v));
}

void expect_same(const result<compaction_preparation>& lazy, const result<compaction_preparation>& full)
{
    ASSERT_EQ(lazy.has_value(), full.has_value());
    if (!full)
    {
        EXPECT_EQ(lazy.error(), full.error());
        return;
    }
    const auto& a = *lazy;
    const auto& b = *full;
    EXPECT_EQ(a.first_kept_entry_id, b.first_kept_entry_id);
    EXPECT_EQ(a.first_kept_index, b.first_kept_index);
    EXPECT_EQ(a.boundary_start, b.boundary_start);
    EXPECT_EQ(a.first_kept_projected, b.first_kept_projected);
    EXPECT_EQ(a.boundary_projected, b.boundary_projected);
    EXPECT_EQ(a.advanced_past_omitted_attempt, b.advanced_past_omitted_attempt);
    EXPECT_EQ(describe(a.messages_to_summarize), describe(b.messages_to_summarize));
    EXPECT_EQ(describe(a.turn_prefix_messages), describe(b.turn_prefix_messages));
    EXPECT_EQ(a.is_split_turn, b.is_split_turn);
    EXPECT_EQ(a.turn_start_index, b.turn_start_index);
    EXPECT_EQ(a.tokens_before, b.tokens_before);
    EXPECT_EQ(a.previous_summary, b.previous_summary);
    EXPECT_EQ(a.file_ops.read, b.file_ops.read);
    EXPECT_EQ(a.file_ops.written, b.file_ops.written);
    EXPECT_EQ(a.file_ops.edited, b.file_ops.edited);
    EXPECT_EQ(a.crossing_index, b.crossing_index);
    EXPECT_EQ(a.pinned, b.pinned);
}

}  // namespace

TEST(lazy_plan, index_backed_plan_equals_materialized_plan)
{
    pin_policy pins;
    pins.predicate = [](const entry& e) { return e.id.size() > 1 && e.id[1] < '4'; };  // about a quarter
    int plans = 0;
    for (std::uint64_t seed = 1; seed <= 60; ++seed)
    {
        const int version = seed % 5 == 0 ? 1 : seed % 5 == 1 ? 2 : 3;
        const auto text = agentctx::tools::generate_session({
            .seed = seed,
            .entries = 80 + seed * 13 % 400,
            .mean_tool_output = 1200,
            .branch_rate = seed % 2 ? 0.1 : 0.0,
            .compaction_every = seed % 3 == 0 ? 0u : 3u + seed % 5,
            .metadata_rate = 0.3,
            .interleave_rate = 0.3,
            .version = version,
            .pi16 = version == 3 && seed % 2 == 0,
        });
        load_report report;
        diagnostics diag;
        auto log = session_log::load(text, {}, report, diag);
        ASSERT_TRUE(log) << diag.message;
        const auto path = materialize(*log);
        diagnostics context_diag;
        const auto context = build_session_context(*log, context_diag);
        ASSERT_TRUE(context) << context_diag.message;
        for (const auto mode : {compat_mode::agentctx, compat_mode::pi})
            for (const pin_policy* p :
                 {static_cast<const pin_policy*>(nullptr), static_cast<const pin_policy*>(&pins)})
                for (std::int64_t keep : {0, 300, 2000, 8000})
                {
                    SCOPED_TRACE(
                        "seed " + std::to_string(seed) + " keep " + std::to_string(keep) +
                        (mode == compat_mode::pi ? " pi" : "") + (p ? " pins" : "")
                    );
                    compaction_settings st;
                    st.keep_recent_tokens = keep;
                    const plan_options opts{.mode = mode, .pins = p};
                    diagnostics d1, d2;
                    const auto lazy = prepare_compaction(*log, st, opts, d1);
                    const auto full = prepare_compaction(path, st, opts, d2);
                    expect_same(lazy, full);
                    EXPECT_EQ(d1.message, d2.message);
                    // Given the context the caller built already: the same plan.
                    diagnostics d3;
                    const auto given = prepare_compaction(*log, *context, st, opts, d3);
                    expect_same(given, full);
                    EXPECT_EQ(d3.message, d2.message);
                    plans += full.has_value();
                }
    }
    EXPECT_GT(plans, 250);  // the comparison is not vacuous
}
