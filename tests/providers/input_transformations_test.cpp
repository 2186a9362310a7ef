// input_transformations from OpenAI Responses and Anthropic Messages replies, whole and streamed, and their
// record on the converted assistant message.
#include <agentctx/providers/input_transformations.hpp>
#include <agentctx/providers/wire_input.hpp>

#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

using namespace agentctx;
using namespace agentctx::providers;
namespace json = boost::json;

namespace {

// A Responses reply as the API returns it (shortened): two replayed reasoning items withheld.
const char* responses_reply = R"({"id":"resp_1","object":"response","status":"completed","model":"gpt-5.5",
  "input_transformations":[
    {"id":"rs_a1","action":"removed","reason":"prefix_mismatch","type":"reasoning"},
    {"id":"rs_b2","action":"removed","reason":"turn_boundary","type":"reasoning"}],
  "output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Done."}]}],
  "usage":{"input_tokens":1200,"output_tokens":30}})";

// An Anthropic reply with the binding beta: one block dropped, one shown despite the check.
const char* anthropic_reply = R"({"id":"msg_1","type":"message","role":"assistant","model":"claude-opus-5",
  "content":[{"type":"text","text":"Done."}],"stop_reason":"end_turn",
  "input_transformations":[
    {"type":"thinking_dropped","reason":"prefix_binding_mismatch","path":"messages.3.content.0"},
    {"type":"thinking_mismatch_allowed","reason":"prefix_binding_mismatch","path":"messages.5.content.0"},
    {"type":"connector_rewritten","path":"messages.7.content.1"}],
  "usage":{"input_tokens":900,"output_tokens":12}})";

}  // namespace

TEST(input_transformations, a_responses_reply_names_each_removed_reasoning_item)
{
    diagnostics diag;
    const auto got =
        reply_input_transformations(input_format::responses, json::parse(responses_reply).as_object(), diag);
    ASSERT_TRUE(got) << diag.message;
    ASSERT_TRUE(got->has_value());
    const auto& t = **got;
    EXPECT_EQ(t.removed(), 2);
    EXPECT_EQ(t.allowed(), 0);
    ASSERT_EQ(t.items.size(), 2u);
    EXPECT_EQ(t.items[0].reason, "prefix_mismatch");
    EXPECT_EQ(t.items[0].where, "rs_a1");
    EXPECT_EQ(t.items[1].reason, "turn_boundary");
    EXPECT_EQ(
        to_json(t, input_format::responses),
        json::parse(
            R"({"removed":2,"allowed":0,"items":[{"action":"removed","reason":"prefix_mismatch","id":"rs_a1"},
                       {"action":"removed","reason":"turn_boundary","id":"rs_b2"}]})"
        )
    );
}

TEST(input_transformations, an_anthropic_reply_separates_dropped_from_allowed_and_skips_unknown_types)
{
    diagnostics diag;
    const auto got =
        reply_input_transformations(input_format::anthropic, json::parse(anthropic_reply).as_object(), diag);
    ASSERT_TRUE(got) << diag.message;
    ASSERT_TRUE(got->has_value());
    EXPECT_EQ((*got)->removed(), 1);
    EXPECT_EQ((*got)->allowed(), 1);
    ASSERT_EQ((*got)->items.size(), 2u);  // the unknown entry type is left out
    EXPECT_EQ((*got)->items[0].where, "messages.3.content.0");
    EXPECT_FALSE((*got)->items[1].removed);
}

TEST(input_transformations, a_reply_without_the_field_has_none_and_null_is_an_empty_list)
{
    diagnostics diag;
    auto none = reply_input_transformations(
        input_format::anthropic, json::parse(R"({"type":"message"})").as_object(), diag
    );
    ASSERT_TRUE(none);
    EXPECT_FALSE(none->has_value());
    auto empty = read_input_transformations(input_format::anthropic, json::value(nullptr), diag);
    ASSERT_TRUE(empty);
    EXPECT_TRUE(empty->items.empty());
}

