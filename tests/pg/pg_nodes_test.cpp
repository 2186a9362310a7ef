// Two agent_server processes on one database: concurrent appends across nodes, competing compactions, a node
// killed mid-compaction.
#include "loopback_http.hpp"
#include "server_contract.hpp"
#include "pg_test_support.hpp"
#include "server_binary.hpp"

#include <agentctx/compaction/session_log.hpp>
#include <agentctx/runtime/pg_store.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/json/serialize.hpp>
#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include <sys/wait.h>

namespace {

using namespace agentctx;
namespace json = boost::json;
using boost::system::error_code;

int env_int(const char* name, int fallback)
{
    const char* v = std::getenv(name);
    return v && *v ? std::atoi(v) : fallback;
}

// A running node; killed (SIGKILL) when the test ends, whatever happened.
struct node
{
    explicit node(const test::server_launch& launch) : p(AGENTCTX_SERVER_BIN, launch) {}
    test::server_process p;
    void kill_now() { p.kill_now(); }
};

std::string status_of(const std::string& response)
{
    return response.substr(0, 12);
}

class pg_nodes_test : public ::testing::Test
{
protected:
    void SetUp() override
    {
        std::string why;
        auto url = test::pg_conninfo(why);
        if (!url)
            GTEST_SKIP() << why;
        url_ = *url;
    }

    // A node; with `debug` it logs each compaction's plan, which it makes once it holds the lease.
    std::unique_ptr<node> start(int delay_ms, bool debug = false)
    {
        std::vector<std::string> args{"--no-auth", "--port", "0", "--threads", "2", "--store", url_};
        if (debug)
            args.insert(args.end(), {"--log-level", "debug"});
        auto n = std::make_unique<node>(test::server_launch{
            .args = std::move(args), .env = {{"AGENTCTX_OFFLINE_DELAY_MS", std::to_string(delay_ms)}}});
        EXPECT_NE(n->p.port, 0) << n->p.log;
        return n;
    }

    std::string create(const node& n)
    {
        const auto res = test::checked_ask(n.p.port, "POST", "/v1/sessions");
        EXPECT_EQ(status_of(res), "HTTP/1.1 201") << res;
        return std::string(test::raw_body(res).at("id").as_string());
    }

    std::string stored(const std::string& id)
    {
        boost::asio::io_context ioc;
        runtime::pg_pool pool(ioc.get_executor(), url_, {.max_connections = 1, .listen = false});
        std::optional<std::pair<error_code, std::string>> r;
        pool.async_export(id, [&](error_code ec, std::string t) { r.emplace(ec, std::move(t)); });
        EXPECT_TRUE(test::run_until(ioc, [&] { return r.has_value(); }));
        EXPECT_FALSE(r->first) << r->second;
        return r->second;
    }

    static std::size_t count(const std::string& text, const std::string& what)
    {
        std::size_t n = 0;
        for (std::size_t at = 0; (at = text.find(what, at)) != std::string::npos; ++at)
            ++n;
        return n;
    }

    // Waits until node `n` holds a compaction's lease: its plan is logged (at debug) right after
    // the lease is taken, before the model call.
    static bool holds_the_lease(node& n)
    {
        return n.p.wait_for_output("compaction plan:", std::chrono::seconds(30));
    }

    static std::string user_body(const std::string& text)
    {
        return R"({"type":"message","message":{"role":"user","content":")" + text + R"(","timestamp":1}})";
    }

