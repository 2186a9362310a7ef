// Lossless round trip: parse -> serialize gives the same JSON (bytes, for Pi-written files).
#include <agentctx/compaction/json_text.hpp>
#include <agentctx/compaction/session_log.hpp>

#include "file_text.hpp"
#include "session_generator.hpp"

#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

using namespace agentctx::compaction;

namespace {

std::vector<std::string> lines_of(const std::string& text)
{
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);)
        out.push_back(l);
    return out;
}

// Serializes the header and every entry of a loaded log, one line each.
std::vector<std::string> reserialize(const std::string& text)
{
    load_report report;
    diagnostics diag;
    auto log = session_log::load(text, {}, report, diag);
    EXPECT_TRUE(log) << diag.message;
    if (!log)
        return {};
    std::vector<std::string> out{stringify(log->header().raw)};
    for (std::size_t i = 0; i < log->size(); ++i)
    {
        auto e = log->get(i, diag);
        EXPECT_TRUE(e) << diag.message;
        if (e)
            out.push_back(stringify((*e)->raw));
    }
    return out;
}

}  // namespace

TEST(round_trip, pi_written_fixture_is_byte_identical)
{
    const auto text = agentctx::test::read_text(AGENTCTX_FIXTURES_DIR "/pi_every_type.jsonl");
    ASSERT_FALSE(text.empty());
    EXPECT_EQ(reserialize(text), lines_of(text));
}

TEST(round_trip, unknown_fields_and_entry_types_survive)
{
    const auto text = agentctx::test::read_text(AGENTCTX_FIXTURES_DIR "/pi_every_type.jsonl");
    load_report report;
    diagnostics diag;
    auto log = session_log::load(text, {}, report, diag);
    ASSERT_TRUE(log);
    const auto holo = log->find("a0000012");
    ASSERT_TRUE(holo);
    auto e = log->get(*holo, diag).value();
    EXPECT_EQ(e->type, entry_type::unknown);
    EXPECT_EQ(stringify(e->raw.at("frames")), R"([{"x":1e-7,"y":-3.5}])");
    auto a = log->get(*log->find("a0000009"), diag).value();
    EXPECT_EQ(stringify(a->raw.at("message").at("futureAssistantField")), R"({"nested":[1,2.5,null,true]})");
    auto r = log->get(*log->find("a0000005"), diag).value();
    EXPECT_TRUE(r->raw.at("message").as_object().contains("details"));
}

TEST(round_trip, reformatted_file_gives_equal_json_values)
{
    const auto original = lines_of(agentctx::test::read_text(AGENTCTX_FIXTURES_DIR "/pi_every_type.jsonl"));
    const auto text = agentctx::test::read_text(AGENTCTX_FIXTURES_DIR "/pi_reformatted.jsonl");
    const auto out = reserialize(text);
    const auto in = lines_of(text);
    ASSERT_EQ(out.size(), in.size());
    for (std::size_t i = 0; i < out.size(); ++i)
    {
        EXPECT_EQ(boost::json::parse(out[i]), boost::json::parse(in[i])) << "line " << i + 1;
        EXPECT_EQ(out[i], original[i]) << "line " << i + 1;  // and back in Pi's exact form
    }
}

TEST(round_trip, generated_sessions_are_byte_identical)
{
    for (std::uint64_t seed = 1; seed <= 5; ++seed)
    {
        const auto text = agentctx::tools::generate_session(
            {.seed = seed, .entries = 120, .image_rate = 0.1, .branch_rate = 0.05, .compaction_every = 6}
        );
        EXPECT_EQ(reserialize(text), lines_of(text)) << "seed " << seed;
        const auto pi16 = agentctx::tools::generate_session(
            {.seed = seed, .entries = 150, .image_rate = 0.1, .compaction_every = 5, .pi16 = true}
        );
        EXPECT_EQ(reserialize(pi16), lines_of(pi16)) << "pi16 seed " << seed;
    }
}