TEST(input_transformations, malformed_entries_fail_with_their_path)
{
    diagnostics diag;
    auto bad = read_input_transformations(
        input_format::responses,
        json::parse(R"([{"id":"rs_1","action":"removed","reason":7,"type":"reasoning"}])"),
        diag
    );
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error(), make_error_code(errc::invalid_wire_message));
    EXPECT_EQ(diag.message.rfind("input_transformations[0].reason: ", 0), 0u) << diag.message;
    diagnostics d2;
    EXPECT_FALSE(read_input_transformations(input_format::anthropic, json::parse(R"({"type":"x"})"), d2));
    EXPECT_EQ(d2.message.rfind("input_transformations: expected an array", 0), 0u) << d2.message;
    diagnostics d3;
    EXPECT_FALSE(read_input_transformations(
        input_format::anthropic,
        json::parse(R"([{"type":"thinking_dropped","reason":"prefix_binding_mismatch"}])"),
        d3
    ));
    EXPECT_EQ(d3.message, "input_transformations[0].path: required field is missing");
    diagnostics d4;
    EXPECT_FALSE(read_input_transformations(input_format::openai, json::array{}, d4));
}

TEST(input_transformations, an_openai_stream_takes_the_list_of_its_latest_response_event)
{
    input_transformation_stream s(input_format::responses);
    diagnostics diag;
    const char* events[] = {
        R"({"type":"response.created","response":{"id":"resp_1","status":"in_progress","input_transformations":[]}})",
        R"({"type":"response.output_text.delta","delta":"Do"})",
        R"({"type":"response.completed","response":{"id":"resp_1","status":"completed",
            "input_transformations":[{"id":"rs_9","action":"removed","reason":"model_mismatch","type":"reasoning"}]}})"};
    for (const auto* e : events)
        ASSERT_TRUE(s.feed(json::parse(e).as_object(), diag)) << diag.message;
    ASSERT_TRUE(s.result());
    ASSERT_EQ(s.result()->items.size(), 1u);
    EXPECT_EQ(s.result()->items[0].reason, "model_mismatch");
}

TEST(input_transformations, an_anthropic_stream_reads_message_start_and_a_fallbacks_message_delta_replaces_it)
{
    const char* start =
        R"({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],
        "input_transformations":[{"type":"thinking_dropped","reason":"prefix_binding_mismatch","path":"messages.1.content.0"}],
        "usage":{"input_tokens":10,"output_tokens":1}}})";
    const char* plain_delta =
        R"({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":5}})";
    const char* fallback_delta =
        R"({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":5},
        "input_transformations":[{"type":"thinking_dropped","reason":"model_binding_mismatch","path":"messages.1.content.0"},
                                 {"type":"thinking_dropped","reason":"model_binding_mismatch","path":"messages.3.content.0"}]})";
    diagnostics diag;
    input_transformation_stream s(input_format::anthropic);
    ASSERT_TRUE(s.feed(json::parse(start).as_object(), diag));
    ASSERT_TRUE(s.feed(json::parse(plain_delta).as_object(), diag));
    ASSERT_TRUE(s.result());
    EXPECT_EQ(s.result()->removed(), 1);  // a delta without its own list keeps message_start's
    ASSERT_TRUE(s.feed(json::parse(fallback_delta).as_object(), diag));
    EXPECT_EQ(s.result()->removed(), 2);
    EXPECT_EQ(s.result()->items[0].reason, "model_binding_mismatch");
    input_transformation_stream silent(input_format::anthropic);
    ASSERT_TRUE(silent.feed(json::parse(plain_delta).as_object(), diag));
    EXPECT_FALSE(silent.result());
}

TEST(input_transformations, from_wire_messages_records_them_in_the_last_assistant_messages_usage)
{
    const auto reply = json::parse(responses_reply).as_object();
    wire_input_options opt;
    opt.usage = reply.at("usage");
    opt.input_transformations = reply.at("input_transformations");
    diagnostics diag;
    const auto out = from_wire_messages(input_format::responses, reply.at("output"), opt, diag);
    ASSERT_TRUE(out) << diag.message;
    ASSERT_EQ(out->size(), 1u);
    const auto& usage = (*out)[0].at("usage").as_object();
    EXPECT_EQ(usage.at("input"), 1200);
    EXPECT_EQ(usage.at("inputTransformations").as_object().at("removed"), 2);
    EXPECT_EQ(usage.at("inputTransformations").at("items").as_array().size(), 2u);

    opt.input_transformations = json::parse(R"([{"id":"rs_1","type":"reasoning"}])");
    diagnostics bad;
    EXPECT_FALSE(from_wire_messages(input_format::responses, reply.at("output"), opt, bad));
    EXPECT_EQ(bad.message, "input_transformations[0].action: required field is missing");
}
