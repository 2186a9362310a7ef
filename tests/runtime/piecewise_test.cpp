// Piecewise compaction in the session: pieces cover the prefix exactly once, progress is persisted
// (custom entries, host callback), resumed, rejected with a reason, bounded by summaryMaxCalls,
// and cancellation keeps accepted progress only.
#include <agentctx/compaction/progress_record.hpp>
#include <agentctx/runtime/error.hpp>
#include <agentctx/runtime/jsonl_store.hpp>
#include <agentctx/runtime/session.hpp>

#include "long_session.hpp"
#include "open_session.hpp"
#include "scripted_summarizer.hpp"

#include <boost/asio/append.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace agentctx;
using namespace agentctx::runtime;
namespace asio = boost::asio;
namespace json = boost::json;
namespace fs = std::filesystem;
using boost::system::error_code;
using test::script_step;

namespace {

constexpr std::size_t turns = 30;

std::size_t count_of(const std::string& hay, const std::string& needle)
{
    std::size_t n = 0;
    for (auto p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1))
        ++n;
    return n;
}

std::vector<json::object> progress_entries(const std::string& text)
{
    std::vector<json::object> out;
    for (auto& o : test::json_lines(text))
        if (o.at("type") == "custom" && o.at("customType") == "agentctx.compaction_progress")
            out.push_back(std::move(o));
    return out;
}

class piecewise_test : public ::testing::Test
{
protected:
    void SetUp() override
    {
        path_ = test::scratch_long_session("piecewise", "s.jsonl", turns);
        dir_ = path_.parent_path();
        summarizer_ = std::make_shared<test::scripted_summarizer>(ioc_.get_executor());
        for (int k = 1; k <= 40; ++k)
            summarizer_->push(
                {script_step::succeed, "## Goal\nnote-" + std::to_string(k) + " of the long session"}
            );
    }
    void TearDown() override { fs::remove_all(dir_); }

    session_config config(std::int64_t max_calls = 0)
    {
        session_config c;
        c.settings.keep_recent_tokens = 390;  // the cut lands on u28: no split turn
        c.settings.summary_max_source_chars = 2000;
        c.settings.summary_max_calls = max_calls;
        c.model = {"anthropic", "claude-sonnet-4-5", 200000, 0};
        c.summarizer = summarizer_;
        return c;
    }

    std::shared_ptr<session> open(session_config c)
    {
        auto s = test::open_session(ioc_.get_executor(), path_, std::move(c));
        if (!s)
            return nullptr;
        s->on_event([this](const session_event& e) {
            if (const auto* p = std::get_if<compaction_progress_event>(&e))
                progress_.emplace_back(p->completed, p->remaining);
            if (const auto* f = std::get_if<compaction_finished_event>(&e))
                finished_.push_back(f->evidence);
        });
        return s;
    }

    std::string file() const { return test::read_text(path_); }

    // Runs what close() left queued, so the closed session (and its file lock) is released.
    void drain()
    {
        ioc_.restart();
        ioc_.poll();
    }

    template <class Pred>
    void run_until(Pred done)
    {
        ioc_.restart();
        const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (!done() && std::chrono::steady_clock::now() < limit)
            if (ioc_.run_one_for(std::chrono::milliseconds(50)) == 0 && ioc_.stopped())
                ioc_.restart();
        ASSERT_TRUE(done()) << "timed out";
    }

    std::pair<error_code, compaction_outcome> compact(session& s, asio::cancellation_slot slot = {})
    {
        bool done = false;
        std::pair<error_code, compaction_outcome> r;
        s.async_compact(
            std::nullopt,
            asio::bind_cancellation_slot(
                slot,
                [&](error_code ec, compaction_outcome o) {
                    done = true;
                    r = {ec, std::move(o)};
                }
            )
        );
        run_until([&] { return done; });
        return r;
    }

    asio::io_context ioc_;
    fs::path dir_, path_;
    std::shared_ptr<test::scripted_summarizer> summarizer_;
    std::vector<std::pair<std::size_t, std::size_t>> progress_;
    std::vector<compaction_evidence> finished_;
};

}  // namespace

