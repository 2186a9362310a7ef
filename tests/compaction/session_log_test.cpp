// The session tree: leaf on load, paths, branching, appends, streaming loads, v1/v2 migration.
#include <agentctx/compaction/json_text.hpp>
#include <agentctx/compaction/projection.hpp>
#include <agentctx/compaction/session_log.hpp>

#include "session_generator.hpp"
#include "session_text.hpp"

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

using namespace agentctx::compaction;
using agentctx::test::session_text;

namespace {

std::vector<std::string> ids(const session_log& log, const std::vector<std::uint32_t>& path)
{
    std::vector<std::string> out;
    for (auto i : path)
        out.push_back(log.meta(i).id);
    return out;
}

}  // namespace

TEST(session_log, leaf_is_the_last_entry_in_file_order_not_the_deepest)
{
    session_text s;
    s.user("u1", "one").assistant("a1", "r1").user("u2", "two").assistant("a2", "r2");
    s.user("f1", "fork from u1", "a1");  // shallower than a2, but last in the file
    auto log = s.load();
    EXPECT_EQ(log.leaf_id(), "f1");
    EXPECT_EQ(ids(log, log.active_path()), (std::vector<std::string>{"u1", "a1", "f1"}));
}

TEST(session_log, branch_moves_the_leaf_and_rejects_unknown_ids)
{
    session_text s;
    s.user("u1", "one").assistant("a1", "r1").user("u2", "two");
    auto log = s.load();
    diagnostics diag;
    ASSERT_TRUE(log.branch("a1", diag));
    EXPECT_EQ(ids(log, log.active_path()), (std::vector<std::string>{"u1", "a1"}));
    auto bad = log.branch("nope", diag);
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error(), make_error_code(errc::entry_not_found));
    EXPECT_EQ(log.leaf_id(), "a1");
}

TEST(session_log, reset_leaf_empties_the_active_path_and_the_next_append_is_a_new_root)
{
    session_text s;
    s.user("u1", "one").assistant("a1", "r1");
    auto log = s.load();
    log.reset_leaf();
    EXPECT_FALSE(log.leaf().has_value());
    EXPECT_FALSE(log.leaf_id().has_value());
    EXPECT_TRUE(log.active_path().empty());
    diagnostics diag;
    auto root = std::make_shared<const entry>(
        make_message_entry(
            "u2", std::nullopt, "2026-01-15T09:00:09.000Z", {{"role", "user"}, {"content", "again"}}, diag
        )
            .value()
    );
    ASSERT_TRUE(log.append(root, diag)) << diag.message;
    EXPECT_EQ(ids(log, log.active_path()), (std::vector<std::string>{"u2"}));
    EXPECT_EQ(log.size(), 3u);
}

TEST(session_log, append_validates_ids_and_parents_and_moves_the_leaf)
{
    session_text s;
    s.user("u1", "one");
    auto log = s.load();
    diagnostics diag;
    auto make = [&](std::string id, std::optional<std::string> parent) {
        return std::make_shared<const entry>(
            make_message_entry(
                id, parent, "2026-01-15T09:00:09.000Z", {{"role", "user"}, {"content", "x"}}, diag
            )
                .value()
        );
    };
    ASSERT_TRUE(log.append(make("u2", "u1"), diag));
    EXPECT_EQ(log.leaf_id(), "u2");
    EXPECT_EQ(log.append(make("u2", "u1"), diag).error(), make_error_code(errc::duplicate_id));
    EXPECT_EQ(log.append(make("u3", "ghost"), diag).error(), make_error_code(errc::dangling_parent));
    EXPECT_EQ(log.size(), 2u);
    EXPECT_EQ(ids(log, log.active_path()), (std::vector<std::string>{"u1", "u2"}));
    const auto fresh = log.new_id();
    EXPECT_EQ(fresh.size(), 8u);
    EXPECT_FALSE(log.contains(fresh));
}

