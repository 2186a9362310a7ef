// session::async_append_messages: a batch is validated whole, written in order, and never interleaved.
#include <agentctx/compaction/error.hpp>
#include <agentctx/runtime/error.hpp>
#include <agentctx/runtime/session.hpp>

#include "file_text.hpp"
#include "open_session.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <csignal>

#include <sys/resource.h>
#include <unistd.h>

using namespace agentctx;
namespace json = boost::json;
namespace fs = std::filesystem;
using boost::system::error_code;

namespace {

class append_batch_test : public ::testing::Test
{
protected:
    void SetUp() override
    {
        path_ = test::new_session_file("agentctx-batch");
        session_ = test::open_session(ioc_.get_executor(), path_, {});
    }
    void TearDown() override
    {
        session_.reset();
        fs::remove(path_);
    }

    std::pair<error_code, runtime::append_batch_result> append(std::vector<json::object> messages)
    {
        std::pair<error_code, runtime::append_batch_result> out;
        bool done = false;
        session_->async_append_messages(
            std::move(messages),
            [&](error_code ec, runtime::append_batch_result r) {
                out = {ec, std::move(r)};
                done = true;
            }
        );
        ioc_.restart();
        while (!done && ioc_.run_one() > 0)
        {}
        EXPECT_TRUE(done);
        return out;
    }

    static json::object user(const std::string& text)
    {
        return {{"role", "user"}, {"content", text}, {"timestamp", 1}};
    }

    boost::asio::io_context ioc_;
    fs::path path_;
    std::shared_ptr<runtime::session> session_;
};

}  // namespace

TEST_F(append_batch_test, a_batch_is_written_in_order_each_entry_the_child_of_the_one_before)
{
    ASSERT_TRUE(session_);
    const auto [ec, r] = append({user("a"), user("b"), user("c")});
    ASSERT_FALSE(ec) << r.reason;
    ASSERT_EQ(r.ids.size(), 3u);
    const auto snap = session_->current();
    ASSERT_EQ(snap->messages.size(), 3u);
    for (std::size_t i = 0; i < 3; ++i)
        EXPECT_EQ(snap->messages[i].entry_id, r.ids[i]);
    EXPECT_EQ(snap->leaf_id, r.ids[2]);
    const auto text = test::read_text(path_);
    EXPECT_NE(text.find(R"("id":")" + r.ids[1] + R"(","parentId":")" + r.ids[0] + "\""), std::string::npos)
        << text;
    EXPECT_NE(text.find(R"("id":")" + r.ids[2] + R"(","parentId":")" + r.ids[1] + "\""), std::string::npos)
        << text;
}

TEST_F(append_batch_test, one_refused_message_refuses_the_batch_and_writes_nothing)
{
    ASSERT_TRUE(session_);
    ASSERT_FALSE(append({user("first")}).first);
    const auto before = test::read_text(path_);
    const auto [ec, r] = append({user("a"), user("b"), {{"role", "user"}, {"content", 5}}});
    EXPECT_EQ(ec, compaction::make_error_code(compaction::errc::wrong_type));
    EXPECT_EQ(r.reason.rfind("[2] field 'message.content'", 0), 0u) << r.reason;
    EXPECT_TRUE(r.ids.empty());
    EXPECT_EQ(test::read_text(path_), before);
    EXPECT_EQ(session_->current()->messages.size(), 1u);
}

// The file may grow by one line only: a batch of three must then write none of them. Written
// one by one, the first would have stayed in the file.
TEST_F(append_batch_test, a_store_failure_inside_a_batch_leaves_none_of_it_in_file_or_snapshot)
{
    ASSERT_TRUE(session_);
    ASSERT_FALSE(append({user("first")}).first);
    const auto before = test::read_text(path_);
    const std::string text(300, 'x');
    struct rlimit old
    {};
    ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
    const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);  // EFBIG instead of a signal
    struct rlimit small = old;
    small.rlim_cur = before.size() + 500;  // room for one 300-character line, not two
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
    const auto [ec, r] = append({user(text), user(text), user(text)});
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &old), 0);
    std::signal(SIGXFSZ, old_handler);
    EXPECT_EQ(ec, runtime::make_error_code(runtime::errc::io_error)) << r.reason;
    EXPECT_TRUE(r.ids.empty());
    EXPECT_EQ(test::read_text(path_), before);
    EXPECT_EQ(session_->current()->messages.size(), 1u);
    // The same batch goes through once the file may grow.
    const auto [ec2, r2] = append({user(text), user(text), user(text)});
    ASSERT_FALSE(ec2) << r2.reason;
    EXPECT_EQ(session_->current()->messages.size(), 4u);
}

namespace {

std::vector<std::string> lines_of(const std::string& text)
{
    std::vector<std::string> out;
    for (std::size_t p = 0; p < text.size();)
    {
        const auto nl = text.find('\n', p);
        out.push_back(text.substr(p, nl == std::string::npos ? std::string::npos : nl - p));
        p = nl == std::string::npos ? text.size() : nl + 1;
    }
    return out;
}

}  // namespace

