// jsonl_store: append-only lines, locking, torn-tail repair, failures that change nothing, migrate.
#include <agentctx/compaction/projection.hpp>
#include <agentctx/runtime/error.hpp>
#include <agentctx/runtime/jsonl_store.hpp>

#include "file_text.hpp"
#include "session_generator.hpp"
#include "session_text.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace agentctx;
using namespace agentctx::runtime;
using compaction::diagnostics;
using compaction::load_report;
namespace fs = std::filesystem;

namespace {

class jsonl_store_test : public ::testing::Test
{
protected:
    void SetUp() override
    {
        dir_ = fs::temp_directory_path() / ("agentctx-store-" + std::to_string(::getpid()) + "-" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }

    fs::path file(const std::string& name, const std::string& content)
    {
        const auto p = dir_ / name;
        std::ofstream(p, std::ios::binary) << content;
        return p;
    }

    static std::shared_ptr<const compaction::entry> user_entry(
        const std::string& id, std::optional<std::string> parent, const std::string& text
    )
    {
        diagnostics diag;
        return std::make_shared<const compaction::entry>(
            compaction::make_message_entry(
                id,
                std::move(parent),
                "2026-01-15T10:00:00.000Z",
                {{"role", "user"}, {"content", text}, {"timestamp", 1}},
                diag
            )
                .value()
        );
    }

    fs::path dir_;
};

}  // namespace

TEST_F(jsonl_store_test, create_append_and_reopen_identically)
{
    const auto path = dir_ / "s.jsonl";
    diagnostics diag;
    auto header = compaction::make_header("sess", "2026-01-15T09:00:00.000Z", "/p");
    {
        auto store = jsonl_store::create(path, header, {.fsync = fsync_policy::always}, diag);
        ASSERT_TRUE(store) << diag.message;
        ASSERT_TRUE((*store)->append(*user_entry("u1", std::nullopt, "hello"), diag));
        ASSERT_TRUE((*store)->append(*user_entry("u2", "u1", "again"), diag));
    }
    EXPECT_EQ(
        agentctx::test::read_text(path),
        R"({"type":"session","version":3,"id":"sess","timestamp":"2026-01-15T09:00:00.000Z","cwd":"/p"})"
        "\n"
        R"({"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-15T10:00:00.000Z","message":{"role":"user","content":"hello","timestamp":1}})"
        "\n"
        R"({"type":"message","id":"u2","parentId":"u1","timestamp":"2026-01-15T10:00:00.000Z","message":{"role":"user","content":"again","timestamp":1}})"
        "\n"
    );
    auto store = jsonl_store::open(path, {}, diag);
    ASSERT_TRUE(store);
    load_report report;
    auto log = (*store)->load({}, report, diag);
    ASSERT_TRUE(log);
    EXPECT_EQ(log->leaf_id(), "u2");
    EXPECT_EQ(jsonl_store::create(path, header, {}, diag).error(), make_error_code(errc::already_exists));
}

TEST_F(jsonl_store_test, a_second_writer_gets_session_locked_readers_do_not)
{
    test::session_text s;
    s.user("u1", "one");
    const auto path = file("s.jsonl", s.text);
    diagnostics diag;
    auto first = jsonl_store::open(path, {}, diag);
    ASSERT_TRUE(first);
    auto second = jsonl_store::open(path, {}, diag);
    ASSERT_FALSE(second);
    EXPECT_EQ(second.error(), make_error_code(errc::session_locked));
    EXPECT_NE(diag.message.find("locked"), std::string::npos);
    auto reader = jsonl_store::open(path, {.read_only = true}, diag);
    ASSERT_TRUE(reader);
    EXPECT_EQ(
        (*reader)->append(*user_entry("u2", "u1", "x"), diag).error(), make_error_code(errc::read_only)
    );
    first->reset();  // closing releases the lock
    EXPECT_TRUE(jsonl_store::open(path, {}, diag));
    EXPECT_EQ(agentctx::test::read_text(path), s.text);
}

TEST_F(jsonl_store_test, torn_final_line_is_reported_then_repaired_by_the_next_append)
{
    test::session_text s;
    s.user("u1", "one").assistant("a1", "r1");
    const std::string torn = R"({"type":"message","id":"u2","parentId":"a1","timest)";
    const auto path = file("s.jsonl", s.text + torn);
    diagnostics diag;
    auto store = jsonl_store::open(path, {}, diag);
    ASSERT_TRUE(store);
    load_report report;
    auto log = (*store)->load({}, report, diag);
    ASSERT_TRUE(log) << diag.message;
    ASSERT_TRUE(report.torn);
    EXPECT_EQ(report.torn->line, 4u);
    EXPECT_EQ(agentctx::test::read_text(path), s.text + torn);  // loading changed nothing

