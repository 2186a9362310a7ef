// memory_store holds the same JSONL text a file would: identical reopen, same errors.
#include <agentctx/compaction/projection.hpp>
#include <agentctx/runtime/error.hpp>
#include <agentctx/runtime/memory_store.hpp>

#include <gtest/gtest.h>

using namespace agentctx;
using namespace agentctx::runtime;

TEST(memory_store, writes_pi_lines_and_reopens_identically)
{
    memory_store store;
    compaction::diagnostics diag;
    ASSERT_TRUE(store.write_header(compaction::make_header("s", "2026-01-15T09:00:00.000Z", "/p"), diag));
    EXPECT_EQ(
        store.write_header(compaction::make_header("s", "t", "/p"), diag).error(),
        make_error_code(errc::already_exists)
    );
    auto u = compaction::make_message_entry(
                 "u1",
                 std::nullopt,
                 "2026-01-15T09:00:01.000Z",
                 {{"role", "user"}, {"content", "hi"}, {"timestamp", 5}},
                 diag
    )
                 .value();
    ASSERT_TRUE(store.append(u, diag));
    auto c = compaction::make_compaction_entry(
        "c1",
        "u1",
        "2026-01-15T09:00:02.000Z",
        "S",
        "u1",
        42,
        boost::json::object{{"readFiles", boost::json::array{}}, {"modifiedFiles", boost::json::array{}}},
        false
    );
    ASSERT_TRUE(store.append(c, diag));
    EXPECT_EQ(
        store.text(),
        R"({"type":"session","version":3,"id":"s","timestamp":"2026-01-15T09:00:00.000Z","cwd":"/p"})"
        "\n"
        R"({"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-15T09:00:01.000Z","message":{"role":"user","content":"hi","timestamp":5}})"
        "\n"
        R"({"type":"compaction","id":"c1","parentId":"u1","timestamp":"2026-01-15T09:00:02.000Z","summary":"S","firstKeptEntryId":"u1","tokensBefore":42,"details":{"readFiles":[],"modifiedFiles":[]},"fromHook":false})"
        "\n"
    );
    compaction::load_report report;
    auto log = store.load({}, report, diag);
    ASSERT_TRUE(log);
    auto ctx = compaction::build_session_context(*log, diag);
    ASSERT_TRUE(ctx);
    ASSERT_EQ(ctx->messages.size(), 2u);
    EXPECT_EQ(ctx->messages[0].entry_id, "c1");
    EXPECT_EQ(ctx->messages[1].entry_id, "u1");
}

TEST(memory_store, append_before_header_is_refused)
{
    memory_store store;
    compaction::diagnostics diag;
    auto u =
        compaction::make_message_entry("u1", std::nullopt, "t", {{"role", "user"}, {"content", "hi"}}, diag)
            .value();
    EXPECT_EQ(store.append(u, diag).error(), make_error_code(errc::no_header));
    EXPECT_TRUE(store.text().empty());
}
