// fit_request: 31 tokens keep groups 2 and 3; a single group over budget is kept whole.
#include <agentctx/compaction/request_view.hpp>

#include "session_text.hpp"

#include <gtest/gtest.h>

#include <map>

using namespace agentctx::compaction;
using agentctx::test::session_text;
namespace json = boost::json;

namespace {

// The seed's test estimator: a fixed cost per message, looked up by its text.
class table_counter final : public token_counter
{
public:
    std::size_t count(const message& m) const override
    {
        std::string key = content_text(m.content);
        if (m.role == role::assistant)
            for (const auto& b : m.content.blocks)
                if (const auto* c = std::get_if<tool_call_block>(&b))
                    key += c->id;
        if (m.role == role::compaction_summary)
            key = m.summary;
        const auto it = costs.find(key);
        return it == costs.end() ? 0 : it->second;
    }
    std::map<std::string, std::size_t> costs;
};

session_text seed_session()
{
    session_text s;
    s.user("u1", "u1").assistant("a1", "a1");
    s.user("u2", "u2").assistant("a2", "a2");
    s.user("u3", "u3");
    s.message(
        "calls",
        {{"role", "assistant"},
         {"content",
          json::array{
              json::object{
                  {"type", "toolCall"}, {"id", "read-1"}, {"name", "read"}, {"arguments", json::object{}}},
              json::object{
                  {"type", "toolCall"}, {"id", "test-1"}, {"name", "test"}, {"arguments", json::object{}}}}},
         {"stopReason", "toolUse"}}
    );
    s.tool_result("r-test", "test-1", "test", "r-test");  // results arrive in reverse order
    s.tool_result("r-read", "read-1", "read", "r-read");
    s.assistant("a3", "a3");
    return s;
}

table_counter seed_counter()
{
    table_counter c;
    c.costs = {
        {"u1", 3},
        {"a1", 4},
        {"u2", 3},
        {"a2", 4},
        {"u3", 3},
        {"read-1test-1", 3},
        {"r-test", 3},
        {"r-read", 3},
        {"a3", 3}};
    return c;
}

}  // namespace

TEST(fit_request, seed003_31_tokens_keep_groups_2_and_3)
{
    diagnostics diag;
    const auto ctx = build_session_context(seed_session().load(), diag).value();
    const auto r = fit_request(
        ctx, {.max_tokens = 31, .reserved_output = 4, .safety_margin = 2, .system_tokens = 3}, seed_counter()
    );
    EXPECT_EQ(r.reason, fit_reason::trimmed);
    EXPECT_EQ(
        r.kept_entry_ids, (std::vector<std::string>{"u2", "a2", "u3", "calls", "r-test", "r-read", "a3"})
    );
    EXPECT_EQ(r.tokens.max_tokens, 31);
    EXPECT_EQ(r.tokens.system, 3);
    EXPECT_EQ(r.tokens.messages, 22);
    EXPECT_EQ(r.tokens.reserved_output, 4);
    EXPECT_EQ(r.tokens.safety_margin, 2);
    EXPECT_EQ(r.tokens.available_for_messages, 22);
    EXPECT_EQ(r.tokens.total, 31);
}

TEST(fit_request, a_single_group_over_budget_is_kept_whole)
{
    diagnostics diag;
    const auto ctx = build_session_context(seed_session().load(), diag).value();
    // 10 tokens for messages; group 3 alone costs 15.
    const auto r = fit_request(
        ctx, {.max_tokens = 19, .reserved_output = 4, .safety_margin = 2, .system_tokens = 3}, seed_counter()
    );
    EXPECT_EQ(r.reason, fit_reason::single_group_overflow);
    EXPECT_EQ(r.tokens.available_for_messages, 10);
    EXPECT_EQ(r.tokens.messages, 15);
    EXPECT_EQ(r.kept_entry_ids, (std::vector<std::string>{"u3", "calls", "r-test", "r-read", "a3"}));
}

TEST(fit_request, everything_fits_and_fixed_costs_never_go_negative)
{
    diagnostics diag;
    const auto ctx = build_session_context(seed_session().load(), diag).value();
    auto r = fit_request(
        ctx,
        {.max_tokens = 1000, .reserved_output = 4, .safety_margin = 2, .system_tokens = 3},
        seed_counter()
    );
    EXPECT_EQ(r.reason, fit_reason::fits);
    EXPECT_EQ(r.kept_entry_ids.size(), 9u);
    r = fit_request(
        ctx, {.max_tokens = 5, .reserved_output = 4, .safety_margin = 2, .system_tokens = 3}, seed_counter()
    );
    EXPECT_EQ(r.tokens.available_for_messages, 0);
    EXPECT_EQ(r.reason, fit_reason::single_group_overflow);
}

