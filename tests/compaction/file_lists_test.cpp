// Bounded file lists (agentctx mode): newest first, modified before read, a summary that stays small.
#include <agentctx/compaction/prepare.hpp>
#include <agentctx/compaction/summary.hpp>

#include "session_text.hpp"

#include <gtest/gtest.h>

using namespace agentctx::compaction;
using agentctx::test::keep;
using agentctx::test::session_text;
namespace json = boost::json;

namespace {

std::string path_of(int n)
{
    return "src/module_" + std::to_string(n) + ".ts";
}

// Touches `count` new paths from `first` on: even ones read, odd ones edited, each with its result.
void touch_paths(session_text& s, int round, int first, int count)
{
    const std::string r = std::to_string(round);
    s.user("u" + r, "go on");
    for (int i = first; i < first + count; ++i)
    {
        const std::string n = std::to_string(i);
        s.tool_call("c" + n, "call" + n, i % 2 ? "edit" : "read", {{"path", path_of(i)}});
        s.tool_result("t" + n, "call" + n, i % 2 ? "edit" : "read", "ok");
    }
    s.user("q" + r, "next").assistant("a" + r, "done");
}

// Compacts the session as a host would and appends the entry; returns the summary's size.
std::size_t compact_once(session_text& s, int round, compat_mode mode)
{
    diagnostics diag;
    const auto path = s.path();
    plan_options opts;
    opts.mode = mode;
    const auto prep = prepare_compaction(path, keep(20), opts, diag);
    EXPECT_TRUE(prep) << diag.message;
    const auto r =
        assemble_compaction(path, *prep, std::string("SUMMARY"), std::string("PREFIX"), 0, keep(20), diag)
            .value();
    s.entry(
        "compaction",
        "k" + std::to_string(round),
        {{"summary", r.summary},
         {"firstKeptEntryId", r.first_kept_entry_id},
         {"tokensBefore", r.tokens_before},
         {"details", r.details},
         {"fromHook", false}}
    );
    return r.summary.size();
}

std::size_t largest_summary_over(int compactions, compat_mode mode)
{
    session_text s;
    std::size_t largest = 0;
    for (int round = 0; round < compactions; ++round)
    {
        touch_paths(s, round, round * 125, 125);  // 125 new paths between two compactions
        largest = std::max(largest, compact_once(s, round, mode));
    }
    return largest;
}

}  // namespace

TEST(file_lists, bounded_lists_are_newest_first_and_modified_files_come_first)
{
    diagnostics diag;
    const auto m = decode_message(
                       json::parse(R"({"role":"assistant","content":[
        {"type":"toolCall","id":"1","name":"read","arguments":{"path":"old.ts"}},
        {"type":"toolCall","id":"2","name":"edit","arguments":{"path":"e.ts"}},
        {"type":"toolCall","id":"3","name":"read","arguments":{"path":"new.ts"}},
        {"type":"toolCall","id":"4","name":"write","arguments":{"path":"w.ts"}}]})")
                           .as_object(),
                       "",
                       diag
    )
                       .value();
    file_operations ops;
    extract_file_ops(m, ops);
    const auto l = compute_file_lists(ops, file_list_bounds{});
    EXPECT_EQ(l.read_files, (std::vector<std::string>{"new.ts", "old.ts"}));
    EXPECT_EQ(l.modified_files, (std::vector<std::string>{"w.ts", "e.ts"}));
    EXPECT_EQ(
        format_file_operations(l),
        "\n\n<modified-files>\nw.ts\ne.ts\n</modified-files>\n\n<read-files>\nnew.ts\nold.ts\n</read-files>"
    );
    // Pi 1.6: sorted, read first.
    EXPECT_EQ(
        format_file_operations(compute_file_lists(ops)),
        "\n\n<read-files>\nnew.ts\nold.ts\n</read-files>\n\n<modified-files>\ne.ts\nw.ts\n</modified-files>"
    );
}

TEST(file_lists, a_list_stops_at_fifty_paths_and_says_how_many_it_left_out)
{
    file_operations ops;
    for (int i = 0; i < 70; ++i)
    {
        ops.read.insert(path_of(i));
        ops.last_touched[path_of(i)] = ++ops.clock;
    }
    const auto l = compute_file_lists(ops, file_list_bounds{});
    ASSERT_EQ(l.read_files.size(), 70u);  // details keep up to 1,000
    const std::string text = format_file_operations(l);
    EXPECT_EQ(text.find("\n" + path_of(69) + "\n"), std::string("\n\n<read-files>").size());
    EXPECT_NE(text.find(path_of(20)), std::string::npos);
    EXPECT_EQ(text.find(path_of(19) + "\n"), std::string::npos);  // the 51st newest
    EXPECT_NE(text.find("\n\u2026and 20 more\n</read-files>"), std::string::npos);
}

TEST(file_lists, a_list_stops_at_four_thousand_characters)
{
    file_operations ops;
    const std::string dir(390, 'd');
    for (int i = 0; i < 20; ++i)
    {
        ops.edited.insert(dir + std::to_string(100 + i));  // 394 characters each
        ops.last_touched[dir + std::to_string(100 + i)] = ++ops.clock;
    }
    const std::string text = format_file_operations(compute_file_lists(ops, file_list_bounds{}));
    // 10 paths of 394 characters (+ newline) fit in 4,000; the 11th would not.
    EXPECT_NE(text.find(dir + "110"), std::string::npos);
    EXPECT_EQ(text.find(dir + "109"), std::string::npos);
    EXPECT_NE(text.find("\u2026and 10 more"), std::string::npos);
}

TEST(file_lists, details_keep_the_newest_thousand_and_seed_back_in_the_same_order)
{
    file_operations ops;
    for (int i = 0; i < 1200; ++i)
    {
        ops.written.insert(path_of(i));
        ops.last_touched[path_of(i)] = ++ops.clock;
    }
    const auto l = compute_file_lists(ops, file_list_bounds{});
    ASSERT_EQ(l.modified_files.size(), 1000u);
    EXPECT_EQ(l.modified_files.front(), path_of(1199));
    EXPECT_EQ(l.modified_files.back(), path_of(200));
    EXPECT_NE(format_file_operations(l).find("\u2026and 1150 more"), std::string::npos);
    file_operations seeded;
    seed_file_ops(file_lists_details(l), seeded);
    EXPECT_EQ(compute_file_lists(seeded, file_list_bounds{}).modified_files, l.modified_files);
}

TEST(file_lists, forty_compactions_over_five_thousand_paths_keep_the_summary_small)
{
    // 5,000 paths: two lists of at most 4,000 characters each, their tags and "…and N more".
    EXPECT_LT(largest_summary_over(40, compat_mode::agentctx), 8400u);
    // Pi 1.6 names every path it ever saw: after ten compactions ~1,250 paths of ~20 characters.
    EXPECT_GT(largest_summary_over(10, compat_mode::pi), 20000u);
}
