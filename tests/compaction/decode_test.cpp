// Strict decoding of entries and messages: every role and block, and field-level errors.
#include <agentctx/compaction/entry.hpp>

#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

#include <set>

using namespace agentctx::compaction;

namespace {

result<entry> decode(std::string_view json, diagnostics& diag)
{
    return decode_entry(boost::json::parse(json).as_object(), diag);
}

}  // namespace

TEST(decode, assistant_with_every_block_and_usage)
{
    diagnostics diag;
    auto e = decode(
        R"({"type":"message","id":"a1","parentId":"u1","timestamp":"2026-01-15T09:00:01.000Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"t","thinkingSignature":"sig"},{"type":"text","text":"hi"},{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"a","offset":1}}],"api":"anthropic-messages","provider":"anthropic","model":"claude","usage":{"input":10,"output":5,"cacheRead":2,"cacheWrite":1,"totalTokens":18,"cost":{"input":0.5,"output":0.25,"cacheRead":0,"cacheWrite":0,"total":0.75}},"stopReason":"toolUse","timestamp":1768467601000}})",
        diag
    );
    ASSERT_TRUE(e) << diag.message;
    EXPECT_EQ(e->type, entry_type::message);
    EXPECT_EQ(e->parent_id, "u1");
    const message& m = *e->message;
    EXPECT_EQ(m.role, role::assistant);
    ASSERT_EQ(m.content.blocks.size(), 3u);
    EXPECT_EQ(std::get<thinking_block>(m.content.blocks[0]).thinking, "t");
    EXPECT_EQ(std::get<text_block>(m.content.blocks[1]).text, "hi");
    const auto& call = std::get<tool_call_block>(m.content.blocks[2]);
    EXPECT_EQ(call.name, "read");
    EXPECT_EQ(call.arguments.begin()->key(), "path");  // key order kept
    ASSERT_TRUE(m.usage);
    EXPECT_EQ(m.usage->total_tokens, 18);
    EXPECT_EQ(m.usage->cache_read, 2);
    EXPECT_DOUBLE_EQ(m.usage->cost.total, 0.75);
    EXPECT_EQ(m.stop_reason, stop_reason::tool_use);
    EXPECT_EQ(m.provider, "anthropic");
    EXPECT_DOUBLE_EQ(m.timestamp, 1768467601000.0);
}

TEST(decode, every_entry_type)
{
    diagnostics diag;
    auto c = decode(
        R"({"type":"compaction","id":"c","parentId":"x","timestamp":"t","summary":"s","firstKeptEntryId":"k","tokensBefore":218799,"details":{"readFiles":["a"],"modifiedFiles":[]},"fromHook":true})",
        diag
    );
    ASSERT_TRUE(c) << diag.message;
    EXPECT_EQ(c->first_kept_entry_id, "k");
    EXPECT_EQ(c->tokens_before, 218799);
    EXPECT_TRUE(c->from_hook);
    EXPECT_TRUE(c->details.is_object());

    auto b = decode(
        R"({"type":"branch_summary","id":"b","parentId":"x","timestamp":"t","fromId":"root","summary":""})",
        diag
    );
    ASSERT_TRUE(b);
    EXPECT_EQ(b->from_id, "root");

    auto cm = decode(
        R"({"type":"custom_message","customType":"note","content":[{"type":"text","text":"x"},{"type":"image","data":"AA","mimeType":"image/png"}],"display":true,"details":{"k":1},"id":"cm","parentId":null,"timestamp":"t"})",
        diag
    );
    ASSERT_TRUE(cm) << diag.message;
    EXPECT_FALSE(cm->parent_id);
    EXPECT_EQ(cm->content.blocks.size(), 2u);
    EXPECT_TRUE(cm->display);

    auto l = decode(
        R"({"type":"label","id":"l","parentId":"x","timestamp":"t","targetId":"x","label":"checkpoint"})",
        diag
    );
    ASSERT_TRUE(l);
    EXPECT_EQ(l->label, "checkpoint");
    auto si = decode(
        R"({"type":"session_info","id":"s","parentId":"x","timestamp":"t","name":"My session"})", diag
    );
    ASSERT_TRUE(si);
    EXPECT_EQ(si->name, "My session");
    auto mc = decode(
        R"({"type":"model_change","id":"m","parentId":null,"timestamp":"t","provider":"openai","modelId":"gpt-5"})",
        diag
    );
    ASSERT_TRUE(mc);
    EXPECT_EQ(mc->model_id, "gpt-5");
    auto tl = decode(
        R"({"type":"thinking_level_change","id":"t","parentId":null,"timestamp":"t","thinkingLevel":"high"})",
        diag
    );
    ASSERT_TRUE(tl);
    EXPECT_EQ(tl->thinking_level, "high");
    auto cu = decode(
        R"({"type":"custom","customType":"ext","data":{"any":[1,2]},"id":"cu","parentId":null,"timestamp":"t"})",
        diag
    );
    ASSERT_TRUE(cu);
    EXPECT_EQ(cu->custom_type, "ext");
    auto fut = decode(R"({"type":"hologram","id":"h","parentId":null,"timestamp":"t","beam":[1]})", diag);
    ASSERT_TRUE(fut);
    EXPECT_EQ(fut->type, entry_type::unknown);
    EXPECT_EQ(fut->type_name, "hologram");
}