TEST(session_log, streaming_in_tiny_chunks_matches_a_whole_load)
{
    const std::string text =
        agentctx::tools::generate_session({.seed = 3, .entries = 150, .branch_rate = 0.1});
    load_report whole_report;
    diagnostics diag;
    auto whole = session_log::load(text, {}, whole_report, diag);
    ASSERT_TRUE(whole) << diag.message;
    for (std::size_t chunk : {1u, 7u, 4096u})
    {
        session_log_builder b;
        for (std::size_t i = 0; i < text.size(); i += chunk)
            ASSERT_TRUE(b.feed(std::string_view(text).substr(i, chunk)));
        load_report report;
        auto log = b.finish(std::make_shared<string_line_reader>(text), report, diag);
        ASSERT_TRUE(log) << diag.message;
        ASSERT_EQ(log->size(), whole->size());
        EXPECT_EQ(log->leaf_id(), whole->leaf_id());
        for (std::size_t i = 0; i < log->size(); ++i)
        {
            EXPECT_EQ(log->meta(i).offset, whole->meta(i).offset);
            EXPECT_EQ(log->meta(i).length, whole->meta(i).length);
            EXPECT_EQ(log->meta(i).parent, whole->meta(i).parent);
        }
        EXPECT_EQ(report.lines, whole_report.lines);
    }
}

TEST(session_log, materialized_entries_equal_their_lines)
{
    const std::string text = agentctx::tools::generate_session({.seed = 5, .entries = 80});
    load_report report;
    diagnostics diag;
    auto loaded = session_log::load(text, {}, report, diag);
    ASSERT_TRUE(loaded);
    std::size_t pos = text.find('\n') + 1;  // skip the header
    for (std::size_t i = 0; i < loaded->size(); ++i)
    {
        const std::size_t end = text.find('\n', pos);
        auto e = loaded->get(i, diag);
        ASSERT_TRUE(e) << diag.message;
        EXPECT_EQ(stringify((*e)->raw), text.substr(pos, end - pos)) << "entry " << i;
        pos = end + 1;
    }
}

TEST(session_log, torn_final_line_is_reported_not_fatal)
{
    session_text s;
    s.user("u1", "one").assistant("a1", "r1");
    const std::string text =
        s.text + R"({"type":"message","id":"u2","parentId":"a1","timestamp":"2026-01-15T09:00)";
    load_report report;
    diagnostics diag;
    auto log = session_log::load(text, {}, report, diag);
    ASSERT_TRUE(log) << diag.message;
    ASSERT_TRUE(report.torn);
    EXPECT_EQ(report.torn->line, 4u);
    EXPECT_EQ(report.torn->offset, s.text.size());
    EXPECT_EQ(report.torn->length, text.size() - s.text.size());
    EXPECT_EQ(log->leaf_id(), "a1");
}

TEST(session_log, complete_final_line_without_newline_is_kept)
{
    session_text s;
    s.user("u1", "one").assistant("a1", "r1");
    std::string text = s.text;
    text.pop_back();
    load_report report;
    diagnostics diag;
    auto log = session_log::load(text, {}, report, diag);
    ASSERT_TRUE(log);
    EXPECT_FALSE(report.torn);
    EXPECT_TRUE(report.missing_final_newline);
    EXPECT_EQ(log->leaf_id(), "a1");
}

TEST(session_log, blank_lines_are_skipped_and_counted)
{
    session_text s;
    s.user("u1", "one");
    s.raw("").raw("   ");
    s.assistant("a1", "r1");
    auto log = s.load();
    EXPECT_EQ(log.size(), 2u);
    EXPECT_EQ(log.meta(1).line, 5u);
}

