// The agent server's request-view route (the budgeted view, budget_exceeded with its numbers, event and
// metric, bad input) and the clearing_refused event's frame.
#include "event_stream.hpp"
#include "server_fixture.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace agentctx;
namespace json = boost::json;
using test::agent_server_test;

namespace {

using server_view = agent_server_test;

}  // namespace

TEST_F(server_view, a_view_keeps_the_newest_groups_that_fit_and_says_what_did_not)
{
    start();
    const auto id = new_session();
    std::vector<std::string> ids;
    for (const auto& body :
         {user(std::string(400, 'u')),
          assistant(std::string(800, 'a'), 100),
          user(std::string(600, 'v')),
          assistant(std::string(1000, 'b'), 200)})
    {
        const auto r = sync("POST", "/v1/sessions/" + id + "/entries", body);
        ASSERT_EQ(r->res.status, 201) << r->res.body;
        ids.emplace_back(r->json().at("id").as_string());
    }
    // The messages' sizes as the context route gives them: two groups, (u1 a1) and (u2 a2).
    const auto ctx = sync("GET", "/v1/sessions/" + id + "/context")->json();
    std::vector<std::int64_t> t;
    for (const auto& m : ctx.at("messages").as_array())
        t.push_back(m.at("tokens").as_int64());
    ASSERT_EQ(t.size(), 4u);
    const auto g1 = t[0] + t[1], g2 = t[2] + t[3];
    const auto path = "/v1/sessions/" + id + "/view";

    const auto all = sync("POST", path, R"({"maxTokens":100000})");
    ASSERT_EQ(all->res.status, 200) << all->res.body;
    json::array msgs;
    for (std::size_t i = 0; i < 4; ++i)
        msgs.push_back(ctx.at("messages").at(i));
    EXPECT_EQ(
        all->json(),
        json::value(json::object{
            {"reason", "fits"},
            {"messages", msgs},
            {"keptEntryIds", json::array(ids.begin(), ids.end())},
            {"tokens",
             json::object{
                 {"maxTokens", 100000},
                 {"system", 0},
                 {"fixed", 0},
                 {"messages", g1 + g2},
                 {"reservedOutput", 0},
                 {"safetyMargin", 0},
                 {"availableForMessages", 100000},
                 {"total", g1 + g2}}}})
    );

    // Room for the newest group only: the older one is left out.
    const auto trimmed = sync(
        "POST",
        path,
        R"({"maxTokens":)" + std::to_string(g2 + 70) +
            R"(,"reservedOutput":30,"safetyMargin":20,"systemTokens":20})"
    );
    ASSERT_EQ(trimmed->res.status, 200) << trimmed->res.body;
    EXPECT_EQ(trimmed->json().at("reason"), "trimmed");
    EXPECT_EQ(
        trimmed->json().at("keptEntryIds"),
        json::value(json::array{json::string(ids[2]), json::string(ids[3])})
    );
    EXPECT_EQ(trimmed->json().at("tokens").at("availableForMessages"), g2);
    EXPECT_EQ(trimmed->json().at("tokens").at("total"), g2 + 70);

    // The first entry must stay, and both groups do not fit: 409 with the numbers, the same
    // numbers on the event stream, and the counter.
    auto sub = subscribe(id);
    const auto over = sync(
        "POST",
        path,
        R"({"maxTokens":)" + std::to_string(g1 + g2 - 1) + R"(,"requiredEntryIds":[")" + ids[0] + R"("]})"
    );
    ASSERT_EQ(over->res.status, 409) << over->res.body;
    const auto answer = over->json();
    const auto& err = answer.at("error");
    EXPECT_EQ(err.at("code"), "budget_exceeded");
    const json::object budget{
        {"inputTokens", g1 + g2},
        {"allowance", g1 + g2 - 1},
        {"requiredTokens", g1 + g2},
        {"boundary", json::object{{"entryId", ids[0]}, {"position", 0}}},
        {"required", json::object{{"entryId", ids[0]}, {"position", 0}}}};
    EXPECT_EQ(err.at("budget"), json::value(budget));
    run_until([&] { return sub->text.find("event: budget_exceeded") != std::string::npos; });
    json::object event{{"reason", "request_view"}};
    for (const auto& kv : budget)
        event[kv.key()] = kv.value();
    event["summaryTokens"] = 0;  // a view reserves no summary
    EXPECT_NE(
        sub->text.find("event: budget_exceeded\ndata: " + json::serialize(event) + "\n\n"), std::string::npos
    ) << sub->text;
    unsubscribe(*sub);
    const auto metrics = sync("GET", "/metrics")->res.body;
    for (const std::string line :
         {"agentctx_budget_exceeded_total 1\n",
          "agentctx_http_requests_total{route=\"POST /v1/sessions/{id}/view\",status=\"409\"} 1\n",
          "agentctx_http_requests_total{route=\"POST /v1/sessions/{id}/view\",status=\"200\"} 2\n"})
        EXPECT_NE(metrics.find(line), std::string::npos) << line << metrics;
}

TEST_F(server_view, bad_budgets_are_400_naming_the_field)
{
    start();
    const auto id = new_session();
    const auto path = "/v1/sessions/" + id + "/view";
    const std::pair<std::string, std::string> cases[] = {
        {"", "maxTokens"},
        {R"({"maxTokens":0})", "maxTokens"},
        {R"({"maxTokens":"1000"})", "maxTokens"},
        {R"({"maxTokens":1000,"reservedOutput":-1})", "reservedOutput"},
        {R"({"maxTokens":1000,"safetyMargin":1.5})", "safetyMargin"},
        {R"({"maxTokens":1000,"systemTokens":null})", "systemTokens"},
        {R"({"maxTokens":1000,"requiredEntryIds":[1]})", "requiredEntryIds"},
        {R"({"maxTokens":1000,"required":[]})", "required"},
    };
    for (const auto& [body, field] : cases)
    {
        const auto r = sync("POST", path, body);
        ASSERT_EQ(r->res.status, 400) << body << " " << r->res.body;
        EXPECT_EQ(r->json().at("error").at("code"), "invalid_request") << body;
        EXPECT_EQ(r->json().at("error").at("field"), json::value(field)) << body;
        EXPECT_EQ(std::string(r->json().at("error").at("message").as_string()).rfind(field + ": ", 0), 0u)
            << body;
    }
    EXPECT_EQ(sync("POST", "/v1/sessions/nosuch/view", R"({"maxTokens":1000})")->res.status, 404);
    EXPECT_EQ(sync("GET", path)->res.status, 405);
}

TEST(server_event_frames, clearing_refused_names_the_entries_and_why)
{
    const runtime::session_event e =
        runtime::clearing_refused_event{{"r1", "r2"}, "the host's evidence store refused: read-only", 25100};
    EXPECT_EQ(
        server::sse_frame(e, "/data"),
        "event: clearing_refused\ndata: {\"targetIds\":[\"r1\",\"r2\"],\"reason\":\"the host's evidence "
        "store "
        "refused: read-only\",\"tokensBefore\":25100}\n\n"
    );
}
