// Group commit on the PostgreSQL store: appends of several sessions in one transaction, each with its own
// compare-and-set.
#include "pg_store_fixture.hpp"

#include <agentctx/compaction/entry.hpp>
#include <agentctx/runtime/error.hpp>

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace {

using namespace agentctx;
using namespace agentctx::runtime;
using boost::system::error_code;

class pg_group_test : public test::pg_store_fixture
{
protected:
    struct stored_session
    {
        std::string id;
        std::string text;  // as imported
        std::unique_ptr<pg_store> store;
    };

    stored_session import_session(const std::string& stem)
    {
        stored_session s{test::unique_session_id(stem), {}, nullptr};
        s.text = ten_turns(s.id);
        EXPECT_FALSE(import(*node_a_, s.text).first);
        s.store = open_store(*node_a_, s.id);
        return s;
    }

    // Starts a batch write; the result lands in `out` once the io_context runs.
    void write(
        pg_store& st,
        std::vector<compaction::entry_ptr> entries,
        std::size_t known,
        std::optional<error_code>& out
    )
    {
        st.async_write_batch(
            ioc_.get_executor(), std::move(entries), known, [&out](error_code ec, std::string) { out = ec; }
        );
    }

    std::size_t stored_entries(const std::string& id)
    {
        auto [ec, text] = export_text(*node_b_, id);
        EXPECT_FALSE(ec) << text;
        compaction::diagnostics diag;
        compaction::load_report report;
        auto log = compaction::session_log::load(text, {}, report, diag);
        EXPECT_TRUE(log) << diag.message;
        return log ? log->size() : 0;
    }
};

TEST_F(pg_group_test, a_stale_append_inside_a_group_fails_alone_and_the_others_commit)
{
    auto x = import_session("group-x"), y = import_session("group-y"), z = import_session("group-z");
    const auto before = node_a_->stats();
    // Queued together before the io_context runs: the first flusher takes all three as one group.
    std::optional<error_code> rx, ry, rz;
    write(*x.store, test::next_entries(x.text, 1), 20, rx);
    write(*y.store, test::next_entries(y.text, 1), 19, ry);  // y holds 20 entries: its compare-and-set fails
    write(*z.store, test::next_entries(z.text, 1), 20, rz);
    ASSERT_TRUE(test::run_until(ioc_, [&] { return rx && ry && rz; }));
    const auto after = node_a_->stats();
    EXPECT_EQ(after.append_groups - before.append_groups, 1u) << "one transaction for the three appends";
    EXPECT_EQ(after.appends - before.appends, 3u);
    EXPECT_EQ(after.group_fallbacks, before.group_fallbacks);
    EXPECT_EQ(*rx, error_code{});
    EXPECT_EQ(*ry, make_error_code(errc::stale_leaf));
    EXPECT_EQ(*rz, error_code{});
    EXPECT_EQ(stored_entries(x.id), 21u);
    EXPECT_EQ(stored_entries(z.id), 21u);
    EXPECT_EQ(export_text(*node_b_, y.id).second, y.text) << "the stale append wrote nothing";
}

TEST_F(pg_group_test, a_batch_commits_all_its_entries_under_one_compare_and_set_or_none)
{
    auto x = import_session("batch");
    std::optional<error_code> first, again;
    write(*x.store, test::next_entries(x.text, 3), 20, first);
    ASSERT_TRUE(test::run_until(ioc_, [&] { return first.has_value(); }));
    EXPECT_EQ(*first, error_code{});
    ASSERT_EQ(stored_entries(x.id), 23u);
    const std::string committed = export_text(*node_b_, x.id).second;
    write(*x.store, test::next_entries(x.text, 4), 20, again);  // the count is 23 now
    ASSERT_TRUE(test::run_until(ioc_, [&] { return again.has_value(); }));
    EXPECT_EQ(*again, make_error_code(errc::stale_leaf));
    EXPECT_EQ(export_text(*node_b_, x.id).second, committed) << "none of the stale batch's four entries";
}

TEST_F(pg_group_test, a_group_whose_statement_fails_retries_each_append_alone)
{
    auto x = import_session("fallback-x"), y = import_session("fallback-y"), z = import_session("fallback-z");
    // y's entry reuses the id of y's first entry: the unique (session, entry id) index rejects
    // the group's statement, so nothing of the group commits and each append is retried alone.
    compaction::diagnostics diag;
    compaction::load_report report;
    const std::string taken = compaction::session_log::load(x.text, {}, report, diag)
                                  ->meta(0)
                                  .id;  // ten_turns: same ids in every session
    const auto before = node_a_->stats();
    std::optional<error_code> rx, ry, rz;
    write(*x.store, test::next_entries(x.text, 1), 20, rx);
    write(*y.store, test::next_entries(y.text, 1, taken), 20, ry);
    write(*z.store, test::next_entries(z.text, 1), 20, rz);
    ASSERT_TRUE(test::run_until(ioc_, [&] { return rx && ry && rz; }));
    EXPECT_EQ(node_a_->stats().group_fallbacks - before.group_fallbacks, 1u);
    EXPECT_EQ(*rx, error_code{});
    EXPECT_EQ(*ry, make_error_code(errc::database_error));
    EXPECT_EQ(*rz, error_code{});
    EXPECT_EQ(stored_entries(x.id), 21u);
    EXPECT_EQ(stored_entries(z.id), 21u);
    EXPECT_EQ(export_text(*node_b_, y.id).second, y.text);
}

}  // namespace
