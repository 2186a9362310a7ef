// `agentctx simulate` on the bundled sessions: the exact report, the table, and bad arguments.
#include "file_text.hpp"
#include "run_process.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace {

const std::string cli = AGENTCTX_CLI;
const std::string sessions = std::string(AGENTCTX_EXAMPLES_DIR) + "/sessions/";
const std::string fixtures = AGENTCTX_FIXTURES_DIR;

std::string bundled_args()
{
    return sessions + "coding-task.jsonl " + sessions + "csv-export-fix.jsonl " + sessions +
           "pi16-task.jsonl --context-window 24000 --policy none --policy pi --policy agentctx --settings " +
           fixtures + "/keep-3000.json";
}

}  // namespace

// The whole report, number for number: any change to the planner, the runtime's triggers, the
// offline summarizer or the cost model shows here. Regenerate the fixture only for a change that
// is meant to move these figures: the same command with --json, file names cut to base names.
TEST(simulate_cli, the_report_on_the_bundled_sessions_is_exact)
{
    const auto r = agentctx::test::run_process(cli + " simulate " + bundled_args() + " --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto got = boost::json::parse(r.out).as_object();
    for (auto& s : got.at("sessions").as_array())
    {
        auto& o = s.as_object();
        o["file"] = std::filesystem::path(std::string(o.at("file").as_string())).filename().string();
    }
    const auto want = boost::json::parse(agentctx::test::read_text(fixtures + "/simulate_bundled.json"));
    EXPECT_EQ(boost::json::value(got), want) << boost::json::serialize(got);
    const auto& keep = got.at("policies").at("keep-3000");
    EXPECT_EQ(keep.at("compactions").as_int64(), 7);  // background compaction, the default
    EXPECT_EQ(got.at("policies").at("none").at("summaryRequests").as_int64(), 0);
    // agentctx's defaults clear old tool results instead of summarizing (Pi pays four summary calls).
    EXPECT_EQ(got.at("policies").at("agentctx").at("clearing").at("batches").as_int64(), 3);
    EXPECT_EQ(got.at("policies").at("agentctx").at("summaryRequests").as_int64(), 0);
    EXPECT_EQ(got.at("policies").at("pi").at("clearing").at("batches").as_int64(), 0);
}

// agentctx's summary requests are cache-friendly by default (the conversation's request read from
// the prompt cache, then the instructions); `summaryRequest: standalone` bills them as each its own
// uncached request. Both policies run the runtime's defaults otherwise, background compaction
// included: the same seven compactions and eight summary requests.
TEST(simulate_cli, standalone_summary_requests_bill_as_before_and_cache_friendly_ones_less)
{
    const auto r = agentctx::test::run_process(
        cli + " simulate " + bundled_args() + " --settings " + fixtures + "/keep-3000-standalone.json --json"
    );
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto got = boost::json::parse(r.out);
    const auto& standalone = got.at("policies").at("keep-3000-standalone");
    const auto& in = standalone.at("input");
    EXPECT_EQ(in.at("uncached").as_int64(), 23976);
    EXPECT_EQ(in.at("written").as_int64(), 75841);
    EXPECT_EQ(in.at("read").as_int64(), 409223);
    EXPECT_NEAR(in.at("billed").to_number<double>(), 159699.55, 1e-6);
    EXPECT_NEAR(standalone.at("cost").to_number<double>(), 0.82508865, 1e-12);
    EXPECT_EQ(standalone.at("summarizerInputTokens").as_int64(), 23976);
    EXPECT_NEAR(standalone.at("stall").at("totalSeconds").to_number<double>(), 34.6467333333333, 1e-9);
    // The same compactions, the same summaries; the cache-friendly requests read the conversation.
    const auto& cached = got.at("policies").at("keep-3000");
    EXPECT_EQ(cached.at("compactions").as_int64(), standalone.at("compactions").as_int64());
    EXPECT_EQ(cached.at("summaryRequests").as_int64(), standalone.at("summaryRequests").as_int64());
    EXPECT_EQ(
        cached.at("output").at("summaries").as_int64(), standalone.at("output").at("summaries").as_int64()
    );
    EXPECT_NEAR(cached.at("input").at("billed").to_number<double>(), 147722.4, 1e-6);
}

TEST(simulate_cli, a_working_budget_sweep_prints_each_value_beside_its_summary_calls)
{
    const auto r = agentctx::test::run_process(
        cli + " simulate " + sessions + "coding-task.jsonl --context-window 24000 --policy pi" +
        " --sweep workingBudget=5000..7000/1000 --json"
    );
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto got = boost::json::parse(r.out).as_object();
    const auto& p = got.at("policies").as_object();
    EXPECT_EQ(p.size(), 4u);  // pi and one policy per value
    for (const char* name : {"workingBudget=5000", "workingBudget=6000", "workingBudget=7000"})
        EXPECT_TRUE(p.contains(name)) << name;
    // A lower budget compacts at least as often.
    EXPECT_GE(
        p.at("workingBudget=5000").at("compactions").as_int64(),
        p.at("workingBudget=7000").at("compactions").as_int64()
    );
    const auto table = agentctx::test::run_process(
        cli + " simulate " + sessions + "coding-task.jsonl --context-window 24000" +
        " --sweep workingBudget=5000..7000/1000"
    );
    ASSERT_EQ(table.exit_code, 0) << table.err;
    EXPECT_NE(table.out.find("working budget sweep (all sessions)"), std::string::npos) << table.out;
    EXPECT_NE(table.out.find("  none "), std::string::npos);  // no policy named: none, pi and agentctx too
    const auto bad = agentctx::test::run_process(
        cli + " simulate " + sessions + "coding-task.jsonl --sweep workingBudget=9..1"
    );
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_NE(bad.err.find("--sweep takes workingBudget=LO..HI"), std::string::npos) << bad.err;
}

TEST(simulate_cli, the_table_shows_each_policy_beside_none_and_pi)
{
    const auto r = agentctx::test::run_process(cli + " simulate " + bundled_args());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("total (3 sessions)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("vs none"), std::string::npos);
    EXPECT_NE(r.out.find("keep-3000"), std::string::npos);
    // The upper bound against itself.
    EXPECT_NE(r.out.find("  none              142         141031    1.00x"), std::string::npos) << r.out;
}

TEST(simulate_cli, bad_arguments_are_usage_errors)
{
    const auto policy =
        agentctx::test::run_process(cli + " simulate " + sessions + "coding-task.jsonl --policy fast");
    EXPECT_EQ(policy.exit_code, 2);
    EXPECT_NE(policy.err.find("--policy takes none, pi or agentctx"), std::string::npos) << policy.err;
    const auto prices = agentctx::test::run_process(
        cli + " simulate " + sessions + "coding-task.jsonl --prices /nonexistent.json"
    );
    EXPECT_EQ(prices.exit_code, 2);
    EXPECT_NE(prices.err.find("--prices"), std::string::npos) << prices.err;
    const auto none = agentctx::test::run_process(cli + " simulate");
    EXPECT_EQ(none.exit_code, 2);
    const auto missing = agentctx::test::run_process(cli + " simulate /nonexistent/session.jsonl");
    EXPECT_EQ(missing.exit_code, 4);
}

TEST(simulate_cli, a_price_file_bills_with_its_prices)
{
    const auto dir = std::filesystem::temp_directory_path() / "agentctx-simulate-prices";
    std::filesystem::create_directories(dir);
    const auto file = dir / "flat.json";
    {
        std::ofstream f(file);
        f << R"({"name":"flat","inputPrice":1,"outputPrice":0,"writeMultiplier":1,"readMultiplier":1,"ttl":300,"minPrefix":1024})";
    }
    const auto r = agentctx::test::run_process(
        cli + " simulate " + sessions + "pi16-task.jsonl --policy none --prices " + file.string() + " --json"
    );
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto v = boost::json::parse(r.out);
    const auto& none = v.at("policies").at("none");
    // Every token costs one input token: billed input is the sum of all requests' sizes.
    const auto& in = none.at("input");
    EXPECT_DOUBLE_EQ(
        in.at("billed").to_number<double>(),
        static_cast<double>(
            in.at("uncached").as_int64() + in.at("written").as_int64() + in.at("read").as_int64()
        )
    );
    EXPECT_DOUBLE_EQ(none.at("cost").to_number<double>(), in.at("billed").to_number<double>() / 1e6);
    EXPECT_EQ(v.at("model").at("prices").as_string(), "flat");
}