TEST(fit_request, the_compaction_summary_is_a_fixed_cost_and_tool_rounds_never_split)
{
    session_text s;
    s.user("u1", "u1");
    s.message(
        "calls",
        {{"role", "assistant"},
         {"content",
          json::array{json::object{
              {"type", "toolCall"}, {"id", "x"}, {"name", "read"}, {"arguments", json::object{}}}}},
         {"stopReason", "toolUse"}}
    );
    s.user("u2", "u2");  // a new user message before the result arrives
    s.tool_result("rx", "x", "read", "rx");
    s.compaction("c1", "u1", "SUM");
    diagnostics diag;
    const auto ctx = build_session_context(s.load(), diag).value();
    table_counter c;
    c.costs = {{"SUM", 5}, {"u1", 1}, {"x", 1}, {"u2", 1}, {"rx", 1}};
    const auto r = fit_request(ctx, {.max_tokens = 7}, c);
    EXPECT_EQ(r.tokens.fixed, 5);
    // u2 alone would fit in 2, but its group is merged with u1's (rx answers the call in it).
    EXPECT_EQ(r.reason, fit_reason::single_group_overflow);
    EXPECT_EQ(r.kept_entry_ids, (std::vector<std::string>{"u1", "calls", "u2", "rx"}));
    EXPECT_EQ(r.messages.front().entry_id, "c1");
}

TEST(fit_request, a_newest_group_over_budget_reports_the_shortfall_in_numbers)
{
    diagnostics diag;
    const auto ctx = build_session_context(seed_session().load(), diag).value();
    const auto r = fit_request(
        ctx, {.max_tokens = 19, .reserved_output = 4, .safety_margin = 2, .system_tokens = 3}, seed_counter()
    );
    ASSERT_TRUE(r.shortfall.has_value());
    EXPECT_EQ(r.shortfall->input_tokens, 29);     // every message: 7 + 7 + 15
    EXPECT_EQ(r.shortfall->required_tokens, 15);  // group 3 must stay
    EXPECT_EQ(r.shortfall->boundary_entry_id, "u1");
    EXPECT_EQ(r.shortfall->boundary_position, 0u);
    EXPECT_EQ(r.shortfall->required_entry_id, "u3");
    EXPECT_EQ(r.shortfall->required_position, 4u);
    const auto fits = fit_request(
        ctx, {.max_tokens = 31, .reserved_output = 4, .safety_margin = 2, .system_tokens = 3}, seed_counter()
    );
    EXPECT_FALSE(fits.shortfall.has_value());  // trimmed within the budget: nothing required is lost
}

TEST(fit_request, a_required_message_is_kept_with_every_newer_group_and_reports_when_over_budget)
{
    diagnostics diag;
    const auto ctx = build_session_context(seed_session().load(), diag).value();
    const auto u1_required = [](const context_message& m) { return m.entry_id == "u1"; };
    // 31 tokens would keep groups 2 and 3 (22); u1 is required, so group 1 stays too (29 > 22).
    const auto r = fit_request(
        ctx,
        {.max_tokens = 31,
         .reserved_output = 4,
         .safety_margin = 2,
         .system_tokens = 3,
         .required = u1_required},
        seed_counter()
    );
    EXPECT_EQ(r.reason, fit_reason::required_overflow);
    EXPECT_EQ(r.kept_entry_ids.size(), 9u);  // never dropped to fit
    EXPECT_EQ(r.tokens.messages, 29);
    ASSERT_TRUE(r.shortfall.has_value());
    EXPECT_EQ(r.shortfall->required_tokens, 29);
    EXPECT_EQ(r.shortfall->required_entry_id, "u1");
    EXPECT_EQ(r.shortfall->required_position, 0u);
    // With room for it, a required group stays and older ones are trimmed as usual.
    const auto u2_required = [](const context_message& m) { return m.entry_id == "u2"; };
    const auto ok = fit_request(
        ctx,
        {.max_tokens = 31,
         .reserved_output = 4,
         .safety_margin = 2,
         .system_tokens = 3,
         .required = u2_required},
        seed_counter()
    );
    EXPECT_EQ(ok.reason, fit_reason::trimmed);
    EXPECT_FALSE(ok.shortfall.has_value());
    EXPECT_EQ(ok.kept_entry_ids.front(), "u2");
}
