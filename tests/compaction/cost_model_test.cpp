// The cost model's formulas and check vectors: prompt cache, billing, timing, stall statistics, prices.
#include <agentctx/compaction/cost_model.hpp>

#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

#include <vector>

using namespace agentctx::compaction;

namespace {

// Requests that append one message each: m1, then m1 m2, then m1 m2 m3.
std::vector<request_part> first(std::size_t n, std::int64_t m1 = 2000)
{
    std::vector<request_part> all{{1, m1}, {2, 1000}, {3, 1000}};
    all.resize(n);
    return all;
}

price_table anthropic()
{
    return *builtin_price_table("anthropic");
}

}  // namespace

TEST(cost_model, check_vector_a_request_after_the_ttl_reads_nothing)
{
    prompt_cache cache(anthropic());
    const auto r1 = cache.request(0, first(1), true);
    const auto r2 = cache.request(60, first(2), true);
    const auto r3 = cache.request(400, first(3), true);
    EXPECT_EQ(r1.read, 0);
    EXPECT_EQ(r1.written, 2000);
    EXPECT_EQ(r2.read, 2000);
    EXPECT_EQ(r2.written, 1000);
    EXPECT_EQ(r3.read, 0);
    EXPECT_EQ(r3.written, 4000);
    EXPECT_DOUBLE_EQ(r1.billed(anthropic()), 2500);
    EXPECT_DOUBLE_EQ(r2.billed(anthropic()), 1450);
    EXPECT_DOUBLE_EQ(r3.billed(anthropic()), 5000);
    EXPECT_DOUBLE_EQ(r1.billed(anthropic()) + r2.billed(anthropic()) + r3.billed(anthropic()), 8950);
}

TEST(cost_model, check_vector_a_request_inside_the_ttl_reads_the_previous_request)
{
    prompt_cache cache(anthropic());
    double total = 0;
    total += cache.request(0, first(1), true).billed(anthropic());
    total += cache.request(60, first(2), true).billed(anthropic());
    const auto r3 = cache.request(300, first(3), true);
    EXPECT_EQ(r3.read, 3000);
    EXPECT_EQ(r3.written, 1000);
    EXPECT_DOUBLE_EQ(r3.billed(anthropic()), 1550);
    EXPECT_DOUBLE_EQ(total + r3.billed(anthropic()), 5500);
}

TEST(cost_model, check_vector_a_prefix_under_the_minimum_is_not_read)
{
    prompt_cache cache(anthropic());
    cache.request(0, first(1, 800), true);
    const auto r2 = cache.request(60, first(2, 800), true);
    EXPECT_EQ(r2.read, 0);
    EXPECT_EQ(r2.written, 1800);
}

TEST(cost_model, a_read_refreshes_the_prefix_that_served_it)
{
    prompt_cache cache(anthropic());
    cache.request(0, first(1), true);    // m1, expires at 300
    cache.request(250, first(1), true);  // read, m1 refreshed to 550
    const auto r = cache.request(500, first(2), true);
    EXPECT_EQ(r.read, 2000);
}

TEST(cost_model, a_changed_message_ends_the_shared_prefix_at_its_start)
{
    prompt_cache cache(anthropic());
    cache.request(0, first(3), true);
    const std::vector<request_part> edited{{1, 2000}, {9, 1000}, {3, 1000}};
    const auto r = cache.request(10, edited, true);
    EXPECT_EQ(r.read, 2000);
    EXPECT_EQ(r.written, 2000);
}

TEST(cost_model, without_caching_a_request_reads_what_is_there_and_writes_nothing)
{
    prompt_cache cache(anthropic());
    cache.request(0, first(2), true);
    const auto off = cache.request(10, first(3), false);
    EXPECT_EQ(off.read, 3000);
    EXPECT_EQ(off.written, 0);
    EXPECT_EQ(off.uncached, 1000);
    // Nothing was written: the next request still finds only the first prefix.
    EXPECT_EQ(cache.request(20, first(3), true).read, 3000);
    prompt_cache cold(anthropic());
    const auto miss = cold.request(0, first(1), false);
    EXPECT_EQ(miss.uncached, 2000);
    EXPECT_EQ(cold.request(1, first(1), true).read, 0);
}

TEST(cost_model, cost_and_summary_duration)
{
    const auto p = anthropic();
    policy_cost c;
    c.bill(p, cache_billing{0, 2000, 0}, 100, false);
    c.bill(p, cache_billing{1000, 0, 3000}, 500, true);
    EXPECT_EQ(c.requests, 1);
    EXPECT_EQ(c.summary_requests, 1);
    EXPECT_DOUBLE_EQ(c.billed_input, 2500 + 1000 + 300);
    EXPECT_DOUBLE_EQ(c.cost, (3800 * 3.00 + 600 * 15.00) / 1e6);
    EXPECT_EQ(c.summarizer_input_tokens, 4000);
    EXPECT_EQ(c.peak_context, 2000);
    const timing_model t;
    // 0.5 + (1000 + 2000) / 5000 + 10000 / 50000 + 600 / 60
    EXPECT_DOUBLE_EQ(t.duration(cache_billing{1000, 2000, 10000}, 600), 0.5 + 0.6 + 0.2 + 10.0);
}

TEST(cost_model, stall_percentiles_are_nearest_rank)
{
    std::vector<double> s;
    for (int i = 1; i <= 20; ++i)
        s.push_back(i);
    const auto st = summarize_stalls(s);
    EXPECT_DOUBLE_EQ(st.total, 210);
    EXPECT_DOUBLE_EQ(st.p50, 10);
    EXPECT_DOUBLE_EQ(st.p95, 19);
    EXPECT_DOUBLE_EQ(st.max, 20);
    EXPECT_DOUBLE_EQ(summarize_stalls({}).p95, 0);
}

TEST(cost_model, price_tables_builtin_and_from_json)
{
    const auto openai = *builtin_price_table("openai");
    EXPECT_DOUBLE_EQ(openai.input_price, 1.25);
    EXPECT_DOUBLE_EQ(openai.write_multiplier, 1.0);
    const auto hour = *builtin_price_table("anthropic-1h");
    EXPECT_DOUBLE_EQ(hour.write_multiplier, 2.0);
    EXPECT_DOUBLE_EQ(hour.ttl_seconds, 3600);
    EXPECT_FALSE(builtin_price_table("gemini"));
    diagnostics diag;
    auto p = parse_price_table(
        boost::json::parse(R"({"name":"local","inputPrice":0.5,"outputPrice":1,
        "writeMultiplier":1,"readMultiplier":0.5,"ttl":60,"minPrefix":256})"),
        diag
    );
    ASSERT_TRUE(p) << diag.message;
    EXPECT_EQ(p->name, "local");
    EXPECT_EQ(p->min_prefix, 256);
    auto bad = parse_price_table(
        boost::json::parse(R"({"inputPrice":-1,"outputPrice":1,
        "writeMultiplier":1,"readMultiplier":0.5,"ttl":60,"minPrefix":256})"),
        diag
    );
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error(), errc::invalid_settings);
    EXPECT_NE(diag.message.find("inputPrice"), std::string::npos) << diag.message;
    auto missing = parse_price_table(boost::json::parse(R"({"inputPrice":1})"), diag);
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error(), errc::invalid_settings);
    EXPECT_NE(diag.message.find("outputPrice"), std::string::npos) << diag.message;
}