    ASSERT_TRUE((*store)->append(*user_entry("u3", "a1", "after the crash"), diag)) << diag.message;
    const std::string after = agentctx::test::read_text(path);
    EXPECT_EQ(after.substr(0, s.text.size()), s.text);
    EXPECT_EQ(after.find(torn), std::string::npos);
    EXPECT_EQ(agentctx::test::read_text(path.string() + ".torn"), torn + "\n");  // the fragment is kept aside

    load_report r2;
    auto again = jsonl_store::open(path, {.read_only = true}, diag);
    auto log2 = (*again)->load({}, r2, diag);
    ASSERT_TRUE(log2) << diag.message;
    EXPECT_FALSE(r2.torn);
    EXPECT_EQ(log2->leaf_id(), "u3");
}

TEST_F(jsonl_store_test, missing_final_newline_is_added_before_the_next_line)
{
    test::session_text s;
    s.user("u1", "one");
    std::string text = s.text;
    text.pop_back();
    const auto path = file("s.jsonl", text);
    diagnostics diag;
    auto store = jsonl_store::open(path, {}, diag);
    load_report report;
    ASSERT_TRUE((*store)->load({}, report, diag));
    EXPECT_TRUE(report.missing_final_newline);
    ASSERT_TRUE((*store)->append(*user_entry("u2", "u1", "two"), diag));
    load_report r2;
    auto log = (*store)->load({}, r2, diag);
    ASSERT_TRUE(log) << diag.message;
    EXPECT_EQ(log->size(), 2u);
    EXPECT_EQ(agentctx::test::read_text(path).substr(0, s.text.size()), s.text);
}

TEST_F(jsonl_store_test, lone_surrogate_lines_keep_their_bytes_when_appended_to)
{
    test::session_text s;
    s.user("u1", "one");
    s.raw(
        R"({"type":"message","id":"u2","parentId":"u1","timestamp":"2026-01-15T09:00:05.000Z","message":{"role":"user","content":"cut \ud83d","timestamp":1}})"
    );
    const auto path = file("s.jsonl", s.text);
    diagnostics diag;
    auto store = jsonl_store::open(path, {}, diag);
    load_report report;
    auto log = (*store)->load({}, report, diag);
    ASSERT_TRUE(log) << diag.message;
    ASSERT_TRUE(log->get(1, diag)) << diag.message;
    ASSERT_TRUE((*store)->append(*user_entry("u3", "u2", "after"), diag)) << diag.message;
    const auto after = agentctx::test::read_text(path);
    EXPECT_EQ(after.substr(0, s.text.size()), s.text);  // byte for byte, escapes included
    load_report r2;
    auto again = (*store)->load({}, r2, diag);
    ASSERT_TRUE(again) << diag.message;
    EXPECT_EQ(again->size(), 3u);
}

TEST_F(jsonl_store_test, an_unterminated_whitespace_tail_gets_its_newline_before_the_next_line)
{
    // "\u00a0" + the next line would not be JSON for Pi (nor for us): the tail must stay its own line.
    test::session_text s;
    s.user("u1", "one");
    const std::string text = s.text + "\xC2\xA0";
    const auto path = file("s.jsonl", text);
    diagnostics diag;
    auto store = jsonl_store::open(path, {}, diag);
    load_report report;
    ASSERT_TRUE((*store)->load({}, report, diag)) << diag.message;
    EXPECT_TRUE(report.missing_final_newline);
    ASSERT_TRUE((*store)->append(*user_entry("u2", "u1", "two"), diag));
    EXPECT_EQ(agentctx::test::read_text(path).substr(0, text.size() + 1), text + "\n");
    load_report r2;
    auto log = (*store)->load({}, r2, diag);
    ASSERT_TRUE(log) << diag.message;
    EXPECT_EQ(log->size(), 2u);
}

