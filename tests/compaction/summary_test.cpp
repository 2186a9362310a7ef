// Summary validation and assembly: every rejection has its code; the split-turn merge is exact.
#include <agentctx/compaction/summary.hpp>

#include <agentctx/compaction/json_text.hpp>

#include "session_text.hpp"

#include <gtest/gtest.h>

using namespace agentctx::compaction;
using agentctx::test::session_text;
using agentctx::test::tokens;

namespace {

errc check(summary_output out, std::uint32_t cap = 100)
{
    diagnostics diag;
    auto r = check_summary_output(out, cap, diag);
    return r ? errc{} : static_cast<errc>(r.error().value());
}

std::string message_of(summary_output out, summary_kind kind = summary_kind::history)
{
    diagnostics diag;
    auto r = check_summary_output(out, 0, diag, kind);
    return r ? std::string("ok") : diag.message;
}

summary_output with_tool_call(std::string text, stop_reason stop = stop_reason::tool_use)
{
    summary_output o{std::move(text), stop, std::nullopt};
    o.tool_calls = 1;
    return o;
}

}  // namespace

TEST(summary, rejections)
{
    EXPECT_EQ(check({"## Goal\nok", stop_reason::stop}), errc{});
    EXPECT_EQ(check({"## Goal\ncut off mid-wo", stop_reason::length}), errc::summary_truncated);
    EXPECT_EQ(check({"", stop_reason::error, "HTTP 500"}), errc::summary_failed);
    EXPECT_EQ(check({"partial", stop_reason::aborted}), errc::summary_aborted);
    EXPECT_EQ(check({"", stop_reason::stop}), errc::summary_empty);
    EXPECT_EQ(check({" \n\t ", stop_reason::stop}), errc::summary_empty);
    EXPECT_EQ(check({tokens(101), stop_reason::stop}, 100), errc::summary_too_long);
    EXPECT_EQ(check({tokens(100), stop_reason::stop}, 100), errc{});
    EXPECT_EQ(check(with_tool_call("## Goal\nok")), errc::summary_tool_call);
    EXPECT_EQ(check({"", stop_reason::aborted}), errc::summary_aborted);  // abort wins over empty
}

TEST(summary, rejection_order_and_pi_messages)
{
    // Pi 1.6 item 34: error, then length, then any tool call.
    EXPECT_EQ(message_of({"x", stop_reason::error, "boom"}), "Summarization failed: boom");
    EXPECT_EQ(message_of({"x", stop_reason::error, std::nullopt}), "Summarization failed: Unknown error");
    EXPECT_EQ(message_of({"x", stop_reason::error, ""}), "Summarization failed: Unknown error");
    EXPECT_EQ(
        message_of({"x", stop_reason::length, std::nullopt}),
        "Summarization failed: generation hit the token cap and the summary is incomplete"
    );
    EXPECT_EQ(
        message_of({"x", stop_reason::length, std::nullopt}, summary_kind::turn_prefix),
        "Turn prefix summarization failed: generation hit the token cap and the summary is incomplete"
    );
    EXPECT_EQ(
        message_of({"x", stop_reason::error, "boom"}, summary_kind::turn_prefix),
        "Turn prefix summarization failed: boom"
    );
    EXPECT_EQ(message_of(with_tool_call("SUM")), "Summarization attempted to call a tool");
    EXPECT_EQ(
        message_of(with_tool_call("SUM", stop_reason::stop), summary_kind::turn_prefix),
        "Turn prefix summarization attempted to call a tool"
    );
    EXPECT_EQ(
        message_of({"x", stop_reason::error, "boom"}, summary_kind::branch),
        "Branch summarization failed: boom"
    );
    EXPECT_EQ(check(with_tool_call("x", stop_reason::length)), errc::summary_truncated);
    EXPECT_EQ(check(with_tool_call("x", stop_reason::error)), errc::summary_failed);
    EXPECT_EQ(check(with_tool_call("", stop_reason::aborted)), errc::summary_tool_call);
    EXPECT_STREQ(to_string(errc::summary_tool_call), "summary_tool_call");
    EXPECT_EQ(make_error_code(errc::summary_tool_call).message(), "summary_tool_call");
    EXPECT_EQ(static_cast<int>(errc::summary_tool_call), static_cast<int>(errc::insufficient_reduction) + 1);
}

TEST(summary, split_turn_merge_text)
{
    EXPECT_EQ(merge_split_turn(std::string("H"), "P"), "H\n\n---\n\n**Turn Context (split turn):**\n\nP");
    EXPECT_EQ(
        merge_split_turn(std::nullopt, "P"), "No prior history.\n\n---\n\n**Turn Context (split turn):**\n\nP"
    );
    // Pi 1.6 (#11058): only a split turn since the last compaction reuses its summary verbatim.
    EXPECT_EQ(
        merge_split_turn(std::nullopt, "P", std::string("PREV")),
        "PREV\n\n---\n\n**Turn Context (split turn):**\n\nP"
    );
    EXPECT_EQ(
        merge_split_turn(std::string("H"), "P", std::string("PREV")),
        "H\n\n---\n\n**Turn Context (split turn):**\n\nP"
    );
}

