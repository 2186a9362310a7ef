// The agent server's model_change appends: answered after the pre-request check (model downshift).
#include "server_fixture.hpp"

#include "loopback_http.hpp"
#include "run_process.hpp"
#include "server_binary.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

using namespace agentctx;
namespace json = boost::json;
namespace fs = std::filesystem;
using test::agent_server_test;

namespace {

using server_model_change = agent_server_test;

// One user turn and its answer in Chat Completions format: about 400 tokens.
std::string chat_turn(int i)
{
    return R"({"messages":[{"role":"user","content":"step )" + std::to_string(i) + " " +
           std::string(800, 'u') + R"("},{"role":"assistant","content":")" + std::string(800, 'a') +
           R"("}]})";
}

constexpr std::string_view to_haiku =
    R"({"type":"model_change","provider":"anthropic","modelId":"claude-haiku-4-5"})";

}  // namespace

TEST_F(server_model_change, a_switch_to_a_smaller_window_is_answered_after_its_compaction)
{
    // The settings' models section: haiku's window 4000 with reserve 1000 leaves a threshold of 3000.
    tweak_ = [](server::server_options& o) { o.host.models = {{"anthropic", "claude-haiku-4-5", 4000, 0}}; };
    start({}, 200000, 1000);
    const auto id = new_session();
    for (int i = 0; i < 8; ++i)
        ASSERT_EQ(
            sync("POST", "/v1/sessions/" + id + "/messages?format=openai", chat_turn(i))->res.status, 201
        );
    const auto before =
        sync("GET", "/v1/sessions/" + id + "/context")->json().at("estimatedTokens").as_int64();
    ASSERT_GT(before, 3000);
    const auto r = sync("POST", "/v1/sessions/" + id + "/entries", std::string(to_haiku));
    ASSERT_EQ(r->res.status, 201) << r->res.body;
    const auto v = r->json();
    ASSERT_TRUE(v.as_object().contains("compaction")) << r->res.body;
    EXPECT_EQ(v.at("compaction").at("reason"), "model_change");
    EXPECT_EQ(v.at("compaction").at("tokensBefore"), before);
    const auto ctx = sync("GET", "/v1/sessions/" + id + "/context")->json();
    EXPECT_EQ(ctx.at("messages").at(0).at("role"), "compactionSummary");
    EXPECT_EQ(ctx.at("messages").at(0).at("entryId"), v.at("compaction").at("entryId"));
    EXPECT_LE(ctx.at("estimatedTokens").as_int64(), 3000);
    // The change is stored as written, before the compaction.
    EXPECT_NE(
        file(id).find(R"("type":"model_change","id":")" + std::string(v.at("id").as_string())),
        std::string::npos
    );
    // The turns that follow are haiku's: stamped with it, checked against its window.
    ASSERT_EQ(sync("POST", "/v1/sessions/" + id + "/messages?format=openai", chat_turn(8))->res.status, 201);
    EXPECT_NE(file(id).find(R"("model":"claude-haiku-4-5")"), std::string::npos);
    const auto turn = sync(
        "POST",
        "/v1/sessions/" + id + "/turn-end",
        R"({"format":"openai","usage":{"prompt_tokens":1000,"completion_tokens":50}})"
    );
    ASSERT_EQ(turn->res.status, 200) << turn->res.body;
    EXPECT_EQ(
        turn->json(),
        json::parse(R"({"compacted":false,"retry":false,"tokens":1050,"contextWindow":4000,"threshold":3000,
                                            "message":"under the threshold"})")
    );
}

TEST_F(server_model_change, a_window_the_compacted_context_still_exceeds_is_a_conflict)
{
    tweak_ = [](server::server_options& o) {
        o.host.models = {{"anthropic", "claude-haiku-4-5", 1100, 0}};
    };  // allowance 100
    start({}, 200000, 1000);
    const auto id = new_session();
    for (int i = 0; i < 4; ++i)
        ASSERT_EQ(
            sync("POST", "/v1/sessions/" + id + "/messages?format=openai", chat_turn(i))->res.status, 201
        );
    const auto r = sync("POST", "/v1/sessions/" + id + "/entries", std::string(to_haiku));
    ASSERT_EQ(r->res.status, 409) << r->res.body;
    EXPECT_EQ(r->json().at("error").at("code"), "model_window_exceeded");
    const std::string message(r->json().at("error").at("message").as_string());
    EXPECT_EQ(message.rfind("the model_change entry ", 0), 0u) << message;
    EXPECT_NE(
        message.find(
            "anthropic/claude-haiku-4-5's window: contextWindow 1100 - reserveTokens 1000 = 100 tokens"
        ),
        std::string::npos
    ) << message;
}

