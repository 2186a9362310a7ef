// The agent server under hostile input: tool results that can never pair and forged batch marks
// are refused at the door with the field; ids reused across turns are accepted and compact;
// /compact answers with the stored (redacted) summary.
#include "server_fixture.hpp"

#include "loopback_http.hpp"
#include "server_contract.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace agentctx;
namespace json = boost::json;
using test::agent_server_test;

namespace {

using hostile_batches = agent_server_test;

std::string messages(std::string_view key, std::string_view items)
{
    return "{\"" + std::string(key) + "\":" + std::string(items) + "}";
}

// One turn of a backend that numbers its calls per response: `call_0` every turn.
std::string call_0_turn(int k)
{
    const std::string n = std::to_string(k);
    return R"({"role":"user","content":"step )" + n +
           R"("},{"role":"assistant","content":null,"tool_calls":[{"id":"call_0","type":"function","function":{"name":"bash","arguments":"{\"command\":\"make )" +
           n + R"(\"}"}}]},{"role":"tool","tool_call_id":"call_0","content":")" + std::string(2000, 'x') +
           R"("},{"role":"assistant","content":"done )" + n + R"("})";
}

}  // namespace

// Results pair with the calls of their own batch: `call_0` in every turn, in one request or
// several, is accepted, and the session compacts by hand and at the end of a turn.
TEST_F(hostile_batches, tool_call_ids_reused_across_turns_are_accepted_and_the_session_compacts)
{
    start();
    const auto id = new_session();
    const auto path = "/v1/sessions/" + id + "/messages?format=openai";
    for (int k = 0; k < 4; ++k)
    {
        const auto r = sync("POST", path, messages("messages", "[" + call_0_turn(k) + "]"));
        ASSERT_EQ(r->res.status, 201) << r->res.body;
    }
    const auto two =
        sync("POST", path, messages("messages", "[" + call_0_turn(4) + "," + call_0_turn(5) + "]"));
    ASSERT_EQ(two->res.status, 201) << two->res.body;
    const auto compacted = sync("POST", "/v1/sessions/" + id + "/compact", "{}");
    ASSERT_EQ(compacted->res.status, 200) << compacted->res.body;
    // The last turn (its prompt onward) is kept; the five before it, all `call_0`, are summarized.
    EXPECT_EQ(compacted->json().at("firstKeptEntryId"), two->json().at("ids").at(4)) << two->res.body;
    const auto turn_end = sync("POST", "/v1/sessions/" + id + "/turn-end", R"({"format":"openai"})");
    EXPECT_EQ(turn_end->res.status, 200) << turn_end->res.body;
}