TEST(session_log, v1_file_migrates_in_memory_with_stable_ids)
{
    // v1: no version, no ids, compactions point at an index (header = 0).
    const std::string text =
        R"({"type":"session","id":"old","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"})"
        "\n"
        R"({"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"first","timestamp":1}})"
        "\n"
        R"({"type":"message","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"a"}],"provider":"p","model":"m","stopReason":"stop","timestamp":2}})"
        "\n"
        R"({"type":"message","timestamp":"2025-01-01T00:00:03.000Z","message":{"role":"user","content":"second","timestamp":3}})"
        "\n"
        R"({"type":"compaction","timestamp":"2025-01-01T00:00:04.000Z","summary":"S","firstKeptEntryIndex":3,"tokensBefore":50})"
        "\n"
        R"({"type":"message","timestamp":"2025-01-01T00:00:05.000Z","message":{"role":"hookMessage","customType":"h","content":"hi","display":true,"timestamp":5}})"
        "\n";
    load_report report;
    diagnostics diag;
    auto log = session_log::load(text, {}, report, diag);
    ASSERT_TRUE(log) << diag.message;
    EXPECT_EQ(report.source_version, 1);
    EXPECT_EQ(log->source_version(), 1);
    ASSERT_EQ(log->size(), 5u);
    // A linear chain of fresh 8-hex ids.
    for (std::size_t i = 0; i < 5; ++i)
    {
        EXPECT_EQ(log->meta(i).id.size(), 8u);
        EXPECT_EQ(log->meta(i).parent, static_cast<std::int32_t>(i) - 1);
    }
    auto c = log->get(3, diag);
    ASSERT_TRUE(c) << diag.message;
    EXPECT_EQ((*c)->first_kept_entry_id, log->meta(2).id);  // index 3 = third entry
    EXPECT_FALSE((*c)->raw.contains("firstKeptEntryIndex"));
    auto h = log->get(4, diag);
    ASSERT_TRUE(h);
    EXPECT_EQ((*h)->raw.at("message").at("role"), "custom");
    auto ctx = build_session_context(*log, diag);
    ASSERT_TRUE(ctx);
    ASSERT_EQ(ctx->messages.size(), 3u);  // summary, kept "second", hook message
    EXPECT_EQ(ctx->messages[0].msg->role, role::compaction_summary);
    EXPECT_EQ(ctx->messages[1].entry_id, log->meta(2).id);
    EXPECT_EQ(ctx->messages[2].msg->role, role::custom);

    // Opening the same file again yields the same ids (Pi's migration draws random ones).
    load_report r2;
    auto again = session_log::load(text, {}, r2, diag);
    ASSERT_TRUE(again);
    for (std::size_t i = 0; i < 5; ++i)
        EXPECT_EQ(again->meta(i).id, log->meta(i).id);

    // Appending to an unmigrated log is refused.
    auto e = std::make_shared<const entry>(
        make_message_entry(
            "abcdef01", log->leaf_id(), "2025-01-01T00:00:06.000Z", {{"role", "user"}, {"content", "x"}}, diag
        )
            .value()
    );
    EXPECT_EQ(log->append(e, diag).error(), make_error_code(errc::migration_required));
}

TEST(session_log, v2_hook_messages_become_custom)
{
    session_text s(2);
    s.message("h1", {{"role", "hookMessage"}, {"customType", "x"}, {"content", "hello"}, {"display", true}});
    auto log = s.load();
    EXPECT_EQ(log.source_version(), 2);
    diagnostics diag;
    auto e = log.get(0, diag);
    ASSERT_TRUE(e);
    EXPECT_EQ((*e)->message->role, role::custom);
    EXPECT_EQ((*e)->raw.at("message").at("role"), "custom");
}

TEST(session_log, labels_follow_file_order_and_clear_when_empty)
{
    session_text s;
    s.user("u1", "one").assistant("a1", "r1");
    s.entry("label", "l1", {{"targetId", "u1"}, {"label", "start"}});
    s.entry("label", "l2", {{"targetId", "a1"}, {"label", "first"}});
    s.entry("label", "l3", {{"targetId", "a1"}, {"label", "answer"}});  // last wins
    s.entry("label", "l4", {{"targetId", "u1"}});                       // absent label clears
    auto log = s.load();
    EXPECT_FALSE(log.label_of("u1"));
    EXPECT_EQ(log.label_of("a1"), "answer");
    diagnostics diag;
    auto lab = std::make_shared<const entry>(decode_entry(
                                                 {{"type", "label"},
                                                  {"id", "l5"},
                                                  {"parentId", "l4"},
                                                  {"timestamp", "t"},
                                                  {"targetId", "u1"},
                                                  {"label", "again"}},
                                                 diag
    )
                                                 .value());
    ASSERT_TRUE(log.append(lab, diag));
    EXPECT_EQ(log.label_of("u1"), "again");
    auto bad = std::make_shared<const entry>(decode_entry(
                                                 {{"type", "label"},
                                                  {"id", "l6"},
                                                  {"parentId", "l5"},
                                                  {"timestamp", "t"},
                                                  {"targetId", "ghost"},
                                                  {"label", "x"}},
                                                 diag
    )
                                                 .value());
    EXPECT_EQ(
        log.append(bad, diag).error(), make_error_code(errc::entry_not_found)
    );  // as Pi's appendLabelChange
}

