// Interoperability: a Pi-format session compacted by agentctx keeps Pi's invariants and format.
#include <agentctx/compaction/json_text.hpp>
#include <agentctx/compaction/projection.hpp>
#include <agentctx/providers/offline_summarizer.hpp>
#include <agentctx/runtime/jsonl_store.hpp>
#include <agentctx/runtime/session.hpp>

#include "session_generator.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

using namespace agentctx;
namespace fs = std::filesystem;

TEST(interop, a_compacted_pi_session_keeps_pis_invariants)
{
    const auto path =
        fs::temp_directory_path() / ("agentctx-interop-" + std::to_string(::getpid()) + ".jsonl");
    for (std::uint64_t seed : {3u, 8u, 21u, 34u, 55u})
    {
        // Seeds 34 and 55: Pi 1.6-style sessions (system messages, edits, recovery sequences).
        const bool pi16 = seed > 21;
        SCOPED_TRACE("seed " + std::to_string(seed));
        const std::string original = tools::generate_session(
            {.seed = seed,
             .entries = 400,
             .branch_rate = pi16 ? 0.0 : 0.03,
             .compaction_every = 9,
             .interleave_rate = 0.2,
             .pi16 = pi16}
        );
        std::ofstream(path, std::ios::binary) << original;
        boost::asio::io_context ioc;
        compaction::diagnostics diag;
        {
            auto store = runtime::jsonl_store::open(path, {}, diag).value();
            runtime::session_config c;
            c.settings.keep_recent_tokens = 4000;
            c.summarizer = std::make_shared<providers::offline_summarizer>(ioc.get_executor());
            auto s = runtime::session::open(ioc.get_executor(), std::move(store), c, diag).value();
            bool done = false;
            s->async_compact(std::nullopt, [&](boost::system::error_code ec, runtime::compaction_outcome o) {
                EXPECT_FALSE(ec) << ec.message() << " " << o.message;
                done = true;
            });
            ioc.run();
            ASSERT_TRUE(done);
        }
        std::ifstream in(path, std::ios::binary);
        std::stringstream ss;
        ss << in.rdbuf();
        const std::string text = ss.str();
        ASSERT_EQ(text.substr(0, original.size()), original);  // append-only: Pi's lines untouched
        const std::string line = text.substr(original.size(), text.size() - original.size() - 1);
        ASSERT_EQ(line.find('\n'), std::string::npos);  // exactly one new line

        // The entry in Pi's shape: field order, 8-hex id, ISO timestamp with ms and Z, details lists.
        const auto e = boost::json::parse(line).as_object();
        std::vector<std::string> keys;
        for (const auto& kv : e)
            keys.emplace_back(kv.key());
        std::vector<std::string> expected{
            "type",
            "id",
            "parentId",
            "timestamp",
            "summary",
            "firstKeptEntryId",
            "tokensBefore",
            "details",
            "fromHook"};
        if (pi16)
            expected.push_back("systemMessage");  // Pi 1.6's checkpoint of the replayed prompt
        EXPECT_EQ(keys, expected);
        EXPECT_TRUE(std::regex_match(std::string(e.at("id").as_string()), std::regex("[0-9a-f]{8}")));
        EXPECT_TRUE(std::regex_match(
            std::string(e.at("timestamp").as_string()),
            std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")
        ));
        EXPECT_TRUE(e.at("details").at("readFiles").is_array());
        EXPECT_TRUE(e.at("details").at("modifiedFiles").is_array());
        EXPECT_EQ(compaction::stringify(e), line);  // what JSON.stringify would write

        // It loads strictly; it is the leaf (so an ancestor of the next entry) and hangs off the old
        // leaf; firstKeptEntryId is on its path; the projection starts with its summary.
        compaction::load_report report;
        auto log = compaction::session_log::load(text, {}, report, diag);
        ASSERT_TRUE(log) << diag.message;
        EXPECT_TRUE(report.notes.empty() || report.notes.back().line != report.lines);
        auto before = compaction::session_log::load(original, {}, report, diag).value();
        EXPECT_EQ(log->leaf_id(), e.at("id").as_string());
        EXPECT_EQ(e.at("parentId").as_string(), *before.leaf_id());
        bool kept_on_path = false;
        for (auto i : log->active_path())
            kept_on_path = kept_on_path || log->meta(i).id == e.at("firstKeptEntryId").as_string();
        EXPECT_TRUE(kept_on_path);
        const auto ctx = compaction::build_session_context(*log, diag).value();
        EXPECT_EQ(ctx.messages.front().entry_id, e.at("id").as_string());
        if (pi16)
        {
            // Pi 1.6 projects the checkpoint first, then the summary; the replay is unchanged.
            ASSERT_GE(ctx.messages.size(), 2u);
            EXPECT_EQ(ctx.messages[0].msg->role, compaction::role::system);
            EXPECT_EQ(ctx.messages[1].msg->role, compaction::role::compaction_summary);
            const auto prior = compaction::build_session_context(before, diag).value();
            ASSERT_TRUE(prior.system && ctx.system);
            auto a = compaction::system_message_json(*prior.system),
                 b = compaction::system_message_json(*ctx.system);
            a.erase("timestamp");
            b.erase("timestamp");
            EXPECT_EQ(compaction::stringify(a), compaction::stringify(b));
        }
    }
    fs::remove(path);
}