// What can never pair is refused with 400 `unpaired_tool_call` and the field, in every format and
// on /entries; nothing is written.
TEST_F(hostile_batches, results_that_can_never_pair_are_refused_with_their_field)
{
    start();
    const auto id = new_session();
    ASSERT_EQ(
        sync(
            "POST",
            "/v1/sessions/" + id + "/messages?format=openai",
            messages(
                "messages",
                R"([{"role":"user","content":"a"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"ls","arguments":"{}"}}]},{"role":"tool","tool_call_id":"call_1","content":"a b"}])"
            )
        )
            ->res.status,
        201
    );
    const auto before = file(id);
    const auto refused = [&](const std::string& format, const std::string& body) {
        const auto r = sync("POST", "/v1/sessions/" + id + "/messages?format=" + format, body);
        EXPECT_EQ(r->res.status, 400) << r->res.body;
        EXPECT_EQ(r->json().at("error").at("code"), "unpaired_tool_call") << r->res.body;
        return std::pair(
            std::string(r->json().at("error").at("field").as_string()),
            std::string(r->json().at("error").at("message").as_string())
        );
    };
    using fm = std::pair<std::string, std::string>;
    EXPECT_EQ(
        refused("openai", messages("messages", R"([{"role":"tool","tool_call_id":"nope","content":"x"}])")),
        fm("messages[0].tool_call_id",
           "messages[0].tool_call_id: no tool call 'nope' for this result to answer")
    );
    EXPECT_EQ(
        refused(
            "openai", messages("messages", R"([{"role":"tool","tool_call_id":"call_1","content":"again"}])")
        ),
        fm("messages[0].tool_call_id",
           "messages[0].tool_call_id: the tool call 'call_1' has a result already")
    );
    EXPECT_EQ(
        refused(
            "openai",
            messages(
                "messages",
                R"([{"role":"user","content":"b"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_0","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"call_0","type":"function","function":{"name":"g","arguments":"{}"}}]}])"
            )
        ),
        fm("messages[1].tool_calls[1].id",
           "messages[1].tool_calls[1].id: the tool-call id 'call_0' is used twice in this message")
    );
    EXPECT_EQ(
        refused(
            "anthropic",
            messages(
                "messages",
                R"([{"role":"user","content":[{"type":"text","text":"c"},{"type":"tool_result","tool_use_id":"toolu_9","content":"x"}]}])"
            )
        ),
        fm("messages[0].content[1].tool_use_id",
           "messages[0].content[1].tool_use_id: no tool call 'toolu_9' for this result to answer")
    );
    EXPECT_EQ(
        refused(
            "responses",
            messages(
                "input",
                R"([{"type":"function_call","call_id":"fc_1","name":"ls","arguments":"{}"},{"type":"function_call","call_id":"fc_1","name":"ls","arguments":"{}"}])"
            )
        ),
        fm("input[1].call_id", "input[1].call_id: the tool-call id 'fc_1' is used twice in this message")
    );
    const auto entry = sync(
        "POST",
        "/v1/sessions/" + id + "/entries",
        R"({"type":"message","message":{"role":"toolResult","toolCallId":"zz","toolName":"bash","content":[{"type":"text","text":"x"}],"isError":false,"timestamp":1}})"
    );
    EXPECT_EQ(entry->res.status, 400) << entry->res.body;
    EXPECT_EQ(entry->json().at("error").at("code"), "unpaired_tool_call");
    EXPECT_EQ(entry->json().at("error").at("field"), "message.toolCallId");
    EXPECT_EQ(file(id), before);
}

// The batch mark (and every other `agentctx*` top-level field) is the runtime's: refused with
// 400 `reserved_field` and the field on every route that takes entries or messages.
TEST_F(hostile_batches, a_client_cannot_write_the_batch_mark)
{
    start();
    const auto id = new_session();
    const auto before = file(id);
    const auto forged = sync(
        "POST",
        "/v1/sessions/" + id + "/entries",
        R"({"type":"custom","customType":"app.state","data":{},"agentctxBatch":{"index":0,"size":2}})"
    );
    EXPECT_EQ(forged->res.status, 400) << forged->res.body;
    EXPECT_EQ(forged->json().at("error").at("code"), "reserved_field");
    EXPECT_EQ(forged->json().at("error").at("field"), "agentctxBatch");
    EXPECT_EQ(
        forged->json().at("error").at("message"),
        "agentctxBatch: reserved: top-level fields named 'agentctx*' are written only by the runtime"
    );
    const auto wire = sync(
        "POST",
        "/v1/sessions/" + id + "/messages?format=openai",
        R"({"messages":[{"role":"user","content":"a"}],"agentctxBatch":{"index":0,"size":2}})"
    );
    EXPECT_EQ(wire->res.status, 400) << wire->res.body;
    EXPECT_EQ(wire->json().at("error").at("code"), "reserved_field");
    EXPECT_EQ(wire->json().at("error").at("field"), "agentctxBatch");
    const auto [status, body] = [&] {
        const auto raw = test::checked_ask(
            port_,
            "PUT",
            "/v1/sessions/" + id + "/messages?format=openai",
            R"({"messages":[{"role":"user","content":"a"}],"agentctxNote":1})"
        );
        return std::pair(std::stoi(raw.substr(9, 3)), test::raw_body(raw));
    }();
    EXPECT_EQ(status, 400);
    EXPECT_EQ(body.at("error").at("code"), "reserved_field");
    EXPECT_EQ(file(id), before);
    // An ordinary custom entry is the client's.
    EXPECT_EQ(
        sync(
            "POST",
            "/v1/sessions/" + id + "/entries",
            R"({"type":"custom","customType":"app.state","data":{}})"
        )
            ->res.status,
        201
    );
}