TEST(session_log, lone_surrogate_escapes_load_and_read_as_replacement_characters)
{
    // Pi's grep tool cut lines inside a surrogate pair and JSON.stringify wrote the halves as
    // escapes; Pi opens such files, so agentctx must too (it rejected the whole file before).
    session_text s;
    s.user("u1", "one");
    s.raw(
        R"({"type":"message","id":"u2","parentId":"u1","timestamp":"2026-01-15T09:00:05.000Z","message":{"role":"user","content":"cut \ud83d","timestamp":1}})"
    );
    s.raw(
        R"({"type":"message","id":"u3","parentId":"u2","timestamp":"2026-01-15T09:00:06.000Z","message":{"role":"user","content":"\udc00 \ud83d\u0041 \ud83d\ude80 \\ud83d","timestamp":2}})"
    );
    s.raw(
        R"({"type":"label","id":"l\ud800","parentId":"u3","timestamp":"2026-01-15T09:00:07.000Z","targetId":"u3","label":"x\udbff"})"
    );
    load_report report;
    diagnostics diag;
    auto log = session_log::load(s.text, {}, report, diag);
    ASSERT_TRUE(log) << diag.message;
    ASSERT_EQ(log->size(), 4u);
    auto u2 = log->get(1, diag);
    ASSERT_TRUE(u2) << diag.message;
    const std::string cut(u2.value()->raw.at("message").at("content").as_string());
    EXPECT_EQ(cut, "cut \xEF\xBF\xBD");
    EXPECT_EQ(utf16_length(cut), 5u);  // the lone unit counts once, as in JavaScript
    auto u3 = log->get(2, diag);
    ASSERT_TRUE(u3) << diag.message;
    EXPECT_EQ(
        std::string(u3.value()->raw.at("message").at("content").as_string()),
        "\xEF\xBF\xBD \xEF\xBF\xBD"
        "A \xF0\x9F\x9A\x80 \\ud83d"
    );
    // The index and the materialized entry agree on ids and labels.
    EXPECT_EQ(log->meta(3).id, "l\xEF\xBF\xBD");
    auto label = log->get(3, diag);
    ASSERT_TRUE(label) << diag.message;
    EXPECT_EQ(label.value()->id, log->meta(3).id);
    EXPECT_EQ(log->label_of("u3"), "x\xEF\xBF\xBD");
    // The header too.
    auto h = session_log::load(
        R"({"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/p\udfff"})"
        "\n",
        {},
        report,
        diag
    );
    ASSERT_TRUE(h) << diag.message;
    EXPECT_EQ(h->header().cwd, "/p\xEF\xBF\xBD");
}