TEST_F(piecewise_test, a_prefix_ten_times_the_bound_compacts_piecewise_covering_each_entry_once)
{
    auto s = open(config());
    const auto before = file();
    const auto [ec, out] = compact(*s);
    ASSERT_FALSE(ec) << out.message;
    const auto prompts = summarizer_->prompts();
    ASSERT_EQ(prompts.size(), 11u);
    // Every summarized turn's marker in exactly one prompt; a tool call and its result together.
    const auto kept = s->context();
    std::size_t summarized = 0;
    for (std::size_t i = 0; i < turns; ++i)
    {
        std::size_t in = 0;
        for (const auto& p : prompts)
            in += count_of(p.prompt, test::turn_marker(i));
        if (in == 0)
            continue;  // kept verbatim after the cut
        ++summarized;
        EXPECT_EQ(in, 1u) << test::turn_marker(i);
        for (const auto& p : prompts)
        {
            if (i % 3 != 2)
                break;
            EXPECT_EQ(
                p.prompt.find("src/f" + std::to_string(i) + ".ts") != std::string::npos,
                p.prompt.find("RESULT " + std::to_string(i) + " ") != std::string::npos
            ) << "tool round "
              << i << " split";
        }
    }
    EXPECT_EQ(summarized, 28u);
    // The serialized source of each request stays within summaryMaxSourceChars (2000).
    for (const auto& p : prompts)
    {
        const auto a = p.prompt.find("<conversation>\n"), b = p.prompt.find("\n</conversation>");
        ASSERT_NE(a, std::string::npos);
        EXPECT_LE(b - a - 15, 2000u);
    }
    // Each piece after the first updates the running note.
    EXPECT_EQ(prompts[0].prompt.find("<previous-summary>"), std::string::npos);
    for (std::size_t k = 1; k < prompts.size(); ++k)
        EXPECT_NE(
            prompts[k].prompt.find("<previous-summary>\n## Goal\nnote-" + std::to_string(k) + " "),
            std::string::npos
        );
    // Ten progress entries, then the compaction with the last note.
    const auto now = file();
    ASSERT_EQ(now.compare(0, before.size(), before), 0);
    const auto added = test::json_lines(now.substr(before.size()));
    ASSERT_EQ(added.size(), 11u);
    EXPECT_EQ(progress_entries(now).size(), 10u);
    const auto& c = added.back();
    EXPECT_EQ(c.at("type"), "compaction");
    EXPECT_EQ(std::string(c.at("summary").as_string()).rfind("## Goal\nnote-11 ", 0), 0u);
    const auto& ev = c.at("details").at("agentctx").at("evidence").as_object();
    EXPECT_EQ(ev.at("method"), "piecewise");
    EXPECT_EQ(ev.at("calls"), 11);
    EXPECT_EQ(ev.at("pieces"), (json::object{{"total", 11}, {"completed", 11}, {"resumed", 0}}));
    EXPECT_EQ(ev.at("nativeSelection"), "portable: scripted offers no native compaction");
    ASSERT_EQ(progress_.size(), 10u);
    EXPECT_EQ(progress_.front(), (std::pair<std::size_t, std::size_t>{1, 10}));
    EXPECT_EQ(progress_.back(), (std::pair<std::size_t, std::size_t>{10, 1}));
    ASSERT_EQ(finished_.size(), 1u);
    EXPECT_FALSE(finished_[0].failure);
    EXPECT_EQ(finished_[0].calls, 11);
}

TEST_F(piecewise_test, a_prefix_within_the_bound_is_one_request)
{
    auto c = config();
    c.settings.summary_max_source_chars = 0;
    auto s = open(std::move(c));
    const auto [ec, out] = compact(*s);
    ASSERT_FALSE(ec) << out.message;
    EXPECT_EQ(summarizer_->calls(), 1u);
    EXPECT_TRUE(progress_entries(file()).empty());
    ASSERT_EQ(finished_.size(), 1u);
    EXPECT_EQ(finished_[0].method, "single");
    EXPECT_EQ(finished_[0].pieces_total, 0u);
}

