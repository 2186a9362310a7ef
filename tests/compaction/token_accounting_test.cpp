// Token accounting and the threshold, including the stale-usage rule.
#include <agentctx/compaction/settings.hpp>
#include <agentctx/compaction/token_accounting.hpp>

#include "session_text.hpp"

#include <gtest/gtest.h>

using namespace agentctx::compaction;
using agentctx::test::session_text;

TEST(token_accounting, threshold_is_strict_at_the_default_boundary)
{
    const compaction_settings s;  // reserve 16384
    EXPECT_TRUE(should_compact(183617, 200000, s));
    EXPECT_FALSE(should_compact(183616, 200000, s));
    compaction_settings off;
    off.enabled = false;
    EXPECT_FALSE(should_compact(999999, 200000, off));
    compaction_settings pi_test;
    pi_test.reserve_tokens = 10000;
    EXPECT_TRUE(should_compact(95000, 100000, pi_test));
    EXPECT_FALSE(should_compact(89000, 100000, pi_test));
}

TEST(token_accounting, calculate_context_tokens_prefers_total)
{
    usage u{
        .input = 1000, .output = 500, .cache_read = 200, .cache_write = 100, .total_tokens = 0, .cost = {}};
    EXPECT_EQ(calculate_context_tokens(u), 1800);
    u.total_tokens = 5000;
    EXPECT_EQ(calculate_context_tokens(u), 5000);
    EXPECT_EQ(calculate_context_tokens(usage{}), 0);
}

TEST(token_accounting, usage_anchor_plus_trailing_estimates)
{
    session_text s;
    s.user("u1", "hello").assistant("a1", "hi", 1000).assistant("a2", "aborted", 300, "aborted");
    s.user("u2", "12345678");  // 2 tokens
    auto log = s.load();
    diagnostics diag;
    const auto ctx = build_session_context(log, diag).value();
    const auto est = estimate_context_tokens(ctx.messages);
    ASSERT_TRUE(est.last_usage_index);
    EXPECT_EQ(*est.last_usage_index, 1u);  // the aborted one does not anchor
    EXPECT_EQ(est.usage_tokens, 1000);
    EXPECT_EQ(est.trailing_tokens, 2 + 2);  // "aborted" (7 chars -> 2) + "12345678" (2)
    EXPECT_EQ(est.tokens, 1004);
}

TEST(token_accounting, no_usage_estimates_everything)
{
    session_text s;
    s.user("u1", "abcd").user("u2", "abcde");
    diagnostics diag;
    auto ctx = build_session_context(s.load(), diag).value();
    const auto est = estimate_context_tokens(ctx.messages);
    EXPECT_FALSE(est.last_usage_index);
    EXPECT_EQ(est.tokens, 1 + 2);
}

TEST(token_accounting, stale_usage_before_the_latest_compaction_cannot_anchor)
{
    session_text s;
    s.user("u1", "old").assistant("a1", "old answer", 610000);
    s.compaction("c1", "a1", "summary text", 610000);  // keeps a1 with its huge stale usage
    s.user("u2", "new question");
    auto log = s.load();
    diagnostics diag;
    const auto ctx = build_session_context(log, diag).value();
    const auto pi = estimate_context_tokens(ctx.messages);  // Pi: anchors on the stale usage
    EXPECT_EQ(pi.usage_tokens, 610000);
    const auto fresh =
        estimate_context_tokens(ctx.messages, default_token_counter(), latest_compaction_time(ctx));
    EXPECT_FALSE(fresh.last_usage_index);
    // "summary text" 12 -> 3, "old answer" 10 -> 3, "new question" 12 -> 3
    EXPECT_EQ(fresh.tokens, 9);
    EXPECT_FALSE(should_compact(fresh.tokens, 200000, compaction_settings{}));
    EXPECT_TRUE(should_compact(pi.tokens, 200000, compaction_settings{}));
}

TEST(token_accounting, context_usage_is_unknown_after_a_compaction_until_fresh_usage)
{
    session_text s;
    s.user("u1", "old").assistant("a1", "old", 150000);
    s.compaction("c1", "u1", "S");
    s.user("u2", "next");
    diagnostics diag;
    auto ctx = build_session_context(s.load(), diag).value();
    auto u = context_usage(ctx, 200000);
    ASSERT_TRUE(u);
    EXPECT_FALSE(u->tokens);
    EXPECT_FALSE(u->percent);
    s.assistant("a2", "fresh", 5000);
    ctx = build_session_context(s.load(), diag).value();
    u = context_usage(ctx, 200000);
    ASSERT_TRUE(u && u->tokens);
    EXPECT_EQ(*u->tokens, 5000);
    EXPECT_DOUBLE_EQ(*u->percent, 2.5);
    EXPECT_FALSE(context_usage(ctx, 0));
}

namespace {

class fixed_counter final : public token_counter
{
public:
    std::size_t count(const message&) const override { return 7; }
};

}  // namespace

TEST(token_accounting, a_host_tokenizer_plugs_in)
{
    session_text s;
    s.user("u1", "a").user("u2", "b");
    diagnostics diag;
    const auto ctx = build_session_context(s.load(), diag).value();
    EXPECT_EQ(estimate_context_tokens(ctx.messages, fixed_counter{}).tokens, 14);
}