    std::string url_;
};

TEST_F(pg_nodes_test, concurrent_clients_on_two_nodes_store_every_acknowledged_entry_once_in_a_chain)
{
    // CI runs 5 s; AGENTCTX_PG_NODES_SECONDS=30 is the bench mode.
    const int seconds = env_int("AGENTCTX_PG_NODES_SECONDS", 5);
    const int sessions = env_int("AGENTCTX_PG_NODES_SESSIONS", 50);
    const int clients = env_int("AGENTCTX_PG_NODES_CLIENTS", 20);
    auto a = start(0);
    auto b = start(0);
    ASSERT_NE(a->p.port, 0);
    ASSERT_NE(b->p.port, 0);
    std::vector<std::string> ids;
    for (int i = 0; i < sessions; ++i)
        ids.push_back(create(i % 2 ? *b : *a));
    const std::uint16_t ports[2] = {a->p.port, b->p.port};

    std::mutex mu;
    std::map<std::string, std::set<std::string>> acknowledged;  // session -> entry ids
    std::atomic<long> stale{0}, failures{0}, appended{0};
    std::string first_failure;
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    std::vector<std::thread> threads;
    for (int c = 0; c < clients; ++c)
        threads.emplace_back([&, c] {
            std::mt19937 rng(static_cast<unsigned>(c));
            for (int n = 0; std::chrono::steady_clock::now() < end; ++n)
            {
                const auto& id = ids[rng() % ids.size()];
                const auto port = ports[c % 2];
                const std::string body =
                    user_body("client " + std::to_string(c) + " message " + std::to_string(n));
                for (int attempt = 0; attempt < 50; ++attempt)
                {
                    const auto res = test::ask(port, "POST", "/v1/sessions/" + id + "/entries", body);
                    if (status_of(res) == "HTTP/1.1 201")
                    {
                        std::lock_guard lock(mu);
                        acknowledged[id].insert(std::string(test::raw_body(res).at("id").as_string()));
                        ++appended;
                        break;
                    }
                    if (res.find("stale_leaf") != std::string::npos)
                    {
                        ++stale;  // another node appended first: the session reloaded, retry
                        continue;
                    }
                    std::lock_guard lock(mu);
                    if (failures++ == 0)
                        first_failure = res;
                    break;
                }
            }
        });
    for (auto& t : threads)
        t.join();
    EXPECT_EQ(failures.load(), 0) << first_failure;
    ASSERT_GT(appended.load(), 0);
    std::printf(
        "[ figures ] 2 nodes, %d sessions, %d clients, %d s: %ld acknowledged appends (%.0f/s), %ld "
        "stale_leaf retries\n",
        sessions,
        clients,
        seconds,
        appended.load(),
        static_cast<double>(appended.load()) / seconds,
        stale.load()
    );

    for (const auto& id : ids)
    {
        const std::string text = stored(id);
        compaction::diagnostics diag;
        compaction::load_report report;
        auto log =
            compaction::session_log::load(text, {}, report, diag);  // strict: ids unique, parents present
        ASSERT_TRUE(log) << id << ": " << diag.message;
        const auto& acked = acknowledged[id];
        ASSERT_EQ(log->size(), acked.size()) << id << ": every stored entry was acknowledged, once";
        for (std::size_t i = 0; i < log->size(); ++i)
        {
            EXPECT_TRUE(acked.count(log->meta(i).id)) << id << " entry " << log->meta(i).id;
            EXPECT_EQ(log->meta(i).parent, static_cast<std::int32_t>(i) - 1)
                << id << ": one chain, in commit order";
        }
        // Both nodes' contexts agree (the other node may still be applying the last NOTIFY).
        std::string ctx_a, ctx_b;
        for (int i = 0; i < 100; ++i)
        {
            ctx_a = json::serialize(
                test::raw_body(test::checked_ask(a->p.port, "GET", "/v1/sessions/" + id + "/context"))
            );
            ctx_b = json::serialize(
                test::raw_body(test::checked_ask(b->p.port, "GET", "/v1/sessions/" + id + "/context"))
            );
            if (ctx_a == ctx_b)
                break;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        EXPECT_EQ(ctx_a, ctx_b) << id;
    }
}

TEST_F(pg_nodes_test, competing_compactions_commit_one_and_a_killed_node_leaves_nothing_behind)
{
    auto a = start(1500, true);  // the offline summarizer takes 1.5 s: both requests overlap
    auto b = start(1500);
    ASSERT_NE(a->p.port, 0);
    ASSERT_NE(b->p.port, 0);
    auto fill = [&](const std::string& id) {
        std::string words;
        for (int i = 0; i < 6000; ++i)
            words += "word" + std::to_string(i % 97) + (i % 13 == 12 ? ". " : " ");
        for (int i = 0; i < 8; ++i)
        {
            const auto res =
                test::checked_ask(a->p.port, "POST", "/v1/sessions/" + id + "/entries", user_body(words));
            ASSERT_EQ(status_of(res), "HTTP/1.1 201") << res;
        }
    };
    const std::string id = create(*a);
    fill(id);
    test::raw_conn first(a->p.port);
    ASSERT_TRUE(first.send(
        "POST /v1/sessions/" + id +
        "/compact HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
    ));
    // The second request comes while the first holds the lease (then it is in its 1.5 s model call).
    ASSERT_TRUE(holds_the_lease(*a)) << a->p.log;
    const auto second = test::checked_ask(b->p.port, "POST", "/v1/sessions/" + id + "/compact");
    EXPECT_EQ(status_of(second), "HTTP/1.1 409") << second;
    EXPECT_NE(second.find("compaction_in_progress"), std::string::npos) << second;
    std::string answer;
    first.read_to_close(answer);
    EXPECT_EQ(status_of(answer), "HTTP/1.1 200") << answer;
    EXPECT_EQ(count(stored(id), "\"type\":\"compaction\""), 1u);

    // A node killed in the middle of its compaction: nothing partial, and the lease is free.
    const std::string other = create(*a);
    fill(other);
    auto doomed = start(10000, true);
    ASSERT_NE(doomed->p.port, 0);
    test::raw_conn killed(doomed->p.port);
    ASSERT_TRUE(killed.send(
        "POST /v1/sessions/" + other + "/compact HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n"
    ));
    ASSERT_TRUE(holds_the_lease(*doomed)) << doomed->p.log;
    const auto blocked = test::checked_ask(b->p.port, "POST", "/v1/sessions/" + other + "/compact");
    EXPECT_NE(blocked.find("compaction_in_progress"), std::string::npos)
        << "the doomed node holds the lease: " << blocked;
    doomed->kill_now();
    const std::string before = stored(other);
    EXPECT_EQ(count(before, "\"type\":\"compaction\""), 0u) << "the killed compaction wrote nothing";
    std::string after_kill;
    for (int i = 0; i < 50;
         ++i)  // the server notices the dead connection at once on a socket; allow a moment
    {
        after_kill = test::ask(b->p.port, "POST", "/v1/sessions/" + other + "/compact");
        if (after_kill.find("compaction_in_progress") == std::string::npos)
            break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_EQ(status_of(after_kill), "HTTP/1.1 200") << after_kill;
    const std::string final_text = stored(other);
    EXPECT_EQ(count(final_text, "\"type\":\"compaction\""), 1u);
    compaction::diagnostics diag;
    compaction::load_report report;
    EXPECT_TRUE(compaction::session_log::load(final_text, {}, report, diag)) << diag.message;
}

TEST_F(pg_nodes_test, a_node_whose_listen_connection_is_killed_catches_up_within_a_bound)
{
    auto a = start(0);
    auto b = start(0);
    ASSERT_NE(a->p.port, 0);
    ASSERT_NE(b->p.port, 0);
    auto context = [](const node& n, const std::string& id) {
        return json::serialize(
            test::raw_body(test::checked_ask(n.p.port, "GET", "/v1/sessions/" + id + "/context"))
        );
    };
    auto append = [&](const node& n, const std::string& id, const std::string& text) {
        const auto res =
            test::checked_ask(n.p.port, "POST", "/v1/sessions/" + id + "/entries", user_body(text));
        ASSERT_EQ(status_of(res), "HTTP/1.1 201") << res;
    };
    // Ten sessions open on both nodes, appended to on both.
    std::vector<std::string> ids;
    for (int i = 0; i < 10; ++i)
    {
        ids.push_back(create(*a));
        append(*a, ids.back(), "from a");
        for (int k = 0; k < 50 && context(*b, ids.back()) != context(*a, ids.back()); ++k)
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        append(*b, ids.back(), "from b");
    }
    // Mid-run, b's LISTEN connection dies (found by its name), and a keeps appending.
    const std::string name = "agentctx-listen-" + std::to_string(b->p.pid);
    std::string killed;
    for (int i = 0; i < 100 && killed.empty(); ++i)  // b listens within moments of starting
    {
        killed = test::pg_sql(
            url_,
            "SELECT pg_terminate_backend(pid)::text FROM pg_stat_activity WHERE application_name = $1",
            {name}
        );
        if (killed.empty())
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ASSERT_EQ(killed, "true");
    for (int round = 0; round < 3; ++round)
        for (const auto& id : ids)
            append(*a, id, "after the kill " + std::to_string(round));
    // Both nodes agree within a bounded time (the reconnect's re-sync, else the 1 s check).
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    std::size_t behind = ids.size();
    while (behind > 0 && std::chrono::steady_clock::now() < end)
    {
        behind = 0;
        for (const auto& id : ids)
            behind += context(*a, id) != context(*b, id);
        if (behind > 0)
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_EQ(behind, 0u) << "sessions b still serves stale 5 s after a's last append";
    const std::string metrics = test::checked_ask(b->p.port, "GET", "/metrics");
    EXPECT_NE(metrics.find("agentctx_pg_listen_reconnects_total 1"), std::string::npos) << metrics;
    EXPECT_NE(metrics.find("agentctx_pg_full_resyncs_total 1"), std::string::npos) << metrics;
    EXPECT_EQ(
        test::pg_sql(url_, "SELECT count(*)::text FROM pg_stat_activity WHERE application_name = $1", {name}),
        "1"
    ) << "b listens again";
}

}  // namespace
