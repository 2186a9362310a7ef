// Bounded staleness across nodes: a killed LISTEN connection is re-established and re-synced; a change nobody
// announced is found by the periodic check.
#include "pg_store_fixture.hpp"

#include <agentctx/runtime/error.hpp>
#include <agentctx/runtime/store.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace {

using namespace agentctx;
using namespace agentctx::runtime;
using namespace std::chrono_literals;
using boost::system::error_code;

class pg_resync_test : public test::pg_store_fixture
{
protected:
    // Appends until one lands (another node's append first is stale_leaf: the session reloaded).
    void append_landing(session& s, const std::string& text)
    {
        for (int attempt = 0; attempt < 20; ++attempt)
        {
            auto [ec, id] = append(s, user(text));
            if (ec != make_error_code(errc::stale_leaf))
            {
                ASSERT_FALSE(ec) << ec.message();
                return;
            }
        }
        FAIL() << "no append landed in 20 attempts";
    }
};

TEST_F(pg_resync_test, a_killed_listen_connection_is_reestablished_and_both_nodes_agree_within_a_bound)
{
    // No periodic check on either node: only the re-sync after the reconnect can repair a miss.
    pg_pool a(ioc_.get_executor(), url_, {.check_interval = 0ms});
    pg_pool b(ioc_.get_executor(), url_, {.check_interval = 0ms});
    ASSERT_TRUE(test::run_until(ioc_, [&] { return b.listen_backend_pid() != 0; }));
    std::vector<std::shared_ptr<session>> on_a, on_b;
    for (int i = 0; i < 4; ++i)
    {
        const std::string id = test::unique_session_id("resync");
        ASSERT_FALSE(import(a, ten_turns(id)).first);
        on_a.push_back(open_session(a, id));
        on_b.push_back(open_session(b, id));
    }
    // Both nodes append to every session...
    for (int round = 0; round < 3; ++round)
        for (std::size_t i = 0; i < on_a.size(); ++i)
        {
            append_landing(*on_a[i], "a" + std::to_string(round));
            append_landing(*on_b[i], "b" + std::to_string(round));
        }
    // ... then b's LISTEN connection dies, and only a appends: b hears nothing until it listens again.
    const int killed = b.listen_backend_pid();
    ASSERT_EQ(
        test::pg_sql(url_, "SELECT pg_terminate_backend($1::int)::text", {std::to_string(killed)}), "true"
    );
    for (int round = 0; round < 5; ++round)
        for (auto& s : on_a)
            append_landing(*s, "after the kill " + std::to_string(round));
    const auto start = std::chrono::steady_clock::now();
    auto agree = [&] {
        for (std::size_t i = 0; i < on_a.size(); ++i)
            if (on_b[i]->context().size() != on_a[i]->context().size())
                return false;
        return true;
    };
    ASSERT_TRUE(test::run_until(ioc_, agree, std::chrono::seconds(5)))
        << "b still behind a 5 s after the last append";
    const auto took =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    EXPECT_EQ(on_b[0]->context().size(), 20u + 6u + 5u) << "20 imported, 6 from both nodes, 5 after the kill";
    EXPECT_GE(b.stats().listen_reconnects, 1u);
    EXPECT_GE(b.stats().full_resyncs, 1u);
    EXPECT_NE(b.listen_backend_pid(), killed);
    EXPECT_NE(b.listen_backend_pid(), 0);
    std::printf(
        "[ figures ] b agreed with a %lld ms after a's last append\n", static_cast<long long>(took.count())
    );
}

TEST_F(pg_resync_test, a_change_no_notification_announced_is_found_by_the_periodic_check)
{
    pg_pool b(ioc_.get_executor(), url_, {.check_interval = 200ms});
    const std::string id = test::unique_session_id("check");
    const std::string text = ten_turns(id);
    ASSERT_FALSE(import(b, text).first);
    auto s = open_session(b, id);
    const auto before = s->context().size();
    // A committed entry whose notification never came (as a node that died between its commit
    // and its NOTIFY leaves it): written straight into the tables.
    const auto e = test::next_entries(text, 1).front();
    std::string line = to_jsonl_line(e->raw);
    line.pop_back();
    test::pg_sql(
        url_,
        "WITH s AS (UPDATE agentctx_sessions SET last_seq = last_seq + 1 WHERE id = $1 RETURNING last_seq) "
        "INSERT INTO agentctx_entries (session_id, seq, entry_id, parent_id, type, line) "
        "SELECT $1, s.last_seq, $2, $3, 'message', $4 FROM s",
        {id, e->id, *e->parent_id, line}
    );
    const auto checks = b.stats().checks;
    ASSERT_TRUE(test::run_until(
        ioc_, [&] { return s->context().size() == before + 1; }, std::chrono::seconds(3)
    ));
    EXPECT_GE(b.stats().missed_changes, 1u);
    EXPECT_GT(b.stats().checks, checks);
}

}  // namespace
