// Every rejection of bad session input: its error code, line and field; tolerant mode.
#include <agentctx/compaction/session_log.hpp>

#include "session_text.hpp"

#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

using namespace agentctx::compaction;
using agentctx::test::session_text;

namespace {

struct failure
{
    errc code;
    diagnostics diag;
};

failure load_fails(const std::string& text, load_options opts = {})
{
    load_report report;
    diagnostics diag;
    auto log = session_log::load(text, opts, report, diag);
    EXPECT_FALSE(log.has_value());
    return {log ? errc{} : static_cast<errc>(log.error().value()), diag};
}

std::string good_prefix()
{
    session_text s;
    s.user("u1", "one").assistant("a1", "r1");
    return s.text;
}

}  // namespace

TEST(bad_input, invalid_json_names_the_line)
{
    const auto f = load_fails(
        good_prefix() + "{\"type\":\"message\",\"id\":\n" +
        R"({"type":"label","id":"l","parentId":"a1","timestamp":"t","targetId":"a1"})"
        "\n"
    );
    EXPECT_EQ(f.code, errc::invalid_json);
    EXPECT_EQ(f.diag.line, 4u);
    EXPECT_NE(f.diag.message.find("line 4"), std::string::npos) << f.diag.message;
}

TEST(bad_input, invalid_utf8)
{
    const auto f = load_fails(
        good_prefix() + "{\"type\":\"label\",\"id\":\"l\",\"parentId\":\"a1\",\"timestamp\":\"t\","
                        "\"targetId\":\"a1\",\"label\":\"\xff\xfe\"}\n"
    );
    EXPECT_EQ(f.code, errc::invalid_utf8);
    EXPECT_EQ(f.diag.line, 4u);
}

TEST(bad_input, wrong_field_types)
{
    auto f = load_fails(
        good_prefix() + R"({"type":7,"id":"x","parentId":"a1","timestamp":"t"})"
                        "\n"
    );
    EXPECT_EQ(f.code, errc::wrong_type);
    EXPECT_EQ(f.diag.field, "type");
    f = load_fails(
        good_prefix() +
        R"({"type":"message","id":"x","parentId":["a1"],"timestamp":"t","message":{"role":"user","content":"x"}})"
        "\n"
    );
    EXPECT_EQ(f.code, errc::wrong_type);
    EXPECT_EQ(f.diag.field, "parentId");
    EXPECT_EQ(f.diag.line, 4u);
    f = load_fails(
        good_prefix() + R"({"type":"message","id":"x","parentId":"a1","timestamp":"t","message":"hello"})"
                        "\n"
    );
    EXPECT_EQ(f.code, errc::wrong_type);
    EXPECT_EQ(f.diag.field, "message");
    f = load_fails(
        good_prefix() +
        R"({"type":"message","id":5,"parentId":"a1","timestamp":"t","message":{"role":"user","content":"x"}})"
        "\n"
    );
    EXPECT_EQ(f.code, errc::wrong_type);
    EXPECT_EQ(f.diag.field, "id");
    f = load_fails(
        good_prefix() + R"(["not","an","object"])"
                        "\n"
    );
    EXPECT_EQ(f.code, errc::wrong_type);
}

TEST(bad_input, wrong_types_deep_in_a_message_fail_on_materialization_with_line_and_field)
{
    session_text s;
    s.user("u1", "one");
    s.message(
        "a1",
        {{"role", "assistant"},
         {"content", boost::json::array{boost::json::object{{"type", "text"}, {"text", 42}}}}}
    );
    auto log = s.load();  // the index pass checks only what the tree needs
    diagnostics diag;
    auto e = log.get(1, diag);
    ASSERT_FALSE(e);
    EXPECT_EQ(e.error(), make_error_code(errc::wrong_type));
    EXPECT_EQ(diag.line, 3u);
    EXPECT_EQ(diag.field, "message.content[0].text");
    EXPECT_NE(diag.message.find("line 3"), std::string::npos);
}

TEST(bad_input, duplicate_ids)
{
    const auto f = load_fails(
        good_prefix() + R"({"type":"label","id":"u1","parentId":"a1","timestamp":"t","targetId":"a1"})"
                        "\n"
    );
    EXPECT_EQ(f.code, errc::duplicate_id);
    EXPECT_EQ(f.diag.line, 4u);
    EXPECT_NE(f.diag.message.find("first used on line 2"), std::string::npos) << f.diag.message;
}

TEST(bad_input, parent_pointing_nowhere)
{
    const auto f = load_fails(
        good_prefix() + R"({"type":"label","id":"l","parentId":"ghost","timestamp":"t","targetId":"a1"})"
                        "\n"
    );
    EXPECT_EQ(f.code, errc::dangling_parent);
    EXPECT_EQ(f.diag.field, "parentId");
    EXPECT_EQ(f.diag.line, 4u);
}

TEST(bad_input, parent_cycle)
{
    session_text s;
    s.user("u1", "one", "c2");  // u1 -> c2 -> u1
    s.assistant("c2", "r", 0, "stop", "u1");
    const auto f = load_fails(s.text);
    EXPECT_EQ(f.code, errc::parent_cycle);
}

TEST(bad_input, self_parent_is_a_cycle)
{
    session_text s;
    s.user("u1", "one", "u1");
    EXPECT_EQ(load_fails(s.text).code, errc::parent_cycle);
}