TEST(summary, combine_usage_sums_and_writes_pi_key_order)
{
    usage a;
    a.input = 100;
    a.output = 20;
    a.cache_read = 5;
    a.cache_write = 1;
    a.total_tokens = 126;
    a.cost = {0.5, 0.25, 0.125, 0.0625, 0.9375};
    a.total_from_provider = true;
    usage b = a;
    b.reasoning = 7;
    b.total_from_provider = false;
    const usage c = combine_usage(a, b);
    EXPECT_EQ(c.input, 200);
    EXPECT_EQ(c.output, 40);
    EXPECT_EQ(c.cache_read, 10);
    EXPECT_EQ(c.cache_write, 2);
    EXPECT_EQ(c.total_tokens, 252);
    EXPECT_FALSE(c.cache_write_1h);
    EXPECT_EQ(c.reasoning, 7);
    EXPECT_FALSE(c.total_from_provider);
    EXPECT_EQ(
        stringify(usage_to_json(c)),
        R"({"input":200,"output":40,"cacheRead":10,"cacheWrite":2,"reasoning":7,"totalTokens":252,)"
        R"("cost":{"input":1,"output":0.5,"cacheRead":0.25,"cacheWrite":0.125,"total":1.875,"totalFromProvider":false}})"
    );
    EXPECT_TRUE(combine_usage(a, a).total_from_provider);
    usage h;
    h.cache_write_1h = 3;
    EXPECT_EQ(
        stringify(usage_to_json(combine_usage(b, h))),
        R"({"input":100,"output":20,"cacheRead":5,"cacheWrite":1,"cacheWrite1h":3,"reasoning":7,"totalTokens":126,)"
        R"("cost":{"input":0.5,"output":0.25,"cacheRead":0.125,"cacheWrite":0.0625,"total":0.9375,"totalFromProvider":false}})"
    );
    EXPECT_EQ(
        stringify(usage_to_json(usage{})),
        R"({"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,)"
        R"("cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0,"totalFromProvider":false}})"
    );
}

TEST(summary, compaction_usage_combines_only_when_both_requests_ran)
{
    usage h, p;
    h.input = 10;
    h.total_tokens = 10;
    h.total_from_provider = true;
    p.input = 3;
    p.total_tokens = 3;
    p.total_from_provider = true;
    EXPECT_EQ(compaction_usage(h, p)->input, 13);
    EXPECT_TRUE(compaction_usage(h, p)->total_from_provider);
    EXPECT_EQ(compaction_usage(std::nullopt, p)->input, 3);
    EXPECT_EQ(compaction_usage(h, std::nullopt)->input, 10);
    EXPECT_FALSE(compaction_usage(std::nullopt, std::nullopt));
}

TEST(summary, assembly_appends_file_blocks_and_details)
{
    session_text s;
    s.user("u1", tokens(100)).assistant("a1", tokens(100)).user("u2", tokens(10)).assistant("a2", tokens(10));
    const auto path = s.path();
    compaction_preparation prep;
    prep.first_kept_index = 2;
    prep.first_kept_entry_id = "u2";
    prep.tokens_before = 220;
    prep.file_ops.read = {"r.ts"};
    prep.file_ops.edited = {"e.ts"};
    diagnostics diag;
    const auto r = assemble_compaction(
                       path, prep, std::string("SUMMARY"), std::nullopt, 200000, compaction_settings{}, diag
    )
                       .value();
    EXPECT_EQ(
        r.summary, "SUMMARY\n\n<read-files>\nr.ts\n</read-files>\n\n<modified-files>\ne.ts\n</modified-files>"
    );
    EXPECT_EQ(stringify(r.details), R"({"readFiles":["r.ts"],"modifiedFiles":["e.ts"]})");
    EXPECT_EQ(r.first_kept_entry_id, "u2");
    EXPECT_EQ(r.tokens_before, 220);
    // summary (83 chars -> 21) + u2 (10) + a2 (10)
    EXPECT_EQ(r.tokens_after, 21 + 10 + 10);
}

TEST(summary, insufficient_reduction_guards_against_compaction_loops)
{
    session_text s;
    s.user("u1", tokens(100))
        .assistant("a1", tokens(100))
        .user("u2", tokens(900))
        .assistant("a2", tokens(50));
    const auto path = s.path();
    compaction_preparation prep;
    prep.first_kept_index = 2;
    prep.first_kept_entry_id = "u2";
    compaction_settings st;
    st.reserve_tokens = 100;
    diagnostics diag;
    // Window 1000, threshold 900: the kept suffix alone is 950.
    auto r = assemble_compaction(path, prep, std::string("S"), std::nullopt, 1000, st, diag);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), make_error_code(errc::insufficient_reduction));
    EXPECT_NE(diag.message.find("threshold of 900"), std::string::npos) << diag.message;
    EXPECT_TRUE(assemble_compaction(path, prep, std::string("S"), std::nullopt, 2000, st, diag));
}

TEST(summary, split_turn_needs_the_prefix_summary)
{
    session_text s;
    s.user("u1", "q").assistant("a1", "r");
    const auto path = s.path();
    compaction_preparation prep;
    prep.is_split_turn = true;
    prep.turn_prefix_messages.push_back({path[0]->message, "u1"});
    prep.first_kept_index = 1;
    diagnostics diag;
    EXPECT_EQ(
        assemble_compaction(path, prep, std::nullopt, std::nullopt, 0, {}, diag).error(),
        make_error_code(errc::summary_empty)
    );
    const auto r = assemble_compaction(path, prep, std::nullopt, std::string("P"), 0, {}, diag).value();
    EXPECT_EQ(r.summary, "No prior history.\n\n---\n\n**Turn Context (split turn):**\n\nP");
    // Pi 1.6 item 33: only a split turn since a previous summary PREV.
    prep.previous_summary = "PREV";
    const auto p = assemble_compaction(path, prep, std::nullopt, std::string("P"), 0, {}, diag).value();
    EXPECT_EQ(p.summary.rfind("PREV\n\n---\n\n**Turn Context (split turn):**\n\n", 0), 0u) << p.summary;
}