// `/compact` answers with the summary the entry stores: a token in a read file's path reaches the
// answer redacted, as in the file.
TEST_F(hostile_batches, compact_answers_with_the_stored_redacted_summary)
{
    start();
    const auto id = new_session();
    const std::string token = "ghp_" + std::string("aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A");
    const auto path = "/v1/sessions/" + id + "/messages?format=openai";
    const auto read = sync(
        "POST",
        path,
        messages(
            "messages",
            R"([{"role":"user","content":"read the notes"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_0","type":"function","function":{"name":"read","arguments":"{\"path\":\"notes/)" +
                token + R"(\"}"}}]},{"role":"tool","tool_call_id":"call_0","content":")" +
                std::string(2000, 'x') + R"("},{"role":"assistant","content":"read"}])"
        )
    );
    ASSERT_EQ(read->res.status, 201) << read->res.body;
    for (int k = 1; k < 4; ++k)
        ASSERT_EQ(sync("POST", path, messages("messages", "[" + call_0_turn(k) + "]"))->res.status, 201);
    const auto compacted = sync("POST", "/v1/sessions/" + id + "/compact", "{}");
    ASSERT_EQ(compacted->res.status, 200) << compacted->res.body;
    const std::string summary(compacted->json().at("summary").as_string());
    EXPECT_EQ(summary.find(token), std::string::npos) << summary;
    EXPECT_NE(summary.find("notes/[REDACTED:github_token]"), std::string::npos) << summary;
    const auto text = file(id);
    const auto last = json::parse(text.substr(text.rfind('\n', text.size() - 2) + 1)).as_object();
    ASSERT_EQ(last.at("type"), "compaction");
    EXPECT_EQ(last.at("summary").as_string(), summary);
}

// In a session longer than off_thread_context_messages the pairing check runs on the body worker:
// it still refuses what can never pair, on /messages and on /entries, and accepts what pairs.
TEST_F(hostile_batches, a_long_context_is_checked_on_the_body_worker_with_the_same_answers)
{
    start();
    const auto id = new_session();
    const auto path = "/v1/sessions/" + id + "/messages?format=openai";
    std::string turns;
    for (int k = 0; k < 520; ++k)  // 4 messages a turn: 2,080 messages
        turns += (k ? "," : "") + call_0_turn(k);
    ASSERT_EQ(sync("POST", path, messages("messages", "[" + turns + "]"))->res.status, 201);
    const auto orphan = sync(
        "POST", path, messages("messages", R"([{"role":"tool","tool_call_id":"call_9","content":"x"}])")
    );
    ASSERT_EQ(orphan->res.status, 400) << orphan->res.body;
    EXPECT_EQ(orphan->json().at("error").at("code"), "unpaired_tool_call");
    EXPECT_EQ(orphan->json().at("error").at("field"), "messages[0].tool_call_id");
    const auto entry = sync(
        "POST",
        "/v1/sessions/" + id + "/entries",
        R"({"type":"message","message":{"role":"toolResult","toolCallId":"call_9","toolName":"bash","content":[{"type":"text","text":"x"}],"isError":false,"timestamp":1}})"
    );
    ASSERT_EQ(entry->res.status, 400) << entry->res.body;
    EXPECT_EQ(entry->json().at("error").at("field"), "message.toolCallId");
    EXPECT_EQ(sync("POST", path, messages("messages", "[" + call_0_turn(520) + "]"))->res.status, 201);
}