TEST(decode, bash_execution_and_tool_result_fields)
{
    diagnostics diag;
    auto e = decode(
        R"({"type":"message","id":"b","parentId":null,"timestamp":"t","message":{"role":"bashExecution","command":"make","output":"boom","exitCode":2,"cancelled":false,"truncated":true,"fullOutputPath":"/tmp/o","timestamp":5,"excludeFromContext":true}})",
        diag
    );
    ASSERT_TRUE(e) << diag.message;
    EXPECT_EQ(e->message->role, role::bash_execution);
    EXPECT_EQ(e->message->exit_code, 2.0);
    EXPECT_TRUE(e->message->truncated);
    EXPECT_TRUE(e->message->exclude_from_context);
    EXPECT_EQ(e->message->full_output_path, "/tmp/o");
    auto t = decode(
        R"({"type":"message","id":"r","parentId":null,"timestamp":"t","message":{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"x"}],"isError":true,"timestamp":5}})",
        diag
    );
    ASSERT_TRUE(t);
    EXPECT_EQ(t->message->tool_call_id, "c1");
    EXPECT_TRUE(t->message->is_error);
}

TEST(decode, hook_message_role_in_a_v3_entry_stays_an_unknown_role)
{
    // Pi renames hookMessage to custom only when migrating a v1/v2 file (session_log test
    // v2_hook_messages_become_custom); in a v3 entry it is an unknown role: 0 tokens, not sent.
    diagnostics diag;
    auto e = decode(
        R"({"type":"message","id":"h","parentId":null,"timestamp":"t","message":{"role":"hookMessage","customType":"x","content":"hi","display":true,"timestamp":1}})",
        diag
    );
    ASSERT_TRUE(e);
    EXPECT_EQ(e->message->role, role::other);
    EXPECT_EQ(e->message->role_name, "hookMessage");
}

TEST(decode, null_usage_and_a_null_label_target_read_as_absent)
{
    diagnostics diag;
    auto a = decode(
        R"({"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"assistant","content":[],"usage":null,"stopReason":"stop"}})",
        diag
    );
    ASSERT_TRUE(a) << diag.message;
    EXPECT_FALSE(a->message->usage);
    auto l = decode(
        R"({"type":"label","id":"l","parentId":null,"timestamp":"t","targetId":null,"label":"x"})", diag
    );
    ASSERT_TRUE(l) << diag.message;
    EXPECT_TRUE(l->target_id.empty());
}

struct bad_field_case
{
    const char* json;
    errc code;
    const char* field;
};

class decode_bad_field : public ::testing::TestWithParam<bad_field_case>
{};

TEST_P(decode_bad_field, names_the_field)
{
    diagnostics diag;
    auto e = decode(GetParam().json, diag);
    ASSERT_FALSE(e);
    EXPECT_EQ(e.error(), make_error_code(GetParam().code));
    EXPECT_EQ(diag.field, GetParam().field);
    EXPECT_NE(diag.message.find(GetParam().field), std::string::npos) << diag.message;
}

