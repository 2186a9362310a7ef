// The spill file: kept text reads back exactly, reads stay inside their extent, blocks are given
// back when the readers go, concurrent keeps do not overlap, and a log reads its lines from it.
#include "spill_file.hpp"

#include <agentctx/compaction/session_log.hpp>
#include <agentctx/runtime/error.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace agentctx;
using runtime::spill_file;
namespace fs = std::filesystem;

std::shared_ptr<spill_file> make_file()
{
    compaction::diagnostics diag;
    auto f = spill_file::open(fs::temp_directory_path().string(), diag);
    EXPECT_TRUE(f) << diag.message;
    return f ? *f : nullptr;
}

TEST(spill_file, kept_text_reads_back_byte_for_byte_at_any_offset)
{
    auto file = make_file();
    ASSERT_TRUE(file);
    compaction::diagnostics diag;
    auto a = file->keep("first text\n", diag);
    auto b = file->keep("second\nlines\n", diag);
    ASSERT_TRUE(a && b) << diag.message;
    EXPECT_EQ((*a)->read(0, 10).value(), "first text");
    EXPECT_EQ((*b)->read(7, 5).value(), "lines");  // relative to its own first byte
    EXPECT_EQ((*b)->read(0, 13).value(), "second\nlines\n");
    EXPECT_EQ(file->stats().live_extents, 2u);
    EXPECT_EQ(file->stats().live_bytes, 24u);
}

TEST(spill_file, a_read_past_its_extent_is_refused_not_served_from_a_neighbour)
{
    auto file = make_file();
    ASSERT_TRUE(file);
    compaction::diagnostics diag;
    auto a = file->keep("abc", diag);
    auto b = file->keep("def", diag);
    ASSERT_TRUE(a && b);
    EXPECT_EQ((*a)->read(2, 2).error(), make_error_code(compaction::errc::entry_not_found));
    EXPECT_EQ((*a)->read(4, 0).error(), make_error_code(compaction::errc::entry_not_found));
    EXPECT_EQ((*a)->read(3, 0).value(), "");
}

TEST(spill_file, blocks_go_back_when_the_readers_go)
{
    auto file = make_file();
    ASSERT_TRUE(file);
    compaction::diagnostics diag;
    const std::string mib(1u << 20, 'x');
    auto a = file->keep(mib, diag);
    auto b = file->keep(mib, diag);
    ASSERT_TRUE(a && b);
    EXPECT_GE(file->allocated_bytes(), 2u * mib.size());
    a->reset();
    EXPECT_EQ(file->stats().live_extents, 1u);
    EXPECT_EQ(file->stats().live_bytes, mib.size());
    EXPECT_EQ((*b)->read(mib.size() - 1, 1).value(), "x");  // the other extent is untouched
    b->reset();
    EXPECT_EQ(file->stats().live_extents, 0u);
    EXPECT_EQ(file->allocated_bytes(), 0u);  // nothing alive: the file is cut back to empty
    EXPECT_EQ(file->stats().bytes_written, 2u * mib.size());
}

TEST(spill_file, readers_outlive_the_owner_s_handle_to_the_file)
{
    auto file = make_file();
    ASSERT_TRUE(file);
    compaction::diagnostics diag;
    auto kept = file->keep("still here", diag);
    ASSERT_TRUE(kept);
    file.reset();
    EXPECT_EQ((*kept)->read(6, 4).value(), "here");
}

TEST(spill_file, a_directory_that_cannot_hold_it_is_an_io_error_naming_the_directory)
{
    compaction::diagnostics diag;
    auto f = spill_file::open("/nonexistent/agentctx-spill", diag);
    ASSERT_FALSE(f);
    EXPECT_EQ(f.error(), make_error_code(runtime::errc::io_error));
    EXPECT_NE(diag.message.find("/nonexistent/agentctx-spill"), std::string::npos) << diag.message;
}

TEST(spill_file, concurrent_keeps_get_extents_of_their_own)
{
    auto file = make_file();
    ASSERT_TRUE(file);
    constexpr int threads = 4, each = 200;
    std::vector<std::vector<std::shared_ptr<const compaction::line_reader>>> kept(threads);
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t)
        workers.emplace_back([&, t] {
            compaction::diagnostics diag;
            for (int i = 0; i < each; ++i)
                kept[t].push_back(
                    file->keep("t" + std::to_string(t) + "-" + std::to_string(i) + ";", diag).value()
                );
        });
    for (auto& w : workers)
        w.join();
    for (int t = 0; t < threads; ++t)
        for (int i = 0; i < each; ++i)
        {
            const std::string want = "t" + std::to_string(t) + "-" + std::to_string(i) + ";";
            EXPECT_EQ(kept[t][i]->read(0, want.size()).value(), want);
        }
    EXPECT_EQ(file->stats().live_extents, static_cast<std::uint64_t>(threads * each));
}

TEST(spill_file, a_log_materializes_its_entries_from_the_spilled_text)
{
    auto file = make_file();
    ASSERT_TRUE(file);
    const std::string text =
        R"({"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"})"
        "\n"
        R"({"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z",)"
        R"("message":{"role":"user","content":"hello","timestamp":1}})"
        "\n";
    compaction::diagnostics diag;
    compaction::load_report report;
    compaction::session_log_builder builder;
    builder.feed(text);
    auto log = builder.finish(file->keep(text, diag).value(), report, diag);
    ASSERT_TRUE(log) << diag.message;
    auto e = log->get(0, diag);
    ASSERT_TRUE(e) << diag.message;
    EXPECT_EQ((*e)->id, "a1");
    ASSERT_TRUE((*e)->message);
    EXPECT_EQ(compaction::content_text((*e)->message->content), "hello");
    EXPECT_EQ(file->stats().live_extents, 1u);
    log = compaction::session_log{};
    EXPECT_EQ(file->stats().live_extents, 0u);
}

}  // namespace