namespace {

struct bad_file
{
    const char* name;
    std::string content;
    compaction::errc code;
};

std::string header_line()
{
    return R"({"type":"session","version":3,"id":"s","timestamp":"2026-01-15T09:00:00.000Z","cwd":"/"})"
           "\n";
}

std::string user_line(const char* id, const char* parent)
{
    return std::string(R"({"type":"message","id":")") + id + R"(","parentId":)" +
           (parent ? std::string("\"") + parent + "\"" : std::string("null")) +
           R"(,"timestamp":"2026-01-15T09:00:01.000Z","message":{"role":"user","content":"x","timestamp":1}})"
           "\n";
}

}  // namespace

TEST_F(jsonl_store_test, every_bad_input_fails_with_its_code_and_leaves_the_file_unchanged)
{
    std::string deep = "1";
    for (int i = 0; i < 80; ++i)
        deep = "[" + deep + "]";
    const std::vector<bad_file> cases{
        {"invalid_json",
         header_line() + user_line("u1", nullptr) + "{oops\n" + user_line("u2", "u1"),
         compaction::errc::invalid_json},
        {"invalid_utf8",
         header_line() + "{\"type\":\"label\",\"id\":\"l\",\"parentId\":null,\"timestamp\":\"t\","
                         "\"targetId\":\"\xc3\x28\"}\n",
         compaction::errc::invalid_utf8},
        {"wrong_type",
         header_line() + R"({"type":"message","id":"u1","parentId":3,"timestamp":"t","message":{}})"
                         "\n",
         compaction::errc::wrong_type},
        {"duplicate_id",
         header_line() + user_line("u1", nullptr) + user_line("u1", nullptr),
         compaction::errc::duplicate_id},
        {"dangling_parent", header_line() + user_line("u1", "nowhere"), compaction::errc::dangling_parent},
        {"parent_cycle",
         header_line() + user_line("u1", "u2") + user_line("u2", "u1"),
         compaction::errc::parent_cycle},
        {"line_too_long",
         header_line() + user_line("u1", nullptr) + R"({"type":"custom","customType":"x","data":")" +
             std::string(300000, 'y') +
             R"(","id":"c","parentId":"u1","timestamp":"t"})"
             "\n",
         compaction::errc::line_too_long},
        {"nesting_too_deep",
         header_line() + R"({"type":"custom","customType":"x","data":)" + deep +
             R"(,"id":"c","parentId":null,"timestamp":"t"})"
             "\n",
         compaction::errc::nesting_too_deep},
        {"empty_file", "", compaction::errc::empty_file},
        {"no_header", user_line("u1", nullptr), compaction::errc::missing_header},
        {"future_version",
         R"({"type":"session","version":9,"id":"s","timestamp":"t","cwd":"/"})"
         "\n" +
             user_line("u1", nullptr),
         compaction::errc::unsupported_version},
    };
    for (const auto& c : cases)
    {
        SCOPED_TRACE(c.name);
        const auto path = file(std::string(c.name) + ".jsonl", c.content);
        diagnostics diag;
        auto store = jsonl_store::open(path, {}, diag);  // writable: a failed load must not write either
        ASSERT_TRUE(store);
        load_report report;
        auto log = (*store)->load({.max_line_bytes = 100000}, report, diag);
        ASSERT_FALSE(log);
        EXPECT_EQ(log.error(), compaction::make_error_code(c.code)) << diag.message;
        EXPECT_FALSE(diag.message.empty());
        store->reset();
        EXPECT_EQ(agentctx::test::read_text(path), c.content);
        EXPECT_FALSE(fs::exists(path.string() + ".torn"));
    }
}

TEST_F(jsonl_store_test, missing_file_is_not_found)
{
    diagnostics diag;
    auto s = jsonl_store::open(dir_ / "absent.jsonl", {}, diag);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error(), make_error_code(errc::not_found));
    EXPECT_FALSE(fs::exists(dir_ / "absent.jsonl"));  // Pi would create it; we do not
}