TEST(session_log, javascript_whitespace_lines_and_a_leading_bom_are_skipped_with_notes)
{
    session_text s;
    s.user("u1", "one");
    s.raw("\xC2\xA0").raw("\xEF\xBB\xBF  ").raw("\xE2\x80\xA8\t\xE3\x80\x80").raw("").raw(" \r");
    s.assistant("a1", "r1");
    const std::string text = "\xEF\xBB\xBF" + s.text;  // a byte order mark before the header
    load_report report;
    diagnostics diag;
    auto log = session_log::load(text, {}, report, diag);
    ASSERT_TRUE(log) << diag.message;
    ASSERT_EQ(log->size(), 2u);
    EXPECT_EQ(log->meta(1).line, 8u);
    ASSERT_EQ(report.notes.size(), 4u);  // the BOM and three lines that only JavaScript calls blank
    EXPECT_EQ(report.notes[0].line, 1u);
    EXPECT_EQ(report.notes[1].line, 3u);
    EXPECT_EQ(report.notes[2].line, 4u);
    EXPECT_EQ(report.notes[3].line, 5u);
    EXPECT_TRUE(log->get(1, diag)) << diag.message;
    // A line with other text next to such whitespace is not blank, and JSON.parse refuses it too.
    session_text bad;
    bad.raw("\xC2\xA0{}");
    EXPECT_FALSE(session_log::load(bad.text, {}, report, diag));
}

TEST(session_log, a_repeated_key_indexes_as_the_last_one_as_the_entry_reads)
{
    // Found by fuzz_json_scanner: the index kept fields of an earlier "message" (or string) when
    // a later repeat of the key lacked them, so index-only stand-ins (and model tracking) could
    // disagree with the materialized entry, in which the last repeat wins, as in JSON.parse.
    session_text s;
    s.user("u1", "one");
    s.raw(
        R"({"type":"message","id":"a1","parentId":"u1","timestamp":"2026-01-15T09:00:05.000Z",)"
        R"("message":{"role":"assistant","content":[],"provider":"openai","model":"gpt-4o"},)"
        R"("message":{"role":"assistant","content":[{"type":"text","text":"r"}],"api":"x","stopReason":"stop"}})"
    );
    s.raw(
        R"({"type":"model_change","id":"m1","parentId":"a1","timestamp":"t","provider":"openai","modelId":"gpt-4o",)"
        R"("provider":"anthropic","modelId":"claude"})"
    );
    s.raw(
        R"({"type":"thinking_level_change","id":"t1","parentId":"m1","timestamp":"t","thinkingLevel":"high","thinkingLevel":null})"
    );
    load_report report;
    diagnostics diag;
    auto log = session_log::load(s.text, {}, report, diag);
    ASSERT_TRUE(log) << diag.message;
    ASSERT_EQ(log->size(), 4u);
    auto a1 = log->get(1, diag);
    ASSERT_TRUE(a1) << diag.message;
    EXPECT_EQ(a1.value()->message->provider, "");
    EXPECT_EQ(log->meta(1).provider, a1.value()->message->provider);
    EXPECT_EQ(log->meta(1).model, a1.value()->message->model);
    EXPECT_EQ(log->meta(2).provider, "anthropic");
    EXPECT_EQ(log->meta(2).model, "claude");
    EXPECT_EQ(log->meta(3).thinking_level, "");
}

namespace {

// How a test feeds the builder.
enum class feed_mode
{
    view,    // feed(std::string_view): the builder copies what its second thread scans
    owned,   // feed_owned(): the second thread scans the chunks in place
    source,  // feed_from(): the second thread also reads
};

// A byte_source over memory that serves at most `max_read` bytes per call (short reads put the
// chunk boundaries anywhere) and fails at `fail_at`, if set.
class memory_source final : public agentctx::compaction::byte_source
{
public:
    memory_source(const std::string& text, std::size_t max_read, std::uint64_t fail_at = UINT64_MAX)
        : text_(text), max_read_(max_read), fail_at_(fail_at)
    {}

