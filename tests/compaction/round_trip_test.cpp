// Lossless round trip: parse -> serialize gives the same JSON (bytes, for Pi-written files).
#include <agentctx/compaction/json_text.hpp>
#include <agentctx/compaction/session_log.hpp>

#include "session_generator.hpp"

#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

using namespace agentctx::compaction;

namespace {

std::string read_file(const std::string& path)
{
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

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
    const auto text = read_file(AGENTCTX_FIXTURES_DIR "/pi_every_type.jsonl");
    ASSERT_FALSE(text.empty());
    EXPECT_EQ(reserialize(text), lines_of(text));
}

TEST(round_trip, unknown_fields_and_entry_types_survive)
{
    const auto text = read_file(AGENTCTX_FIXTURES_DIR "/pi_every_type.jsonl");
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
    const auto original = lines_of(read_file(AGENTCTX_FIXTURES_DIR "/pi_every_type.jsonl"));
    const auto text = read_file(AGENTCTX_FIXTURES_DIR "/pi_reformatted.jsonl");
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
    }
}

TEST(round_trip, doubles_survive_exactly)
{
    // Boost 1.81's parser rounds some doubles wrongly (0.0037199999999999998 -> 0.00372); the
    // loader converts number text itself so these come back bit for bit.
    const std::string text =
        R"({"type":"session","version":3,"id":"s","timestamp":"2026-01-15T09:00:00.000Z","cwd":"/"})" "\n"
        R"({"type":"custom","customType":"n","data":[0.0037199999999999998,0.30000000000000004,5e-324,1.7976931348623157e+308,0.013595999999999999,123456789.12345679,-0.5,1e+21],"id":"c","parentId":null,"timestamp":"2026-01-15T09:00:01.000Z"})" "\n";
    EXPECT_EQ(reserialize(text), lines_of(text));
}