TEST(bad_input, line_over_the_size_limit)
{
    session_text s;
    s.user("u1", std::string(5000, 'x'));
    auto f = load_fails(s.text, {.max_line_bytes = 1000});
    EXPECT_EQ(f.code, errc::line_too_long);
    EXPECT_EQ(f.diag.line, 2u);
    // The same limit holds when the line arrives in pieces (streaming).
    session_log_builder b({.max_line_bytes = 1000});
    for (std::size_t i = 0; i < s.text.size(); i += 100)
        b.feed(std::string_view(s.text).substr(i, 100));
    load_report report;
    diagnostics diag;
    auto log = b.finish(std::make_shared<string_line_reader>(s.text), report, diag);
    ASSERT_FALSE(log);
    EXPECT_EQ(log.error(), make_error_code(errc::line_too_long));
    EXPECT_EQ(diag.line, 2u);
}

TEST(bad_input, nesting_deeper_than_the_limit)
{
    std::string deep = "1";
    for (int i = 0; i < 40; ++i)
        deep = "[" + deep + "]";
    const auto f = load_fails(
        good_prefix() + R"({"type":"custom","customType":"x","data":)" + deep +
            R"(,"id":"c","parentId":"a1","timestamp":"t"})"
            "\n",
        {.max_depth = 32}
    );
    EXPECT_EQ(f.code, errc::nesting_too_deep);
    EXPECT_EQ(f.diag.line, 4u);
}

TEST(bad_input, empty_file)
{
    EXPECT_EQ(load_fails("").code, errc::empty_file);
    EXPECT_EQ(load_fails("\n  \n").code, errc::empty_file);
}

TEST(bad_input, first_line_not_a_session_header)
{
    auto f = load_fails(
        R"({"type":"message","id":"u1","parentId":null,"timestamp":"t","message":{"role":"user","content":"x"}})"
        "\n"
    );
    EXPECT_EQ(f.code, errc::missing_header);
    EXPECT_EQ(f.diag.line, 1u);
    EXPECT_EQ(
        load_fails(R"({"type":"session","version":3})"
                   "\n")
            .code,
        errc::missing_header
    );  // no id
    EXPECT_EQ(load_fails("not json\n").code, errc::invalid_json);
}

TEST(bad_input, unknown_future_major_version)
{
    auto f = load_fails(R"({"type":"session","version":4,"id":"s","timestamp":"t","cwd":"/"})"
                        "\n");
    EXPECT_EQ(f.code, errc::unsupported_version);
    EXPECT_NE(f.diag.message.find("version 4"), std::string::npos);
}

TEST(bad_input, tolerant_mode_skips_and_reports_each_corrupt_line)
{
    std::string text = good_prefix();
    text += "garbage\n";
    text += R"({"type":"label","id":"u1","parentId":"a1","timestamp":"t","targetId":"a1"})"
            "\n";  // duplicate
    text +=
        R"({"type":"message","id":"u2","parentId":"a1","timestamp":"t","message":{"role":"user","content":"ok"}})"
        "\n";
    text += R"({"type":"label","id":"l2","parentId":"ghost","timestamp":"t","targetId":"a1"})"
            "\n";  // dangling
    load_report report;
    diagnostics diag;
    auto log = session_log::load(text, {.tolerant = true}, report, diag);
    ASSERT_TRUE(log) << diag.message;
    ASSERT_EQ(report.skipped_lines.size(), 3u);
    EXPECT_EQ(report.skipped_lines[0].code, errc::invalid_json);
    EXPECT_EQ(report.skipped_lines[0].line, 4u);
    EXPECT_EQ(report.skipped_lines[1].code, errc::duplicate_id);
    EXPECT_EQ(report.skipped_lines[1].line, 5u);
    EXPECT_EQ(report.skipped_lines[2].code, errc::dangling_parent);
    EXPECT_EQ(log->size(), 4u);  // u1 a1 u2 l2(as a root)
    EXPECT_EQ(log->leaf_id(), "l2");
}

namespace {

std::string custom_line(const std::string& number)
{
    return R"({"type":"custom","customType":"n","id":"c","parentId":"a1","timestamp":"t","data":)" + number +
           "}\n";
}

}  // namespace

TEST(bad_input, numbers_boost_json_cannot_represent_fail_at_load_naming_the_line)
{
    // They used to pass the indexer and fail only at materialization ("the line changed on disk").
    for (const char* n :
         {"1e99999999999",
          "-1e-99999999999",
          "1e2147483648",
          "1.5e99999999999999999999",
          "[0,1E+4294967296]"})
    {
        const auto f = load_fails(good_prefix() + custom_line(n));
        EXPECT_EQ(f.code, errc::invalid_json) << n;
        EXPECT_EQ(f.diag.line, 4u) << n;
        EXPECT_NE(f.diag.message.find("line 4"), std::string::npos) << f.diag.message;
    }
}

TEST(bad_input, the_indexer_accepts_exactly_the_numbers_boost_json_reads)
{
    const std::string many_digits(400, '7');
    for (const std::string& n : std::vector<std::string>{
             "1e2147483647",
             "1e-2147483647",
             "1e2147483646",
             "1e400",
             "1e-400",
             "0.5e2147483647",
             "0.5e-2147483647",
             "5e-2147483648",
             "1e0000000000000002",
             many_digits + "e2147483647",
             many_digits + "e2147483000",
             "0." + many_digits + "e-2147483647",
             "0." + many_digits + "e-2147483000",
             "1" + many_digits + ".5e-2147483647",
             "-0e99999999",
             "123456789e-999999999"})
    {
        boost::system::error_code ec;
        boost::json::parse(n, ec);
        load_report report;
        diagnostics diag;
        auto log = session_log::load(good_prefix() + custom_line(n), {}, report, diag);
        const bool read = log && log->get(2, diag);
        EXPECT_EQ(read, !ec) << n << ": " << diag.message << " / " << ec.message();
    }
}