TEST_F(server_model_change, an_unlisted_model_is_refused_naming_the_field)
{
    start({}, 200000, 1000);
    const auto id = new_session();
    for (int i = 0; i < 4; ++i)
        ASSERT_EQ(
            sync("POST", "/v1/sessions/" + id + "/messages?format=openai", chat_turn(i))->res.status, 201
        );
    const auto before = file(id);
    const auto r = sync("POST", "/v1/sessions/" + id + "/entries", std::string(to_haiku));
    ASSERT_EQ(r->res.status, 400) << r->res.body;
    EXPECT_EQ(r->json().at("error").at("code"), "unknown_model");
    EXPECT_EQ(r->json().at("error").at("field"), "modelId");
    EXPECT_EQ(
        r->json().at("error").at("message"),
        "modelId: anthropic/claude-haiku-4-5 is neither the serving model nor one of the settings' models"
    );
    EXPECT_EQ(file(id), before);  // nothing stored
    // The serving model itself is always known.
    const auto back = sync(
        "POST",
        "/v1/sessions/" + id + "/entries",
        R"({"type":"model_change","provider":"anthropic","modelId":"claude-sonnet-4-5"})"
    );
    EXPECT_EQ(back->res.status, 201) << back->res.body;
}

TEST(server_model_change_process, the_binary_reads_the_settings_models_section)
{
    const auto root = fs::temp_directory_path() / ("agentctx-server-models-" + std::to_string(::getpid()));
    fs::remove_all(root);
    fs::create_directories(root);
    const auto settings = root / "settings.json";
    std::ofstream(settings) << R"({"compaction": {"reserveTokens": 1000, "keepRecentTokens": 200},
        "models": {"anthropic/claude-haiku-4-5": {"contextWindow": 4000, "maxOutputTokens": 4096}}})";
    test::server_process child(
        AGENTCTX_SERVER_BIN,
        {.args =
             {"--no-auth",
              "--port",
              "0",
              "--data-dir",
              (root / "data").string(),
              "--settings",
              settings.string()},
         .env = {{"PI_CODING_AGENT_DIR", root.string()}}}
    );
    ASSERT_NE(child.port, 0) << child.log;
    const std::string id(
        test::raw_body(test::checked_ask(child.port, "POST", "/v1/sessions")).at("id").as_string()
    );
    for (int i = 0; i < 8; ++i)
    {
        const auto res = test::checked_ask(
            child.port, "POST", "/v1/sessions/" + id + "/messages?format=openai", chat_turn(i)
        );
        ASSERT_EQ(res.rfind("HTTP/1.1 201", 0), 0u) << res;
    }
    const auto res =
        test::checked_ask(child.port, "POST", "/v1/sessions/" + id + "/entries", std::string(to_haiku));
    ASSERT_EQ(res.rfind("HTTP/1.1 201", 0), 0u) << res;
    EXPECT_EQ(test::raw_body(res).at("compaction").at("reason"), "model_change") << res;
    fs::remove_all(root);
}

TEST(server_model_change_process, a_models_window_at_or_below_reserve_tokens_stops_the_start)
{
    const auto root =
        fs::temp_directory_path() / ("agentctx-server-small-model-" + std::to_string(::getpid()));
    fs::remove_all(root);
    fs::create_directories(root);
    const auto settings = root / "settings.json";
    std::ofstream(settings) << R"({"compaction": {"reserveTokens": 16384},
        "models": {"anthropic/claude-haiku-4-5": {"contextWindow": 16384}}})";
    const std::string bin = AGENTCTX_SERVER_BIN;
    const auto r = test::run_process(
        bin + " --no-auth --port 0 --data-dir " + (root / "data").string() + " --settings " +
        settings.string()
    );
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(
        r.err.find(
            "settings field 'models.anthropic/claude-haiku-4-5.contextWindow': 16384 must be larger than "
            "reserveTokens (16384)"
        ),
        std::string::npos
    ) << r.err;
    fs::remove_all(root);
}

TEST(server_model_change_process, a_bad_models_entry_stops_the_start_naming_its_field)
{
    const auto root =
        fs::temp_directory_path() / ("agentctx-server-bad-models-" + std::to_string(::getpid()));
    fs::remove_all(root);
    fs::create_directories(root);
    const auto settings = root / "settings.json";
    std::ofstream(settings) << R"({"models": {"anthropic/claude-haiku-4-5": {"contextWindow": -1}}})";
    const std::string bin = AGENTCTX_SERVER_BIN;
    const auto r = test::run_process(
        bin + " --no-auth --port 0 --data-dir " + (root / "data").string() + " --settings " +
        settings.string()
    );
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(
        r.err.find(
            "settings field 'models.anthropic/claude-haiku-4-5.contextWindow': must be a positive integer"
        ),
        std::string::npos
    ) << r.err;
    fs::remove_all(root);
}