// A load finds a batch that a crash cut short by these marks; a single append needs none.
TEST_F(append_batch_test, every_entry_of_a_batch_is_marked_with_its_index_and_the_batch_size)
{
    ASSERT_TRUE(session_);
    ASSERT_FALSE(append({user("alone")}).first);
    ASSERT_FALSE(append({user("a"), user("b"), user("c")}).first);
    const auto lines = lines_of(test::read_text(path_));
    ASSERT_EQ(lines.size(), 5u);
    EXPECT_EQ(lines[1].find("agentctxBatch"), std::string::npos);
    const std::string first(json::parse(lines[2]).at("id").as_string());
    for (int i = 0; i < 3; ++i)
        EXPECT_NE(
            lines[2 + i].find(
                R"("agentctxBatch":{"index":)" + std::to_string(i) + R"(,"size":3,"first":")" + first + "\"}"
            ),
            std::string::npos
        ) << lines[2 + i];
    // A whole batch at the end of the file is loaded whole.
    session_.reset();
    session_ = test::open_session(ioc_.get_executor(), path_, {});
    ASSERT_TRUE(session_);
    EXPECT_EQ(session_->current()->messages.size(), 4u);
}

// One write(2) can still be cut short (a kill between pages, a power loss before the sync): the
// entries of the batch that reached the file were never acknowledged. The session opens without
// them and its next append moves them to `<file>.torn`, whole or torn, and writes after `alone`.
TEST_F(append_batch_test, a_batch_a_crash_cut_short_is_left_out_and_set_aside_by_the_next_append)
{
    for (const bool torn_last : {false, true})
    {
        SCOPED_TRACE(torn_last ? "the third line torn" : "the third line missing");
        fs::remove(path_.string() + ".torn");
        session_.reset();
        std::ofstream(path_, std::ios::trunc)
            << R"({"type":"session","version":3,"id":"s1","timestamp":"2026-01-15T09:00:00.000Z","cwd":"/"})"
            << '\n';
        session_ = test::open_session(ioc_.get_executor(), path_, {});
        ASSERT_TRUE(session_);
        const auto alone = append({user("alone")}).second.ids.at(0);
        ASSERT_FALSE(append({user("a"), user("b"), user("c")}).first);
        session_.reset();
        const auto full = test::read_text(path_);
        const auto lines = lines_of(full);
        ASSERT_EQ(lines.size(), 5u);
        const auto cut = full.size() - lines[4].size() - 1 + (torn_last ? lines[4].size() / 2 : 0);
        fs::resize_file(path_, cut);

        session_ = test::open_session(ioc_.get_executor(), path_, {});
        ASSERT_TRUE(session_);
        EXPECT_EQ(session_->current()->messages.size(), 1u);
        EXPECT_EQ(session_->current()->leaf_id, alone);
        const auto [ec, r] = append({user("after")});
        ASSERT_FALSE(ec) << r.reason;
        const auto now = lines_of(test::read_text(path_));
        ASSERT_EQ(now.size(), 3u);
        EXPECT_EQ(now[1], lines[1]);
        EXPECT_NE(now[2].find(R"("parentId":")" + alone + "\""), std::string::npos) << now[2];
        const auto side = test::read_text(path_.string() + ".torn");
        EXPECT_EQ(
            side,
            full.substr(
                full.size() - lines[4].size() - 1 - lines[3].size() - 1 - lines[2].size() - 1,
                lines[2].size() + 1 + lines[3].size() + 1 + (torn_last ? lines[4].size() / 2 : 0)
            ) + (torn_last ? "\n" : "")
        );
    }
    fs::remove(path_.string() + ".torn");
}

// A file written before clients were refused the field: a client's own `agentctxBatch` on an
// acknowledged entry at the end of the file (no `first`, or a `first` naming another entry, or
// a chain that does not start at the id the mark names) never makes a load leave it out, and the
// next append moves nothing to `<file>.torn`.
TEST_F(append_batch_test, a_forged_batch_mark_never_sets_an_acknowledged_entry_aside)
{
    const std::string header =
        R"({"type":"session","version":3,"id":"s1","timestamp":"2026-01-15T09:00:00.000Z","cwd":"/"})";
    const auto line = [](const std::string& id, const std::string& parent, const std::string& mark) {
        return R"({"type":"message","id":")" + id + R"(","parentId":)" + parent +
               R"(,"timestamp":"2026-01-15T09:00:01.000Z","message":{"role":"user","content":")" + id +
               R"(","timestamp":1},"agentctxBatch":)" + mark + "}";
    };
    const std::vector<std::pair<std::string, std::string>> forged{
        {"no first", line("e1", "null", R"({"index":0,"size":2})")},
        {"another entry's id", line("e1", "null", R"({"index":0,"size":2,"first":"e0"})")},
        {"a chain from an unmarked entry",
         line("e0", "null", R"({"index":0,"size":3})") + "\n" +
             line("e1", "\"e0\"", R"({"index":1,"size":3,"first":"e0"})")},
    };
    for (const auto& [what, lines] : forged)
    {
        SCOPED_TRACE(what);
        session_.reset();
        fs::remove(path_.string() + ".torn");
        std::ofstream(path_, std::ios::trunc) << header << '\n' << lines << '\n';
        const auto before = test::read_text(path_);
        session_ = test::open_session(ioc_.get_executor(), path_, {});
        ASSERT_TRUE(session_);
        EXPECT_EQ(session_->current()->leaf_id, "e1");
        const auto [ec, r] = append({user("after")});
        ASSERT_FALSE(ec) << r.reason;
        EXPECT_EQ(test::read_text(path_).substr(0, before.size()), before);
        EXPECT_FALSE(fs::exists(path_.string() + ".torn"));
    }
}