    agentctx::compaction::result<std::size_t> read(std::uint64_t offset, char* into, std::size_t size)
        const override
    {
        if (offset >= fail_at_)
            return boost::system::error_code(EIO, boost::system::system_category());
        if (offset >= text_.size())
            return std::size_t{0};
        const std::size_t n = std::min({size, max_read_, text_.size() - static_cast<std::size_t>(offset)});
        std::memcpy(into, text_.data() + offset, n);
        return n;
    }

private:
    const std::string& text_;
    std::size_t max_read_;
    std::uint64_t fail_at_;
};

void feed_all(session_log_builder& b, const std::string& text, std::size_t chunk, feed_mode mode)
{
    if (mode == feed_mode::source)
    {
        // Reads of `chunk` bytes, each cut short to an odd size now and then.
        const memory_source src(text, chunk % 3 == 0 ? chunk : chunk - chunk / 7);
        ASSERT_TRUE(b.feed_from(src, chunk));
        return;
    }
    for (std::size_t i = 0; i < text.size(); i += chunk)
    {
        const std::string_view piece = std::string_view(text).substr(i, chunk);
        bool more = false;
        if (mode == feed_mode::view)
            more = b.feed(piece);
        else
        {
            std::string buffer = b.spare_buffer();
            buffer.assign(piece);
            more = b.feed_owned(std::move(buffer));
        }
        if (!more)
            break;
    }
}

// Everything a load produces that a caller can see, as text, to compare two loads.
std::string outcome_of(session_log_builder& b, const std::string& text)
{
    load_report report;
    diagnostics diag;
    auto log = b.finish(std::make_shared<string_line_reader>(text), report, diag);
    std::string out =
        "lines " + std::to_string(report.lines) + " torn " +
        (report.torn ? std::to_string(report.torn->line) + "@" + std::to_string(report.torn->offset) : "-") +
        " nl " + std::to_string(report.missing_final_newline) + "\n";
    for (const auto& n : report.skipped_lines)
        out += "skip " + std::to_string(static_cast<int>(n.code)) + " " + std::to_string(n.line) + " " +
               n.message + "\n";
    for (const auto& n : report.notes)
        out += "note " + std::to_string(n.line) + " " + n.message + "\n";
    if (!log)
        return out + "error " + log.error().message() + " line " + std::to_string(diag.line) + " field " +
               diag.field + " " + diag.message + "\n";
    for (std::size_t i = 0; i < log->size(); ++i)
    {
        const auto& m = log->meta(i);
        out += m.id + " " + std::to_string(m.line) + " " + std::to_string(m.offset) + " " +
               std::to_string(m.length) + " " + std::to_string(m.parent) + " " +
               std::to_string(static_cast<int>(m.type)) + " " + m.provider + " " + m.model + " " +
               m.first_kept_entry_id + " " + m.target_id + " " + m.label + "\n";
    }
    return out + "leaf " + log->leaf_id().value_or("-") + "\n";
}

std::string load_outcome(
    const std::string& text, const load_options& opts, std::size_t chunk, feed_mode mode = feed_mode::view
)
{
    session_log_builder b(opts);
    feed_all(b, text, chunk, mode);
    return outcome_of(b, text);
}

// Replaces line `n` (1-based) of `text`.
void set_line(std::string& text, std::size_t n, const std::string& line)
{
    std::size_t start = 0;
    for (std::size_t k = 1; k < n; ++k)
        start = text.find('\n', start) + 1;
    const std::size_t end = text.find('\n', start);
    text.replace(start, end - start, line);
}

}  // namespace