TEST_F(piecewise_test, summary_max_calls_stops_a_pass_and_later_passes_finish_without_repeating)
{
    auto s = open(config(5));
    const auto view = s->context().size();
    auto [ec, out] = compact(*s);
    EXPECT_EQ(ec, make_error_code(errc::summary_call_limit));
    EXPECT_EQ(summarizer_->calls(), 5u);
    EXPECT_EQ(progress_entries(file()).size(), 5u);
    // The partial note never enters the model's view.
    EXPECT_EQ(s->context().size(), view);
    for (const auto& m : s->context())
        EXPECT_NE(m.msg->role, compaction::role::compaction_summary);
    ASSERT_EQ(finished_.size(), 1u);
    EXPECT_EQ(finished_[0].failure, "summary_call_limit");
    EXPECT_EQ(finished_[0].pieces_completed, 5u);

    std::tie(ec, out) = compact(*s);
    EXPECT_EQ(ec, make_error_code(errc::summary_call_limit));
    EXPECT_EQ(summarizer_->calls(), 10u);
    // Pass 2 starts at piece 6 with note 5.
    EXPECT_NE(summarizer_->prompts()[5].prompt.find("note-5 "), std::string::npos);
    EXPECT_EQ(finished_[1].pieces_resumed, 5u);

    std::tie(ec, out) = compact(*s);
    ASSERT_FALSE(ec) << out.message;
    EXPECT_EQ(summarizer_->calls(), 11u);  // 11 pieces, each requested once
    EXPECT_EQ(progress_entries(file()).size(), 10u);
    EXPECT_EQ(finished_[2].pieces_resumed, 10u);
    EXPECT_EQ(finished_[2].pieces_completed, 11u);
    EXPECT_EQ(finished_[2].calls, 1);
}

TEST_F(piecewise_test, progress_survives_a_reopen_and_resumes)
{
    {
        auto s = open(config(4));
        EXPECT_EQ(compact(*s).first, make_error_code(errc::summary_call_limit));
        s->close();
    }
    drain();
    auto s = open(config());
    const auto [ec, out] = compact(*s);
    ASSERT_FALSE(ec) << out.message;
    EXPECT_EQ(summarizer_->calls(), 11u);
    EXPECT_EQ(finished_.back().pieces_resumed, 4u);
}

TEST_F(piecewise_test, a_history_edit_between_runs_rejects_the_progress_with_its_reason)
{
    {
        auto s = open(config(3));
        EXPECT_EQ(compact(*s).first, make_error_code(errc::summary_call_limit));
        s->close();
    }
    drain();
    // Edit a covered message in place (same id, other text).
    auto text = file();
    const auto at = text.find(test::turn_marker(0));
    ASSERT_NE(at, std::string::npos);
    text.replace(at, 8, "EDIT-000");
    std::ofstream(path_, std::ios::binary | std::ios::trunc) << text;
    auto s = open(config());
    const auto [ec, out] = compact(*s);
    ASSERT_FALSE(ec) << out.message;
    EXPECT_EQ(summarizer_->calls(), 3u + 11u);  // started over
    EXPECT_EQ(finished_.back().progress_rejected, "replaced");
    EXPECT_EQ(finished_.back().pieces_resumed, 0u);
    const auto c = test::json_lines(file()).back();
    EXPECT_EQ(c.at("details").at("agentctx").at("evidence").at("progressRejected"), "replaced");
}

TEST_F(piecewise_test, cancellation_mid_piece_keeps_accepted_progress_and_nothing_else)
{
    summarizer_ = std::make_shared<test::scripted_summarizer>(ioc_.get_executor());
    summarizer_->push({script_step::succeed, "## Goal\nnote-1"});
    summarizer_->push({script_step::succeed, "## Goal\nnote-2"});
    summarizer_->push({script_step::hang});
    auto s = open(config());
    const auto before = file();
    asio::cancellation_signal cancel;
    bool done = false;
    error_code ec;
    s->async_compact(
        std::nullopt,
        asio::bind_cancellation_slot(
            cancel.slot(),
            [&](error_code e, compaction_outcome) {
                done = true;
                ec = e;
            }
        )
    );
    run_until([&] { return summarizer_->calls() == 3; });
    asio::post(s->get_executor(), [&] { cancel.emit(asio::cancellation_type::terminal); });
    run_until([&] { return done; });
    EXPECT_EQ(ec, make_error_code(errc::cancelled));
    const auto now = file();
    ASSERT_EQ(now.compare(0, before.size(), before), 0);
    const auto added = test::json_lines(now.substr(before.size()));
    ASSERT_EQ(added.size(), 2u);
    EXPECT_EQ(progress_entries(now).size(), 2u);
    EXPECT_EQ(added[1].at("data").at("completed"), 2);
    EXPECT_EQ(finished_.back().failure, "cancelled");
}

