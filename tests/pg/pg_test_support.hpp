// The PostgreSQL tests' fixture: the throwaway cluster's conninfo (tests/tools/pg_cluster.sh), run-until
// helpers.
#pragma once

#include <agentctx/runtime/pg_store.hpp>

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include <libpq-fe.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace agentctx::test {

/// The cluster's conninfo, or nullopt with `why` set (the tests then skip, saying why).
inline std::optional<std::string> pg_conninfo(std::string& why)
{
    const char* state = std::getenv("AGENTCTX_PG_STATE");
    if (const char* url = std::getenv("AGENTCTX_PG_URL"); url && *url)
        return std::string(url);
    if (!state)
    {
        why = "AGENTCTX_PG_STATE is not set (run through ctest, which starts the cluster)";
        return std::nullopt;
    }
    std::ifstream u(std::string(state) + "/url");
    std::string url;
    if (u && std::getline(u, url) && !url.empty())
        return url;
    std::ifstream w(std::string(state) + "/unavailable");
    std::stringstream ss;
    ss << w.rdbuf();
    why = "PostgreSQL could not be started: " +
          (ss.str().empty() ? std::string("no cluster state in ") + state : ss.str());
    return std::nullopt;
}

/// One statement on a blocking connection of the test's own (outside every pool under test): the
/// first row's first value, or "" when there is none.
inline std::string pg_sql(
    const std::string& url, const std::string& statement, const std::vector<std::string>& params = {}
)
{
    PGconn* c = PQconnectdb(url.c_str());
    std::vector<const char*> values;
    for (const auto& p : params)
        values.push_back(p.c_str());
    PGresult* r = PQexecParams(
        c, statement.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr, nullptr, 0
    );
    std::string out = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0 ? PQgetvalue(r, 0, 0) : "";
    EXPECT_TRUE(PQresultStatus(r) == PGRES_TUPLES_OK || PQresultStatus(r) == PGRES_COMMAND_OK)
        << PQerrorMessage(c);
    PQclear(r);
    PQfinish(c);
    return out;
}

/// A session id unique to this process and call.
inline std::string unique_session_id(const std::string& stem)
{
    static std::atomic<int> n{0};
    return stem + "-" + std::to_string(::getpid()) + "-" + std::to_string(n++) + "-" +
           std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
}

/// Runs `ioc` until `done()` or a generous limit (a hang fails, it never passes).
template <class Pred>
bool run_until(boost::asio::io_context& ioc, Pred done, std::chrono::seconds limit = std::chrono::seconds(30))
{
    ioc.restart();
    const auto end = std::chrono::steady_clock::now() + limit;
    while (!done() && std::chrono::steady_clock::now() < end)
        if (ioc.run_one_for(std::chrono::milliseconds(20)) == 0 && ioc.stopped())
            ioc.restart();
    return done();
}

}  // namespace agentctx::test