TEST_F(jsonl_store_test, lazily_read_entries_come_from_the_file)
{
    const auto text = tools::generate_session({.seed = 11, .entries = 200, .compaction_every = 8});
    const auto path = file("g.jsonl", text);
    diagnostics diag;
    auto store = jsonl_store::open(path, {.read_only = true}, diag);
    load_report report;
    auto from_file = (*store)->load({}, report, diag);
    ASSERT_TRUE(from_file);
    auto from_memory = compaction::session_log::load(text, {}, report, diag);
    ASSERT_TRUE(from_memory);
    auto a = compaction::build_session_context(*from_file, diag);
    auto b = compaction::build_session_context(*from_memory, diag);
    ASSERT_TRUE(a && b);
    ASSERT_EQ(a->messages.size(), b->messages.size());
    for (std::size_t i = 0; i < a->messages.size(); ++i)
        EXPECT_EQ(a->messages[i].entry_id, b->messages[i].entry_id);
}

TEST_F(jsonl_store_test, a_store_holds_one_descriptor_and_its_lock_ends_with_it_while_its_log_still_reads)
{
    const auto text = tools::generate_session({.seed = 12, .entries = 100, .compaction_every = 0});
    const auto path = file("one.jsonl", text);
    const auto descriptors = [] {
        std::size_t n = 0;
        for ([[maybe_unused]] const auto& e : fs::directory_iterator("/proc/self/fd"))
            ++n;
        return n;
    };
    const auto before = descriptors();
    diagnostics diag;
    {
        auto store = jsonl_store::open(path, {}, diag);
        ASSERT_TRUE(store) << diag.message;
        load_report report;
        auto log = (*store)->load({}, report, diag);
        ASSERT_TRUE(log) << diag.message;
        EXPECT_EQ(descriptors(), before + 1);  // the file, with the lock; the log reads through it
        store->reset();
        auto second = jsonl_store::open(path, {}, diag);  // the lock went with the store
        ASSERT_TRUE(second) << diag.message;
        second->reset();
        auto context = compaction::build_session_context(*log, diag);  // the log still reads its lines
        ASSERT_TRUE(context) << diag.message;
        EXPECT_FALSE(context->messages.empty());
    }
    EXPECT_EQ(descriptors(), before);
}

TEST_F(jsonl_store_test, migrate_rewrites_v1_atomically_and_only_once)
{
    const auto text =
        tools::generate_session({.seed = 4, .entries = 60, .compaction_every = 5, .version = 1});
    const auto path = file("old.jsonl", text);
    diagnostics diag;
    load_report before_report;
    auto before = compaction::session_log::load(text, {}, before_report, diag);
    ASSERT_TRUE(before) << diag.message;
    auto before_ctx = compaction::build_session_context(*before, diag).value();

    auto r = migrate_file(path, diag);
    ASSERT_TRUE(r) << diag.message;
    EXPECT_EQ(*r, migrate_outcome::migrated);
    EXPECT_FALSE(fs::exists(path.string() + ".migrate.tmp"));

    auto store = jsonl_store::open(path, {}, diag);
    load_report report;
    auto after = (*store)->load({}, report, diag);
    ASSERT_TRUE(after) << diag.message;
    EXPECT_EQ(after->source_version(), 3);
    auto after_ctx = compaction::build_session_context(*after, diag).value();
    ASSERT_EQ(after_ctx.messages.size(), before_ctx.messages.size());
    for (std::size_t i = 0; i < after_ctx.messages.size(); ++i)
        EXPECT_EQ(after_ctx.messages[i].entry_id, before_ctx.messages[i].entry_id);
    // Appending works now.
    const auto next = user_entry("zz000001", after->leaf_id(), "x");
    ASSERT_TRUE(after->append(next, diag)) << diag.message;
    ASSERT_TRUE((*store)->append(*next, diag));
    store->reset();

    const auto migrated = agentctx::test::read_text(path);
    auto again = migrate_file(path, diag);
    ASSERT_TRUE(again) << diag.message;
    EXPECT_EQ(*again, migrate_outcome::already_current);
    EXPECT_EQ(agentctx::test::read_text(path), migrated);
}

TEST_F(jsonl_store_test, migrate_refuses_a_locked_file)
{
    const auto path = file("old.jsonl", tools::generate_session({.seed = 4, .entries = 10, .version = 2}));
    const auto original = agentctx::test::read_text(path);
    diagnostics diag;
    auto holder = jsonl_store::open(path, {}, diag);
    ASSERT_TRUE(holder);
    auto r = migrate_file(path, diag);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), make_error_code(errc::session_locked));
    EXPECT_EQ(agentctx::test::read_text(path), original);
}
