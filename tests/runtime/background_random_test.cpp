// A randomized 500-turn run with background compaction: by entry id, no entry is lost and none is summarized
// twice.
#include <agentctx/runtime/session.hpp>

#include "file_text.hpp"
#include "open_session.hpp"
#include "run_until.hpp"

#include <agentctx/providers/summarizer.hpp>

#include <boost/asio/append.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <set>

using namespace agentctx;
using namespace agentctx::runtime;
namespace asio = boost::asio;
namespace json = boost::json;
namespace fs = std::filesystem;
using boost::system::error_code;

namespace {

std::set<std::string> matches(const std::string& text, const std::regex& re)
{
    std::set<std::string> out;
    for (std::sregex_iterator it(text.begin(), text.end(), re), end; it != end; ++it)
        out.insert(it->str());
    return out;
}

const std::regex marker_re("MARK-[0-9]+");
const std::regex call_re("SUMMARY-[0-9]+");

// Answers call n with `SUMMARY-n` after a random delay and remembers the markers its prompt
// carried and the earlier summaries it built on (a previous compaction's, or a piecewise running
// note), so a committed summary names exactly the calls (and so the entries) it stands for.
class marker_summarizer final : public providers::summarizer
{
public:
    explicit marker_summarizer(asio::any_io_executor ex) : strand_(asio::make_strand(ex)) {}
    std::string name() const override { return "markers"; }

    std::map<std::string, std::set<std::string>> seen;  ///< SUMMARY-n -> markers in its prompt
    std::map<std::string, std::set<std::string>> refs;  ///< SUMMARY-n -> the summaries in its prompt

    /// The calls a summary stands for: the ones it names and, through their prompts, every earlier one.
    std::set<std::string> chain(const std::set<std::string>& named) const
    {
        std::set<std::string> out;
        std::vector<std::string> todo(named.begin(), named.end());
        while (!todo.empty())
        {
            const auto id = todo.back();
            todo.pop_back();
            if (out.insert(id).second)
                todo.insert(todo.end(), refs.at(id).begin(), refs.at(id).end());
        }
        return out;
    }
    int cancelled = 0;

protected:
    void summarize_impl(
        compaction::summary_prompt prompt,
        asio::any_completion_handler<providers::summarize_signature> handler
    ) override
    {
        const std::string id = "SUMMARY-" + std::to_string(seen.size() + 1);
        seen[id] = matches(prompt.prompt, marker_re);
        refs[id] = matches(prompt.prompt, call_re);
        auto timer = std::make_shared<asio::steady_timer>(strand_, std::chrono::milliseconds(delay_(rng_)));
        auto slot = asio::get_associated_cancellation_slot(handler);
        if (slot.is_connected())
            slot.assign([timer, s = strand_](asio::cancellation_type) {
                asio::post(s, [timer] { timer->cancel(); });
            });
        timer->async_wait([this, timer, id, h = std::move(handler)](error_code ec) mutable {
            asio::get_associated_cancellation_slot(h).clear();
            if (ec)
            {
                ++cancelled;
                return std::move(h)(asio::error::operation_aborted, compaction::summary_output{});
            }
            std::move(h
            )(error_code{},
              compaction::summary_output{"## Goal\n" + id + "\n", compaction::stop_reason::stop, std::nullopt}
            );
        });
    }

private:
    asio::strand<asio::any_io_executor> strand_;
    std::mt19937 rng_{7};  // fixed: a failure replays
    std::uniform_int_distribution<int> delay_{0, 15};
};

class background_random_test : public ::testing::Test
{
protected:
    void SetUp() override
    {
        dir_ = fs::temp_directory_path() / ("agentctx-background-random-" + std::to_string(::getpid()));
        fs::remove_all(dir_);
        fs::create_directories(dir_);
        path_ = dir_ / "s.jsonl";
        std::ofstream(
            path_, std::ios::binary
        ) << R"({"type":"session","version":3,"id":"random","timestamp":"2026-01-15T09:00:00.000Z","cwd":"/"})"
          << '\n';
    }
    void TearDown() override { fs::remove_all(dir_); }

    template <class Pred>
    void run_until(Pred done)
    {
        test::run_until(ioc_, done);
    }

    // Appends a message carrying a fresh marker; remembers which marker is whose.
    std::string append(session& s, json::object message)
    {
        std::string id;
        bool done = false;
        s.async_append(
            {{"type", "message"}, {"message", std::move(message)}},
            [&](error_code ec, std::string i) {
                EXPECT_FALSE(ec) << ec.message();
                id = std::move(i);
                done = true;
                appended_while_summarizing_ += summarizing_ ? 1 : 0;
            }
        );
        run_until([&] { return done; });
        return id;
    }

    std::string marker(std::size_t pad)
    {
        const std::string m = "MARK-" + std::to_string(++markers_);
        last_marker_ = m;
        return m + " " + std::string(pad * 4, 'x');
    }