TEST_F(piecewise_test, a_refusing_persist_callback_stops_with_checkpoint_persist_failed)
{
    auto c = config();
    std::vector<progress_position> seen;
    c.persist_checkpoint = [&](const compaction::progress_record& r,
                               progress_position pos,
                               asio::any_completion_handler<persist_checkpoint_signature> h) {
        EXPECT_EQ(r.completed, 1u);
        seen.push_back(pos);
        asio::post(ioc_.get_executor(), asio::append(std::move(h), error_code{}, false));
    };
    auto s = open(std::move(c));
    const auto before = file();
    const auto [ec, out] = compact(*s);
    EXPECT_EQ(ec, make_error_code(errc::checkpoint_persist_failed));
    EXPECT_EQ(summarizer_->calls(), 1u);
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_EQ(seen[0].completed, 1u);
    EXPECT_EQ(seen[0].remaining, 10u);
    EXPECT_EQ(file(), before);  // the refused piece never reached the file
    EXPECT_TRUE(progress_.empty());
    EXPECT_EQ(finished_.back().failure, "checkpoint_persist_failed");
}

TEST_F(piecewise_test, persist_callback_errors_throws_and_cancellation)
{
    const auto run_with =
        [&](std::function<void(asio::any_completion_handler<persist_checkpoint_signature>)> f) {
            auto c = config();
            c.persist_checkpoint = [f](const compaction::progress_record&,
                                       progress_position,
                                       asio::any_completion_handler<persist_checkpoint_signature> h) {
                f(std::move(h));
            };
            auto s = open(std::move(c));
            const auto before = file();
            const auto ec = compact(*s).first;
            EXPECT_EQ(file(), before);
            s->close();
            s.reset();
            drain();
            return ec;
        };
    const auto complete = [this](error_code e, bool ok) {
        return [this, e, ok](asio::any_completion_handler<persist_checkpoint_signature> h) {
            asio::post(ioc_.get_executor(), asio::append(std::move(h), e, ok));
        };
    };
    EXPECT_EQ(
        run_with([](auto) { throw std::runtime_error("disk full"); }),
        make_error_code(errc::checkpoint_persist_failed)
    );
    EXPECT_EQ(
        run_with(complete(make_error_code(std::errc::no_space_on_device), true)),
        make_error_code(errc::checkpoint_persist_failed)
    );
    EXPECT_EQ(
        run_with(complete(compaction::make_error_code(compaction::errc::summary_failed), true)),
        compaction::make_error_code(compaction::errc::summary_failed)
    );
    EXPECT_EQ(run_with(complete(asio::error::operation_aborted, false)), make_error_code(errc::cancelled));
    EXPECT_EQ(summarizer_->calls(), 4u);  // one piece per attempt, never a second
}

TEST_F(piecewise_test, a_split_turns_prefix_over_the_bound_is_summarized_with_the_history_in_pieces)
{
    // One human turn of 40 tool rounds: the cut falls inside it, and its prefix alone is ~10x the bound.
    test::session_text t;
    t.user("u0", test::turn_marker(0) + " run the whole migration");
    for (int i = 0; i < 40; ++i)
    {
        const std::string n = std::to_string(i);
        t.tool_call(
             "c" + n, "call" + n, "bash", {{"command", "step " + n}}
        ).tool_result("r" + n, "call" + n, "bash", "ROUND-" + n + " " + std::string(400, 'x'));
    }
    t.assistant("fin", "migration done", 9000);
    std::ofstream(path_, std::ios::binary | std::ios::trunc) << t.text;
    auto c = config();
    c.settings.keep_recent_tokens = 300;
    auto s = open(std::move(c));
    const auto [ec, out] = compact(*s);
    ASSERT_FALSE(ec) << out.message;
    ASSERT_EQ(finished_.size(), 1u);
    EXPECT_TRUE(finished_[0].turn_prefix_folded);
    EXPECT_EQ(finished_[0].method, "piecewise");
    const auto prompts = summarizer_->prompts();
    ASSERT_GT(prompts.size(), 5u);
    for (const auto& p : prompts)
    {
        const auto a = p.prompt.find("<conversation>\n"), b = p.prompt.find("\n</conversation>");
        ASSERT_NE(a, std::string::npos)
            << "every request is a history piece (no separate turn-prefix request)";
        EXPECT_LE(b - a - 15, 2000u);
    }
    // Each summarized round in exactly one request, with its call.
    std::size_t summarized = 0;
    for (int i = 0; i < 40; ++i)
    {
        std::size_t in = 0;
        for (const auto& p : prompts)
        {
            const bool result = p.prompt.find("ROUND-" + std::to_string(i) + " ") != std::string::npos;
            in += result;
            if (result)
            {
                EXPECT_NE(p.prompt.find("step " + std::to_string(i) + "\""), std::string::npos)
                    << "round " << i << " split";
            }
        }
        EXPECT_LE(in, 1u);
        summarized += in;
    }
    EXPECT_GT(summarized, 30u);
    const auto entry = test::json_lines(file()).back();
    EXPECT_EQ(entry.at("type"), "compaction");
    EXPECT_EQ(entry.at("details").at("agentctx").at("evidence").at("turnPrefixFolded"), true);
}

