// The OpenAPI document: served as checked in, able to fail a wrong answer, and the same routes as
// docs/server.md.
#include "server_fixture.hpp"

#include "file_text.hpp"
#include "loopback_http.hpp"

#include <boost/json/parse.hpp>

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <sstream>
#include <string>

using namespace agentctx;
namespace json = boost::json;
using test::agent_server_test;

namespace {

using server_openapi = agent_server_test;

// "POST /v1/sessions/{id}/messages" for every operation of the document.
std::set<std::string> documented_routes()
{
    std::set<std::string> out;
    const auto doc = json::parse(test::read_text(AGENTCTX_OPENAPI_DOC));
    for (const auto& [path, item] : doc.at("paths").as_object())
        for (const auto& [method, op] : item.as_object())
            if (method != "parameters")
            {
                std::string m(method);
                for (auto& ch : m)
                    ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
                out.insert(m + " " + std::string(path));
            }
    return out;
}

// The routes docs/server.md lists: its lines that start with a method and a path.
std::set<std::string> server_md_routes()
{
    std::set<std::string> out;
    std::istringstream in(test::read_text(AGENTCTX_SERVER_MD));
    const std::regex route(R"(^(GET|POST|PUT|DELETE|PATCH)\s+(/\S+))");
    for (std::string line; std::getline(in, line);)
        if (std::smatch m; std::regex_search(line, m, route))
        {
            const std::string path = m[2].str();
            out.insert(m[1].str() + " " + path.substr(0, path.find('?')));
        }
    return out;
}

}  // namespace

TEST(server_openapi_document, every_route_in_server_md_is_in_the_document_and_back)
{
    const auto documented = documented_routes();
    const auto listed = server_md_routes();
    EXPECT_EQ(documented.size(), 13u);
    EXPECT_EQ(listed, documented);
}

TEST(server_openapi_document, every_session_route_documents_the_shared_errors)
{
    const auto doc = json::parse(test::read_text(AGENTCTX_OPENAPI_DOC));
    for (const auto& [path, item] : doc.at("paths").as_object())
        for (const auto& [method, op] : item.as_object())
        {
            if (method == "parameters")
                continue;
            const auto& responses = op.at("responses").as_object();
            std::vector<std::string_view> shared{"401", "413", "431", "503"};
            if (std::string_view(path).find("{id}") != std::string_view::npos)
                shared.insert(shared.end(), {"400", "404"});
            for (const auto status : shared)
            {
                EXPECT_TRUE(responses.contains(status)) << method << " " << path << " " << status;
            }
        }
}

TEST_F(server_openapi, the_served_document_is_the_checked_in_file)
{
    start();
    const auto r = sync("GET", "/openapi.json");
    ASSERT_EQ(r->res.status, 200);
    EXPECT_EQ(r->res.header("content-type"), "application/json");
    EXPECT_EQ(r->res.body, test::read_text(AGENTCTX_OPENAPI_DOC));
    EXPECT_EQ(r->json().at("openapi"), "3.1.0");
}

TEST_F(server_openapi, a_wrong_answer_fails_validation)
{
    start();
    const auto id = new_session();
    const auto target = "/v1/sessions/" + id + "/context";
    const auto real = sync("GET", target);
    ASSERT_EQ(real->res.status, 200);
    EXPECT_EQ(test::contract_violation("GET", target, 200, "application/json", real->res.body), "");
    auto extra = real->json().as_object();
    extra["bogus"] = 1;
    EXPECT_EQ(
        test::contract_violation("GET", target, 200, "application/json", json::serialize(extra)),
        "$.bogus: not in the document"
    );
    auto missing = real->json().as_object();
    missing.erase("estimatedTokens");
    EXPECT_EQ(
        test::contract_violation("GET", target, 200, "application/json", json::serialize(missing)),
        "$: missing required 'estimatedTokens'"
    );
    auto wrong_type = real->json().as_object();
    wrong_type["estimatedTokens"] = "12";
    EXPECT_EQ(
        test::contract_violation("GET", target, 200, "application/json", json::serialize(wrong_type)),
        "$.estimatedTokens: expected type \"integer\", got \"12\""
    );
    EXPECT_EQ(
        test::contract_violation("GET", target, 418, "application/json", "{}"),
        "GET " + target + ": status 418 not documented"
    );
    EXPECT_EQ(
        test::contract_violation("GET", target, 200, "text/plain", "x"),
        "status 200: content type 'text/plain' not documented"
    );
    // An error answer must have the error shape; an unknown path may only be 404 or 405.
    EXPECT_EQ(
        test::contract_violation("GET", target, 404, "application/json", R"({"error":"no"})"),
        "$.error: expected type \"object\", got \"no\""
    );
    EXPECT_EQ(
        test::contract_violation("GET", "/v2/x", 200, "application/json", "{}"),
        "GET /v2/x: not in the document (answered 200)"
    );
    EXPECT_EQ(
        test::contract_violation(
            "GET",
            "/v2/x",
            404,
            "application/json",
            R"({"error":{"code":"not_found","message":"no such endpoint"}})"
        ),
        ""
    );
}

TEST_F(server_openapi, a_test_fails_when_the_server_answers_what_the_document_does_not_say)
{
    // The document as it would be if the server had gained a field: the answers no longer agree.
    auto doc = json::parse(test::read_text(AGENTCTX_OPENAPI_DOC));
    doc.at("components").at("schemas").at("Context").at("properties").as_object().erase("leafId");
    doc.at("components")
        .at("schemas")
        .at("Context")
        .at("required")
        .as_array()
        .erase(doc.at("components").at("schemas").at("Context").at("required").as_array().begin());
    contract_ = std::make_shared<test::openapi_check>(doc);
    start();
    const auto id = new_session();
    EXPECT_NONFATAL_FAILURE(sync("GET", "/v1/sessions/" + id + "/context"), "$.leafId: not in the document");
}

TEST_F(server_openapi, raw_answers_of_the_connection_layer_agree_with_the_document)
{
    tweak_ = [](server::server_options& o) {
        o.token = "t0ken";
        o.body_limit = 1024;
    };
    start();
    for (const auto& [method, path] : std::vector<std::pair<std::string, std::string>>{
             {"POST", "/v1/sessions"},
             {"GET", "/v1/sessions/abc/context"},
             {"POST", "/v1/sessions/abc/messages?format=openai"}})
    {
        const auto res = test::ask(port_, method, path, "{}");
        ASSERT_EQ(res.rfind("HTTP/1.1 401", 0), 0u) << res;
        const auto body = res.substr(res.find("\r\n\r\n") + 4);
        EXPECT_EQ(test::contract_violation(method, path, 401, "application/json", body), "") << body;
    }
}