    asio::io_context ioc_;
    fs::path dir_, path_;
    std::size_t markers_ = 0;
    bool summarizing_ = false;  ///< a background compaction is summarizing
    std::size_t appended_while_summarizing_ = 0;
    std::string last_marker_;
};

TEST_F(background_random_test, no_entry_is_lost_or_summarized_twice)
{
    auto summarizer = std::make_shared<marker_summarizer>(ioc_.get_executor());
    session_config c;
    c.settings.reserve_tokens = 4000;  // threshold 16,000 tokens; background from 11,200
    c.settings.keep_recent_tokens = 3000;
    c.model = {"anthropic", "claude-sonnet-4-5", 20000, 0};
    c.summarizer = summarizer;
    auto s = test::open_session(ioc_.get_executor(), path_, c);
    ASSERT_TRUE(s);
    std::map<std::string, std::string> marker_of;  // entry id -> its marker
    std::size_t background_commits = 0, foreground_commits = 0;
    s->on_event([&](const session_event& e) {
        if (const auto* start = std::get_if<compaction_start_event>(&e))
            summarizing_ = start->reason == compaction_reason::background;
        if (std::get_if<compaction_prepared_event>(&e) || std::get_if<compaction_end_event>(&e))
            summarizing_ = false;
        if (const auto* end = std::get_if<compaction_end_event>(&e); end && end->result)
            ++(end->reason == compaction_reason::background ? background_commits : foreground_commits);
    });
    std::mt19937 rng(11);  // fixed: a failure replays
    std::uniform_int_distribution<std::size_t> pad(20, 400);
    std::bernoulli_distribution tool_round(0.3);
    // Timestamps after now: a message older than the latest compaction is never checked.
    double ts = static_cast<double>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                        std::chrono::system_clock::now().time_since_epoch()
    )
                                        .count());
    for (std::size_t turn = 0; turn < 500; ++turn)
    {
        ts += 1000;
        auto id = append(*s, {{"role", "user"}, {"content", marker(pad(rng))}, {"timestamp", ts}});
        marker_of[id] = last_marker_;
        if (tool_round(rng))
        {
            const std::string call = "call" + std::to_string(turn);
            json::object args{{"query", marker(1)}};  // not a file path: file lists carry paths on
            id = append(
                *s,
                {{"role", "assistant"},
                 {"content",
                  json::array{json::object{
                      {"type", "toolCall"}, {"id", call}, {"name", "search"}, {"arguments", args}}}},
                 {"api", "anthropic-messages"},
                 {"provider", "anthropic"},
                 {"model", "claude-sonnet-4-5"},
                 {"stopReason", "toolUse"},
                 {"timestamp", ts + 1}}
            );
            marker_of[id] = last_marker_;
            id = append(
                *s,
                {{"role", "toolResult"},
                 {"toolCallId", call},
                 {"toolName", "search"},
                 {"content", json::array{json::object{{"type", "text"}, {"text", marker(pad(rng))}}}},
                 {"isError", false},
                 {"timestamp", ts + 2}}
            );
            marker_of[id] = last_marker_;
        }
        json::object answer{
            {"role", "assistant"},
            {"content", json::array{json::object{{"type", "text"}, {"text", marker(pad(rng))}}}},
            {"api", "anthropic-messages"},
            {"provider", "anthropic"},
            {"model", "claude-sonnet-4-5"},
            {"stopReason", "stop"},
            {"timestamp", ts + 3}};
        id = append(*s, answer);
        marker_of[id] = last_marker_;
        compaction::diagnostics diag;
        bool done = false;
        s->async_on_turn_end(
            compaction::decode_message(answer, "", diag).value(),
            [&](error_code ec, compaction_outcome o) {
                EXPECT_FALSE(ec) << ec.message() << " " << o.message;
                done = true;
            }
        );
        run_until([&] { return done; });
    }

    // The file, in order (no branches: the active path is every entry).
    const auto text = test::read_text(path_);
    std::vector<json::object> entries;
    std::size_t from = text.find('\n') + 1;
    for (std::size_t nl; (nl = text.find('\n', from)) != std::string::npos; from = nl + 1)
        entries.push_back(json::parse(std::string_view(text).substr(from, nl - from)).as_object());
    std::set<std::string> in_file;
    for (const auto& e : entries)
        in_file.insert(std::string(e.at("id").as_string()));
    for (const auto& [id, m] : marker_of)
        EXPECT_TRUE(in_file.contains(id)) << "lost " << id;

    // Compaction k stands for the entries from the previous one's first kept entry to its own:
    // the markers its new summary calls saw are exactly theirs.
    std::size_t range_start = 0, compactions = 0;
    std::set<std::string> previous_calls, summarized;
    for (std::size_t i = 0; i < entries.size(); ++i)
    {
        if (entries[i].at("type").as_string() != "compaction")
            continue;
        ++compactions;
        const std::string first_kept(entries[i].at("firstKeptEntryId").as_string());
        std::set<std::string> expected;
        std::size_t k = range_start;
        for (; k < i && std::string(entries[k].at("id").as_string()) != first_kept; ++k)
            if (const auto it = marker_of.find(std::string(entries[k].at("id").as_string()));
                it != marker_of.end())
                expected.insert(it->second);
        ASSERT_LT(k, i) << "first kept entry not before its compaction";
        const auto calls =
            summarizer->chain(matches(std::string(entries[i].at("summary").as_string()), call_re));
        std::set<std::string> actual;
        for (const auto& call : calls)
            if (!previous_calls.contains(call))  // the previous compaction's, built on
                actual.insert(summarizer->seen.at(call).begin(), summarizer->seen.at(call).end());
        EXPECT_EQ(actual, expected) << "compaction " << compactions;
        for (const auto& m : actual)
            EXPECT_TRUE(summarized.insert(m).second) << m << " summarized twice";
        previous_calls = calls;
        range_start = k;
    }
    EXPECT_GE(compactions, 20u);
    EXPECT_EQ(background_commits + foreground_commits, compactions);
    EXPECT_GE(background_commits, compactions / 2);       // most were prepared ahead
    EXPECT_GT(appended_while_summarizing_, compactions);  // and entries kept arriving meanwhile
    s->close();
    run_until([] { return true; });
}

}  // namespace