// Feeds of 128 KiB and more are scanned on two threads (the later half of each window on the
// second one); small feeds are scanned inline. Both must give the same log, report and errors,
// wherever bad lines fall.
TEST(session_log, a_large_feed_scanned_on_two_threads_loads_as_small_feeds_do)
{
    const std::string base =
        agentctx::tools::generate_session({.seed = 11, .entries = 3000, .compaction_every = 20});
    ASSERT_GT(base.size(), 3u * 1024 * 1024);  // more than one window
    const std::size_t lines = static_cast<std::size_t>(std::count(base.begin(), base.end(), '\n'));
    struct variant
    {
        std::vector<std::pair<double, std::string>> edits;  // (where in the file, 0..1; new line)
    };
    const std::vector<variant> variants = {
        {},
        {{{0.9, "{\"type\":\"message\",\"id\":\"x\" oops}"}}},
        {{{0.2, "not json"},
          {0.8, "{\"type\":\"message\",\"id\":\"y\",\"parentId\":null,\"m\":\"\xC3\x28\"}"}}},
        {{{0.3, "  "}, {0.55, "\xC2\xA0"}, {0.7, "[1,2]"}, {0.75, "{\"type\":7,\"id\":\"z\"}"}}},
        {{{0.45,
           "{\"type\":\"message\",\"id\":\"q\",\"parentId\":\"nowhere\",\"message\":{\"role\":\"user\"}}"},
          {0.95, "{\"type\":\"message\",\"id\":\"q\",\"parentId\":null,\"message\":{\"role\":\"user\"}}"}}},
        {{{0.6, std::string(70, '[') + std::string(70, ']')}, {0.61, "{\"a\":1e999999999}"}}},
        {{{0.99, "{\"type\":\"message\",\"id\":\"r\",\"message\":5}"},
          {0.05, "{\"type\":\"session\",\"id\":\"s\"}"}}},
    };
    for (std::size_t v = 0; v < variants.size(); ++v)
    {
        std::string text = base;
        for (const auto& [where, line] : variants[v].edits)
            set_line(text, 2 + static_cast<std::size_t>(where * static_cast<double>(lines - 2)), line);
        for (const bool tolerant : {false, true})
        {
            const load_options opts{.tolerant = tolerant};
            const std::string inline_scan = load_outcome(text, opts, 4096);
            for (const feed_mode mode : {feed_mode::view, feed_mode::owned, feed_mode::source})
                for (std::size_t chunk :
                     {std::size_t{1} << 20, std::size_t{200'000}, std::size_t{2} << 20, text.size()})
                    EXPECT_EQ(load_outcome(text, opts, chunk, mode), inline_scan)
                        << "variant " << v << " tolerant " << tolerant << " chunk " << chunk << " mode "
                        << static_cast<int>(mode);
        }
    }
    // A torn final line and one without its newline.
    for (const feed_mode mode : {feed_mode::view, feed_mode::owned, feed_mode::source})
    {
        std::string torn = base.substr(0, base.size() - 40);
        EXPECT_EQ(load_outcome(torn, {}, torn.size(), mode), load_outcome(torn, {}, 4096));
        EXPECT_EQ(load_outcome(torn, {}, 300'000, mode), load_outcome(torn, {}, 4096));
        std::string unterminated = base.substr(0, base.size() - 1);
        EXPECT_EQ(
            load_outcome(unterminated, {}, unterminated.size(), mode), load_outcome(unterminated, {}, 4096)
        );
        EXPECT_EQ(load_outcome(unterminated, {}, 300'000, mode), load_outcome(unterminated, {}, 4096));
    }
}

// Lines longer than a chunk (and over max_line_bytes) span several owned chunks or reads. A line
// over the limit is reported with its length only if it arrived in one feed, so each mode is
// compared with string_view feeds of the same size.
TEST(session_log, long_lines_across_owned_chunks_and_reads_load_as_string_view_feeds_do)
{
    std::string text =
        agentctx::tools::generate_session({.seed = 5, .entries = 1500, .compaction_every = 20});
    const std::size_t lines = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
    set_line(text, lines / 3, std::string(700'000, 'x'));
    set_line(
        text,
        lines / 2,
        "{\"type\":\"message\",\"id\":\"big\",\"parentId\":null,\"message\":{\"role\":\"user\",\"content\":"
        "\"" +
            std::string(400'000, 'y') + "\"}}"
    );
    for (const bool tolerant : {false, true})
        for (const std::size_t max_line : {std::size_t{64} << 20, std::size_t{500'000}})
        {
            const load_options opts{.max_line_bytes = max_line, .tolerant = tolerant};
            for (const std::size_t chunk :
                 {std::size_t{150'000}, std::size_t{1'048'575}})  // multiples of 3: whole reads
                for (const feed_mode mode : {feed_mode::owned, feed_mode::source})
                    EXPECT_EQ(load_outcome(text, opts, chunk, mode), load_outcome(text, opts, chunk))
                        << "tolerant " << tolerant << " max_line " << max_line << " chunk " << chunk
                        << " mode " << static_cast<int>(mode);
        }
}

// feed_from() returns the first read error and feeds nothing after it.
TEST(session_log, feed_from_stops_at_a_read_error)
{
    const std::string text = agentctx::tools::generate_session({.seed = 3, .entries = 800});
    ASSERT_GT(text.size(), 1u << 20);
    const memory_source src(text, 256 * 1024, 512 * 1024);
    session_log_builder b;
    const auto fed = b.feed_from(src, 256 * 1024);
    ASSERT_FALSE(fed);
    EXPECT_EQ(fed.error().value(), EIO);
    // What was read before the error loads as a file cut there would.
    EXPECT_EQ(outcome_of(b, text), load_outcome(text.substr(0, 512 * 1024), {}, 4096));
}

// Entries appended to a loaded log project exactly as the same lines loaded from a file: the
// packed path data (parents, kinds) that projection walks is kept up to date by append().
TEST(session_log, appended_entries_project_as_loaded_ones_do)
{
    std::string text =
        agentctx::tools::generate_session({.seed = 21, .entries = 400, .compaction_every = 6, .pi16 = true});
    // A thinking level change, a model change and an assistant message of another model at the end.
    const std::size_t last_line = text.rfind('\n', text.size() - 2) + 1;
    const std::string leaf(
        boost::json::parse(std::string_view(text).substr(last_line, text.size() - 1 - last_line))
            .as_object()
            .at("id")
            .as_string()
    );
    text += R"({"type":"thinking_level_change","id":"tl-1","parentId":")" + leaf +
            R"(","timestamp":"2026-01-15T10:00:00.000Z","thinkingLevel":"high"})"
            "\n";
    text +=
        R"({"type":"model_change","id":"mc-1","parentId":"tl-1","timestamp":"2026-01-15T10:00:01.000Z","provider":"openai","modelId":"gpt-5"})"
        "\n";
    text +=
        R"({"type":"message","id":"as-1","parentId":"mc-1","timestamp":"2026-01-15T10:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"provider":"anthropic","model":"claude-x","api":"anthropic-messages","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":1768471202000}})"
        "\n";
    std::vector<std::size_t> starts;  // of each line
    for (std::size_t i = 0; i < text.size(); i = text.find('\n', i) + 1)
        starts.push_back(i);
    // Load the first third, append the rest entry by entry.
    const std::size_t split = starts[starts.size() / 3];
    load_report report;
    diagnostics diag;
    auto log = session_log::load(text.substr(0, split), {}, report, diag);
    ASSERT_TRUE(log) << diag.message;
    std::size_t appended = 0;
    for (std::size_t i = split; i < text.size();)
    {
        const std::size_t nl = text.find('\n', i);
        auto e = decode_entry(boost::json::parse(std::string_view(text).substr(i, nl - i)).as_object(), diag);
        ASSERT_TRUE(e) << diag.message;
        ASSERT_TRUE(log->append(std::make_shared<const entry>(std::move(*e)), diag)) << diag.message;
        ++appended;
        i = nl + 1;
    }
    auto full = session_log::load(text, {}, report, diag);
    ASSERT_TRUE(full) << diag.message;
    const auto a = build_session_context(*log, diag);
    const auto b = build_session_context(*full, diag);
    ASSERT_TRUE(a && b);
    EXPECT_GT(appended, 200u);
    EXPECT_EQ(a->leaf_id, b->leaf_id);
    EXPECT_EQ(a->thinking_level, "high");
    EXPECT_EQ(b->thinking_level, "high");
    ASSERT_TRUE(a->model && b->model);
    EXPECT_EQ(a->model->provider + "/" + a->model->model_id, "anthropic/claude-x");
    EXPECT_EQ(b->model->provider + "/" + b->model->model_id, "anthropic/claude-x");
    EXPECT_EQ(a->last_edit_or_compaction, b->last_edit_or_compaction);
    ASSERT_EQ(a->messages.size(), b->messages.size());
    for (std::size_t i = 0; i < a->messages.size(); ++i)
        EXPECT_EQ(a->messages[i].entry_id, b->messages[i].entry_id) << i;
}