TEST(round_trip, doubles_survive_exactly)
{
    // Boost 1.81's parser rounds some doubles wrongly (0.0037199999999999998 -> 0.00372); the
    // loader converts number text itself so these come back bit for bit.
    const std::string text =
        R"({"type":"session","version":3,"id":"s","timestamp":"2026-01-15T09:00:00.000Z","cwd":"/"})"
        "\n"
        R"({"type":"custom","customType":"n","data":[0.0037199999999999998,0.30000000000000004,5e-324,1.7976931348623157e+308,0.013595999999999999,123456789.12345679,-0.5,1e+21],"id":"c","parentId":null,"timestamp":"2026-01-15T09:00:01.000Z"})"
        "\n";
    EXPECT_EQ(reserialize(text), lines_of(text));
}

TEST(round_trip, pi16_entries_and_fields_are_byte_identical)
{
    // Pi 1.6: usage, context_edit, system messages, compaction usage/systemMessage,
    // branch summary usage, thinkingLevel, durationMs, nestedCalls, retain-none compactions.
    const auto text = agentctx::test::read_text(AGENTCTX_FIXTURES_DIR "/pi16_every_type.jsonl");
    ASSERT_FALSE(text.empty());
    EXPECT_EQ(reserialize(text), lines_of(text));
}

TEST(round_trip, pi16_entries_decode_to_their_typed_views)
{
    const auto text = agentctx::test::read_text(AGENTCTX_FIXTURES_DIR "/pi16_every_type.jsonl");
    load_report report;
    diagnostics diag;
    auto log = session_log::load(text, {}, report, diag);
    ASSERT_TRUE(log) << diag.message;
    auto get = [&](std::string_view id) { return log->get(*log->find(id), diag).value(); };
    const auto sys = get("a0b1c2d3");
    EXPECT_EQ(sys->message->role, role::system);
    ASSERT_EQ(sys->message->sections.size(), 3u);
    EXPECT_EQ(sys->message->sections[1].name, "tools");
    ASSERT_TRUE(sys->message->tools_added);
    EXPECT_EQ(sys->message->tools_added->size(), 1u);
    const auto patch = get("d4e5f6a7");
    EXPECT_FALSE(patch->message->sections[1].value);  // "docs": null removes the section
    EXPECT_EQ(patch->message->tools_removed, (std::vector<std::string>{"write"}));
    const auto a = get("7c6b5a49");
    EXPECT_EQ(a->message->thinking_level, "medium");
    EXPECT_EQ(a->message->usage->cache_write_1h, 100);
    EXPECT_TRUE(a->message->usage->total_from_provider);
    const auto r = get("61f0e1d2");
    ASSERT_EQ(r->message->nested_calls.size(), 2u);
    EXPECT_TRUE(r->message->nested_calls[0].arguments);
    EXPECT_FALSE(r->message->nested_calls[1].arguments);  // over Pi's size limit
    const auto u = get("5b1e0c7a");
    EXPECT_EQ(u->type, entry_type::usage);
    EXPECT_EQ(u->usage_kind, "cache_warm");
    EXPECT_EQ(u->usage->cache_read, 48210);
    const auto omit = get("8d1c2b3a");
    EXPECT_EQ(omit->type, entry_type::context_edit);
    EXPECT_EQ(omit->target_id, "7c6b5a49");
    EXPECT_FALSE(omit->replacement);
    const auto replace = get("af3e4d5c");
    ASSERT_TRUE(replace->replacement);
    EXPECT_TRUE(replace->replacement->is_string);
    const auto c = get("c0ffee01");
    ASSERT_TRUE(c->system_message);
    EXPECT_EQ(c->system_message->role, role::system);
    EXPECT_EQ(c->usage->total_tokens, 43100);
    const auto bs = get("b7450698");
    EXPECT_EQ(bs->usage->output, 700);
    const auto none = get("d00d0001");
    EXPECT_EQ(none->first_kept_entry_id, none->id);  // retain-none
}