INSTANTIATE_TEST_SUITE_P(
    fields,
    decode_bad_field,
    ::testing::Values(
        bad_field_case{
            R"({"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"assistant","content":"text"}})",
            errc::wrong_type,
            "message.content"},
        bad_field_case{
            R"({"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":[{"type":"text","text":5}]}})",
            errc::wrong_type,
            "message.content[0].text"},
        bad_field_case{
            R"({"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"custom","customType":"x"}})",
            errc::missing_field,
            "message.content"},
        bad_field_case{
            R"({"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":7,"content":"x"}})",
            errc::wrong_type,
            "message.role"},
        bad_field_case{
            R"({"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"assistant","content":[],"usage":{"input":"10"}}})",
            errc::wrong_type,
            "message.usage.input"},
        bad_field_case{
            R"({"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"read","arguments":[1]}]}})",
            errc::wrong_type,
            "message.content[0].arguments"},
        bad_field_case{
            R"({"type":"compaction","id":"a","parentId":null,"timestamp":"t","summary":"s","firstKeptEntryId":"k","tokensBefore":"many"})",
            errc::wrong_type,
            "tokensBefore"},
        bad_field_case{
            R"({"type":"compaction","id":"a","parentId":null,"timestamp":"t","summary":"s","tokensBefore":1})",
            errc::missing_field,
            "firstKeptEntryId"},
        bad_field_case{
            R"({"type":"label","id":"a","parentId":null,"timestamp":"t","targetId":false})",
            errc::wrong_type,
            "targetId"},
        bad_field_case{
            R"({"type":"message","id":"a","parentId":5,"timestamp":"t","message":{"role":"user","content":"x"}})",
            errc::wrong_type,
            "parentId"},
        bad_field_case{
            R"({"type":"message","id":"","parentId":null,"timestamp":"t","message":{"role":"user","content":"x"}})",
            errc::wrong_type,
            "id"}
    )
);

TEST(decode, header_versions)
{
    diagnostics diag;
    auto h = decode_header(
        boost::json::parse(R"({"type":"session","id":"s","timestamp":"t","cwd":"/"})").as_object(), diag
    );
    ASSERT_TRUE(h);
    EXPECT_EQ(h->version, 1);  // absent = v1
    auto future =
        decode_header(boost::json::parse(R"({"type":"session","version":4,"id":"s"})").as_object(), diag);
    ASSERT_FALSE(future);
    EXPECT_EQ(future.error(), make_error_code(errc::unsupported_version));
    auto notheader = decode_header(boost::json::parse(R"({"type":"message","id":"s"})").as_object(), diag);
    EXPECT_EQ(notheader.error(), make_error_code(errc::missing_header));
    // A version far outside int is "newer", not undefined behaviour (found by fuzz_entry_decode).
    auto huge = decode_header(
        boost::json::parse(R"({"type":"session","version":8888888888888888883,"id":"s"})").as_object(), diag
    );
    ASSERT_FALSE(huge);
    EXPECT_EQ(huge.error(), make_error_code(errc::unsupported_version));
    EXPECT_NE(diag.message.find("version 8888888888888889000 is newer"), std::string::npos) << diag.message;
    for (const char* bad :
         {R"({"type":"session","version":1.5,"id":"s"})",
          R"({"type":"session","version":0,"id":"s"})",
          R"({"type":"session","version":-1e300,"id":"s"})"})
    {
        auto r = decode_header(boost::json::parse(bad).as_object(), diag);
        ASSERT_FALSE(r) << bad;
        EXPECT_EQ(r.error(), make_error_code(errc::wrong_type)) << bad;
        EXPECT_EQ(diag.field, "version");
    }
}

TEST(decode, iso_timestamps_parse_like_date_parse)
{
    EXPECT_EQ(parse_iso_timestamp("2026-01-15T09:00:00.000Z"), 1768467600000.0);
    EXPECT_EQ(parse_iso_timestamp("2026-01-15T09:00:00.123Z"), 1768467600123.0);
    EXPECT_EQ(parse_iso_timestamp("1970-01-01T00:00:00Z"), 0.0);
    EXPECT_EQ(parse_iso_timestamp("2026-01-15T10:00:00.000+01:00"), 1768467600000.0);
    EXPECT_FALSE(parse_iso_timestamp("yesterday"));
    const auto now = iso_timestamp_now();
    ASSERT_EQ(now.size(), 24u);
    EXPECT_EQ(now.back(), 'Z');
    EXPECT_TRUE(parse_iso_timestamp(now));
}

TEST(decode, new_ids_are_8_lowercase_hex_and_unique)
{
    std::set<std::string> taken;
    for (int i = 0; i < 1000; ++i)
    {
        auto id = new_entry_id([&](const std::string& s) { return taken.count(s) > 0; });
        ASSERT_EQ(id.size(), 8u);
        EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos);
        EXPECT_TRUE(taken.insert(id).second);
    }
}