TEST_F(piecewise_test, progress_the_host_kept_resumes_after_a_restart_without_the_file_holding_it)
{
    std::vector<compaction::progress_record> kept;
    auto host_config = [&](std::int64_t max_calls) {
        auto c = config(max_calls);
        c.progress_in_session = false;
        c.persist_checkpoint = [this, &kept](
                                   const compaction::progress_record& r,
                                   progress_position,
                                   asio::any_completion_handler<persist_checkpoint_signature> h
                               ) {
            kept.push_back(r);
            asio::post(ioc_.get_executor(), asio::append(std::move(h), error_code{}, true));
        };
        return c;
    };
    const auto before = file();
    {
        auto s = open(host_config(4));
        EXPECT_EQ(compact(*s).first, make_error_code(errc::summary_call_limit));
        s->close();
        s.reset();
        drain();
    }
    EXPECT_EQ(file(), before);  // nothing in the file: the host holds the pieces
    ASSERT_EQ(kept.size(), 4u);
    EXPECT_EQ(kept.back().completed, 4u);

    // A restart: the host hands its newest piece back; 7 pieces remain, none repeated.
    auto c = host_config(0);
    c.saved_progress = kept.back();
    auto s = open(std::move(c));
    const auto [ec, out] = compact(*s);
    ASSERT_FALSE(ec) << out.message;
    EXPECT_EQ(summarizer_->calls(), 11u);
    ASSERT_EQ(finished_.size(), 2u);
    EXPECT_EQ(finished_[1].pieces_resumed, 4u);
    EXPECT_EQ(finished_[1].calls, 7);
    EXPECT_NE(
        summarizer_->prompts()[4].prompt.find("<previous-summary>\n## Goal\nnote-4 "), std::string::npos
    );
    s->close();
    s.reset();
    drain();

    // Saved progress of another history is refused with its reason and the pass starts over.
    std::ofstream(path_, std::ios::binary | std::ios::trunc) << before;
    auto stale = kept.back();
    stale.covered.sha256 = std::string(64, '0');
    auto c2 = host_config(0);
    c2.saved_progress = stale;
    auto s2 = open(std::move(c2));
    ASSERT_FALSE(compact(*s2).first);
    ASSERT_EQ(finished_.size(), 3u);
    EXPECT_EQ(finished_[2].progress_rejected, "replaced");
    EXPECT_EQ(finished_[2].pieces_resumed, 0u);
}

TEST_F(piecewise_test, a_progress_record_with_nothing_remaining_is_rejected_and_started_over)
{
    // The long session with a progress entry covering the whole prefix (hashes and all: what the
    // writer of the file can compute) and no piece left. It used to end the pass with io_error.
    const auto forged = test::read_text(
        fs::path(AGENTCTX_FIXTURES_DIR) / "hostile" / "session-progress-nothing-remaining.jsonl"
    );
    ASSERT_TRUE(forged.starts_with(file()));  // the fixture is this history plus the forged entry
    std::ofstream(path_, std::ios::binary | std::ios::trunc) << forged;
    const auto recorded = test::json_lines(forged).back();
    ASSERT_EQ(recorded.at("customType"), "agentctx.compaction_progress");
    EXPECT_EQ(recorded.at("data").at("remaining"), json::array{});
    EXPECT_EQ(recorded.at("data").at("covered").at("count"), recorded.at("data").at("prefixMessages"));

    auto s = open(config());
    const auto [ec, out] = compact(*s);
    ASSERT_FALSE(ec) << ec.message() << ": " << out.message;
    EXPECT_TRUE(out.compacted);
    EXPECT_EQ(summarizer_->calls(), 11u);  // every piece summarized: the forged note is not used
    EXPECT_EQ(finished_.back().progress_rejected, "nothing_remaining");
    EXPECT_EQ(finished_.back().pieces_resumed, 0u);
    EXPECT_EQ(
        test::json_lines(file()).back().at("summary").as_string().find("FORGED-NOTE"), std::string::npos
    );
}
