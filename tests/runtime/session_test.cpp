// The session actor: triggers, the transaction, cancellation at every await point, hooks, events.
#include <agentctx/compaction/branch_summary.hpp>
#include <agentctx/runtime/entries.hpp>
#include <agentctx/runtime/error.hpp>
#include <agentctx/runtime/jsonl_store.hpp>
#include <agentctx/runtime/memory_store.hpp>
#include <agentctx/runtime/session.hpp>

#include "append_entry.hpp"
#include "scripted_summarizer.hpp"
#include "long_session.hpp"
#include "open_session.hpp"
#include "session_text.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <atomic>
#include <thread>

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
using test::tokens;

namespace {

json::object user_msg(const std::string& text)
{
    return {
        {"type", "message"},
        {"message", json::object{{"role", "user"}, {"content", text}, {"timestamp", 1768467700000}}}};
}

// An assistant message as the host would persist it (for appends and for on_turn_end).
// session_text::usage without a negative count (a client's usage is refused then): a total under
// 100 is all output.
json::object usage_of(std::int64_t total)
{
    auto u = test::session_text::usage(total);
    if (total < 100)
        u["input"] = 0, u["output"] = total;
    return u;
}

json::object assistant_json(
    const std::string& text,
    std::int64_t total,
    const char* stop = "stop",
    double ts = 1768467800000,
    const char* model = "claude-sonnet-4-5",
    const char* error = nullptr
)
{
    json::object m{
        {"role", "assistant"},
        {"content", json::array{json::object{{"type", "text"}, {"text", text}}}},
        {"api", "anthropic-messages"},
        {"provider", "anthropic"},
        {"model", model},
        {"usage", usage_of(total)},
        {"stopReason", stop},
        {"timestamp", ts}};
    if (error)
        m["errorMessage"] = error;
    return m;
}

compaction::message decode(const json::object& m)
{
    compaction::diagnostics diag;
    return compaction::decode_message(m, "", diag).value();
}

struct event_log
{
    std::vector<std::string> lines;
    void operator()(const session_event& e)
    {
        if (const auto* s = std::get_if<compaction_start_event>(&e))
            lines.push_back(std::string("start:") + to_string(s->reason));
        else if (const auto* end = std::get_if<compaction_end_event>(&e))
            lines.push_back(
                std::string("end:") + to_string(end->reason) + (end->result ? ":ok" : "") +
                (end->aborted ? ":aborted" : "") + (end->will_retry ? ":retry" : "") +
                (end->error_message ? ":error" : "")
            );
    }
};

class session_test : public ::testing::Test
{
protected:
    void SetUp() override
    {
        dir_ = fs::temp_directory_path() / ("agentctx-session-" + std::to_string(::getpid()) + "-" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
        summarizer_ = std::make_shared<test::scripted_summarizer>(ioc_.get_executor());
    }
    void TearDown() override { fs::remove_all(dir_); }

    // Ten turns of ~200 tokens each, usage on the last assistant.
    std::string base_text(std::size_t turns = 10)
    {
        test::session_text s;
        for (std::size_t i = 0; i < turns; ++i)
            s.user("u" + std::to_string(i), tokens(100))
                .assistant("a" + std::to_string(i), tokens(100), i + 1 == turns ? 2000 : 0);
        return s.text;
    }

    session_config config(std::int64_t keep = 400)  // cuts at u8: whole turns, one model call
    {
        session_config c;
        c.settings.keep_recent_tokens = keep;
        c.model = {"anthropic", "claude-sonnet-4-5", 200000, 0};
        c.settings.working_budget =
            compaction::token_amount{};  // 0: the window's threshold, which these tests pin
        c.summarizer = summarizer_;
        return c;
    }

    std::shared_ptr<session> open_file(
        const std::string& text, session_config c, const std::string& name = "s.jsonl"
    )
    {
        path_ = dir_ / name;
        std::ofstream(path_, std::ios::binary) << text;
        auto s = test::open_session(ioc_.get_executor(), path_, std::move(c));
        if (!s)
            return nullptr;
        s->on_event(std::ref(events_));
        return s;
    }

    std::string file() const
    {
        std::ifstream f(path_, std::ios::binary);
        std::stringstream ss;
        ss << f.rdbuf();
        return ss.str();
    }

    // Runs the io_context until `done` or a generous wall-clock limit.
    template <class Pred>
    void run_until(Pred done)
    {
        test::run_until(ioc_, done);
    }

    struct outcome_result
    {
        bool done = false;
        error_code ec;
        compaction_outcome outcome;
    };

    std::shared_ptr<outcome_result> compact(
        session& s, std::optional<std::string> instr = std::nullopt, asio::cancellation_slot slot = {}
    )
    {
        auto r = std::make_shared<outcome_result>();
        s.async_compact(
            std::move(instr),
            asio::bind_cancellation_slot(
                slot,
                [r](error_code ec, compaction_outcome o) {
                    r->done = true;
                    r->ec = ec;
                    r->outcome = std::move(o);
                }
            )
        );
        return r;
    }

    std::shared_ptr<outcome_result> turn_end(session& s, const json::object& assistant)
    {
        auto r = std::make_shared<outcome_result>();
        s.async_on_turn_end(decode(assistant), [r](error_code ec, compaction_outcome o) {
            r->done = true;
            r->ec = ec;
            r->outcome = std::move(o);
        });
        return r;
    }

    std::string append(session& s, json::object fields)
    {
        return test::append_entry(ioc_, s, std::move(fields));
    }

    // Every budget_exceeded event the session emits, in order.
    static std::shared_ptr<std::vector<budget_exceeded_event>> capture_shortfalls(session& s)
    {
        auto out = std::make_shared<std::vector<budget_exceeded_event>>();
        s.on_event([out](const session_event& e) {
            if (const auto* b = std::get_if<budget_exceeded_event>(&e))
                out->push_back(*b);
        });
        return out;
    }

    asio::io_context ioc_;
    fs::path dir_, path_;
    std::shared_ptr<test::scripted_summarizer> summarizer_;
    event_log events_;
};

}  // namespace

TEST_F(session_test, append_is_durable_and_updates_the_snapshot_incrementally)
{
    auto s = open_file(base_text(2), config());
    const auto before = s->current();
    const auto id = append(*s, user_msg("next question"));
    EXPECT_EQ(id.size(), 8u);
    EXPECT_NE(file().find("\"id\":\"" + id + "\""), std::string::npos);
    const auto after = s->current();
    EXPECT_EQ(after->leaf_id, id);
    EXPECT_EQ(after->messages.size(), before->messages.size() + 1);
    EXPECT_EQ(after->messages.back().entry_id, id);
    EXPECT_EQ(before->messages.size(), 4u);  // the old snapshot is untouched
    // Incremental accounting equals a full rebuild: usage 2000 + "next question" (13 chars -> 4).
    EXPECT_EQ(after->context_tokens(), 2004);
    compaction::diagnostics diag;
    compaction::load_report report;
    auto store = jsonl_store::open(path_, {.read_only = true}, diag);
    auto log = (*store)->load({}, report, diag).value();
    auto rebuilt = make_snapshot(log, compaction::default_token_counter(), diag).value();
    EXPECT_EQ(rebuilt->context_tokens(), after->context_tokens());
    EXPECT_EQ(rebuilt->messages.size(), after->messages.size());
}

TEST_F(session_test, append_rejects_bad_entries_and_writes_nothing)
{
    auto s = open_file(base_text(1), config());
    const auto before = file();
    bool done = false;
    error_code ec;
    s->async_append(
        {{"type", "message"}, {"message", json::object{{"role", "user"}, {"content", 5}}}},
        [&](error_code e, std::string) {
            done = true;
            ec = e;
        }
    );
    run_until([&] { return done; });
    EXPECT_EQ(ec, compaction::make_error_code(compaction::errc::wrong_type));
    EXPECT_EQ(file(), before);
}

TEST_F(session_test, a_refused_append_hands_the_host_its_diagnostics)
{
    auto s = open_file(base_text(1), config());
    const auto before = file();
    compaction::diagnostics diag;
    diag.field = "stale";
    bool done = false;
    error_code ec;
    std::string reason;
    s->async_append(
        {{"type", "message"}, {"message", json::object{{"role", "user"}, {"content", 5}}}},
        diag,
        [&](error_code e, std::string r) {
            done = true;
            ec = e;
            reason = std::move(r);
        }
    );
    run_until([&] { return done; });
    EXPECT_EQ(ec, compaction::make_error_code(compaction::errc::wrong_type));
    EXPECT_EQ(diag.field, "message.content");
    EXPECT_EQ(diag.message, reason);
    EXPECT_NE(diag.message.find("message.content"), std::string::npos) << diag.message;
    EXPECT_EQ(file(), before);
    // A reserved custom type is refused before validation, with its field named too.
    done = false;
    s->async_append(
        {{"type", "custom"}, {"customType", "agentctx.compaction_progress"}, {"data", json::object{}}},
        diag,
        [&](error_code e, std::string) {
            done = true;
            ec = e;
        }
    );
    run_until([&] { return done; });
    EXPECT_EQ(ec, compaction::make_error_code(compaction::errc::reserved_type));
    EXPECT_EQ(diag.field, "customType");
    // An accepted append leaves the diagnostics empty.
    done = false;
    s->async_append(
        {{"type", "message"}, {"message", json::object{{"role", "user"}, {"content", "fine"}}}},
        diag,
        [&](error_code e, std::string) {
            done = true;
            ec = e;
        }
    );
    run_until([&] { return done; });
    EXPECT_FALSE(ec);
    EXPECT_TRUE(diag.field.empty());
    EXPECT_TRUE(diag.message.empty());
}

TEST_F(session_test, append_validates_completely_before_writing)
{
    // Before the fix a label with an unknown target, or a second header, reached the file first.
    auto s = open_file(base_text(1), config());
    const auto before = file();
    const std::vector<json::object> bad{
        {{"type", "label"}, {"targetId", "nosuchentry"}, {"label", "x"}},
        {{"type", "session"}, {"version", 3}, {"cwd", "/"}},
        {{"type", "compaction"}, {"summary", "s"}, {"firstKeptEntryId", "u0"}, {"tokensBefore", 1}},
    };
    const std::vector<compaction::errc> want{
        compaction::errc::entry_not_found, compaction::errc::wrong_type, compaction::errc::wrong_type};
    for (std::size_t i = 0; i < bad.size(); ++i)
    {
        bool done = false;
        error_code ec;
        s->async_append(bad[i], [&](error_code e, std::string) {
            done = true;
            ec = e;
        });
        run_until([&] { return done; });
        EXPECT_EQ(ec, compaction::make_error_code(want[i])) << i << " " << ec.message();
        EXPECT_EQ(file(), before) << i;
    }
    // A valid label still goes through, and the file reloads.
    append(*s, {{"type", "label"}, {"targetId", "u0"}, {"label", "start"}});
    compaction::diagnostics diag;
    compaction::load_report report;
    auto store = jsonl_store::open(path_, {.read_only = true}, diag);
    auto log = (*store)->load({}, report, diag);
    ASSERT_TRUE(log) << diag.message;
    EXPECT_EQ(log->label_of("u0"), "start");
}

TEST_F(session_test, manual_compaction_commits_one_entry_and_swaps_the_snapshot)
{
    auto s = open_file(base_text(), config());
    const auto before_file = file();
    auto r = compact(*s, std::string("focus on the parser"));
    run_until([&] { return r->done; });
    ASSERT_FALSE(r->ec) << r->ec.message() << " " << r->outcome.message;
    EXPECT_TRUE(r->outcome.compacted);
    ASSERT_EQ(summarizer_->calls(), 1u);
    EXPECT_NE(
        summarizer_->prompts()[0].prompt.find("Additional focus: focus on the parser"), std::string::npos
    );
    // Pi 1.6: the model's output limit (unknown here: 32000), clamped to the window; not 0.8 * reserve.
    EXPECT_EQ(summarizer_->prompts()[0].max_output_tokens, 32000u);
    // One new line, appended after the old content.
    const auto after = file();
    ASSERT_EQ(after.substr(0, before_file.size()), before_file);
    const auto line = after.substr(before_file.size());
    EXPECT_EQ(std::count(line.begin(), line.end(), '\n'), 1);
    EXPECT_NE(line.find("\"type\":\"compaction\""), std::string::npos);
    EXPECT_NE(line.find("\"modelCalls\":1"), std::string::npos);
    EXPECT_NE(line.find("\"fromHook\":false"), std::string::npos);
    const auto snap = s->current();
    EXPECT_EQ(snap->messages[0].msg->role, compaction::role::compaction_summary);
    EXPECT_EQ(snap->messages[0].entry_id, r->outcome.entry_id);
    EXPECT_EQ(snap->leaf_id, r->outcome.entry_id);
    EXPECT_FALSE(snap->usage_index);  // kept usage is stale after the compaction
    EXPECT_EQ(events_.lines, (std::vector<std::string>{"start:manual", "end:manual:ok"}));
}

TEST_F(session_test, threshold_at_the_exact_boundary)
{
    auto c = config();
    c.settings.background.enabled =
        false;  // the foreground trigger alone (at the boundary a background one would start)
    auto s = open_file(base_text(), c);
    auto below = turn_end(*s, assistant_json("ok", 183616));
    run_until([&] { return below->done; });
    EXPECT_FALSE(below->outcome.attempted);
    EXPECT_EQ(summarizer_->calls(), 0u);
    auto above = turn_end(*s, assistant_json("ok", 183617));
    run_until([&] { return above->done; });
    EXPECT_TRUE(above->outcome.attempted);
    EXPECT_TRUE(above->outcome.compacted) << above->outcome.message;
    EXPECT_EQ(above->outcome.reason, compaction_reason::threshold);
    EXPECT_EQ(events_.lines, (std::vector<std::string>{"start:threshold", "end:threshold:ok"}));
}

TEST_F(session_test, disabled_gates_only_the_automatic_paths)
{
    auto c = config();
    c.settings.enabled = false;
    auto s = open_file(base_text(), c);
    auto t = turn_end(*s, assistant_json("ok", 190000));
    run_until([&] { return t->done; });
    EXPECT_FALSE(t->outcome.attempted);
    auto m = compact(*s);
    run_until([&] { return m->done; });
    EXPECT_TRUE(m->outcome.compacted);
}

TEST_F(session_test, stale_usage_after_a_compaction_does_not_trigger)
{
    auto s = open_file(base_text(), config());
    auto m = compact(*s);
    run_until([&] { return m->done; });
    ASSERT_TRUE(m->outcome.compacted);
    // A response from before the compaction (its timestamp is older) reporting a huge context.
    auto stale = turn_end(*s, assistant_json("old", 610000, "stop", 1768467000000));
    run_until([&] { return stale->done; });
    EXPECT_FALSE(stale->outcome.attempted);
    EXPECT_EQ(stale->outcome.message, "the message predates the latest compaction");
    // An error response measures the context from fresh usage only: there is none yet.
    auto err =
        turn_end(*s, assistant_json("", 0, "error", 4102444800000.0, "claude-sonnet-4-5", "529 overloaded"));
    run_until([&] { return err->done; });
    EXPECT_FALSE(err->outcome.attempted);
    EXPECT_EQ(summarizer_->calls(), 1u);
}

TEST_F(session_test, overflow_compacts_and_retries_once_then_fails)
{
    auto s = open_file(base_text(), config());
    const auto overflow = assistant_json(
        "",
        0,
        "error",
        4102444800000.0,
        "claude-sonnet-4-5",
        "prompt is too long: 210000 tokens > 200000 maximum"
    );
    auto first = turn_end(*s, overflow);
    run_until([&] { return first->done; });
    ASSERT_TRUE(first->outcome.compacted) << first->outcome.message;
    EXPECT_TRUE(first->outcome.will_retry);
    EXPECT_EQ(first->outcome.reason, compaction_reason::overflow);
    const auto after_first = file();
    auto second = turn_end(*s, overflow);
    run_until([&] { return second->done; });
    EXPECT_EQ(second->ec, make_error_code(errc::overflow_recovery_failed));
    EXPECT_FALSE(second->outcome.attempted);
    EXPECT_EQ(file(), after_first);  // no second compaction
    EXPECT_EQ(
        events_.lines,
        (std::vector<std::string>{"start:overflow", "end:overflow:ok:retry", "end:overflow:error"})
    );
    // A successful response resets the attempt: the next overflow is recovered again.
    append(*s, user_msg(tokens(200)));
    append(*s, {{"type", "message"}, {"message", assistant_json("fine", 1000, "stop", 4102444800001.0)}});
    auto third = turn_end(*s, overflow);
    run_until([&] { return third->done; });
    EXPECT_TRUE(third->outcome.compacted) << third->outcome.message;
}

TEST_F(session_test, overflow_from_another_model_is_ignored)
{
    auto s = open_file(base_text(), config());
    auto r =
        turn_end(*s, assistant_json("", 0, "error", 4102444800000.0, "small-model", "prompt is too long"));
    run_until([&] { return r->done; });
    EXPECT_FALSE(r->outcome.attempted);
    EXPECT_EQ(summarizer_->calls(), 0u);
}

TEST_F(session_test, recover_overflow_classifies_the_error_text)
{
    auto s = open_file(base_text(), config());
    bool done = false;
    error_code ec;
    compaction_outcome out;
    s->async_recover_overflow("429 rate limit: too many requests", [&](error_code e, compaction_outcome o) {
        done = true;
        ec = e;
        out = o;
    });
    run_until([&] { return done; });
    EXPECT_EQ(ec, make_error_code(errc::not_overflow));
    done = false;
    s->async_recover_overflow(
        "This model's maximum context length is 128000 tokens",
        [&](error_code e, compaction_outcome o) {
            done = true;
            ec = e;
            out = o;
        }
    );
    run_until([&] { return done; });
    EXPECT_FALSE(ec);
    EXPECT_TRUE(out.compacted);
    EXPECT_TRUE(out.will_retry);
}

TEST_F(session_test, failures_and_cancellations_leave_file_and_snapshot_unchanged)
{
    struct failure_case
    {
        const char* name;
        script_step step;
        int cancel_how;  // 0 none, 1 abort_compaction, 2 cancellation slot, 3 close
        error_code expected;
        const char* end_event;
    };
    const std::vector<failure_case> cases{
        {"model error",
         {script_step::stop_error},
         0,
         compaction::make_error_code(compaction::errc::summary_failed),
         "end:manual:error"},
        {"truncated",
         {script_step::truncated},
         0,
         compaction::make_error_code(compaction::errc::summary_truncated),
         "end:manual:error"},
        {"empty",
         {script_step::succeed, "  \n"},
         0,
         compaction::make_error_code(compaction::errc::summary_empty),
         "end:manual:error"},
        {"aborted stop",
         {script_step::aborted},
         0,
         compaction::make_error_code(compaction::errc::summary_aborted),
         "end:manual:error"},
        {"transport", {script_step::transport_error}, 0, asio::error::connection_reset, "end:manual:error"},
        {"abort_compaction", {script_step::hang}, 1, make_error_code(errc::cancelled), "end:manual:aborted"},
        {"slot", {script_step::hang}, 2, make_error_code(errc::cancelled), "end:manual:aborted"},
        {"late result then abort",
         {script_step::succeed, "## Goal\nlate", std::chrono::milliseconds(200)},
         1,
         make_error_code(errc::cancelled),
         "end:manual:aborted"},
        {"close", {script_step::hang}, 3, make_error_code(errc::cancelled), "end:manual:aborted"},
    };
    for (const auto& c : cases)
    {
        SCOPED_TRACE(c.name);
        events_.lines.clear();
        summarizer_ = std::make_shared<test::scripted_summarizer>(ioc_.get_executor());
        summarizer_->push(c.step);
        auto s = open_file(base_text(), config(), std::string(c.name) + ".jsonl");
        const auto before_file = file();
        const auto before_snap = s->current();
        asio::cancellation_signal sig;
        auto r = compact(*s, std::nullopt, sig.slot());
        if (c.cancel_how)
        {
            run_until([&] { return summarizer_->calls() == 1; });
            if (c.cancel_how == 1)
                s->abort_compaction();
            else if (c.cancel_how == 2)
                sig.emit(asio::cancellation_type::terminal);
            else
                s->close();
        }
        run_until([&] { return r->done; });
        EXPECT_EQ(r->ec, c.expected) << r->ec.message() << " " << r->outcome.message;
        EXPECT_FALSE(r->outcome.compacted);
        EXPECT_EQ(file(), before_file);
        EXPECT_EQ(s->current(), before_snap);  // the very same snapshot object
        EXPECT_EQ(events_.lines, (std::vector<std::string>{"start:manual", c.end_event}));
        if (c.cancel_how)
        {
            EXPECT_EQ(summarizer_->cancellations(), 1);  // the model request itself was stopped
        }
        s->close();
        run_until([&] { return true; });
    }
}

namespace {

// One oversized turn: the cut lands inside it.
test::session_text split_turn_session()
{
    test::session_text t;
    t.user("u0", tokens(100)).assistant("a0", tokens(100));
    t.user("u1", tokens(100));
    for (int i = 0; i < 6; ++i)
    {
        t.message(
            "c" + std::to_string(i),
            {{"role", "assistant"},
             {"content",
              json::array{json::object{
                  {"type", "toolCall"},
                  {"id", "k" + std::to_string(i)},
                  {"name", "read"},
                  {"arguments", json::object{{"path", "f" + std::to_string(i)}}}}}},
             {"provider", "anthropic"},
             {"model", "claude-sonnet-4-5"},
             {"stopReason", "toolUse"}}
        );
        t.tool_result("r" + std::to_string(i), "k" + std::to_string(i), "read", tokens(100));
    }
    return t;
}

}  // namespace

TEST_F(session_test, split_turn_requests_run_in_order_history_first_as_pi_1_6)
{
    const auto t = split_turn_session();
    // The history request hangs: the prefix request must not start before its response.
    summarizer_->push({script_step::hang});
    summarizer_->push({script_step::succeed, "## Original Request\nprefix"});
    auto s = open_file(t.text, config(350));
    auto op = compact(*s);
    run_until([&] { return summarizer_->calls() == 1; });
    for (int i = 0; i < 20; ++i)
        ioc_.poll();
    EXPECT_EQ(summarizer_->calls(), 1u);
    EXPECT_NE(
        summarizer_->prompts()[0].prompt.find("<conversation>"), std::string::npos
    );  // the history first
    s->abort_compaction();
    run_until([&] { return op->done; });
    EXPECT_EQ(summarizer_->calls(), 1u);  // a failing history request means no prefix request
}

TEST_F(session_test, split_turn_runs_both_requests_and_one_failure_cancels_the_other)
{
    const auto t = split_turn_session();
    summarizer_->push({script_step::succeed, "## Goal\nhistory"});
    summarizer_->push({script_step::succeed, "## Original Request\nprefix"});
    auto parallel = config(350);
    parallel.concurrent_summaries = true;  // opt-in: both requests at once
    auto s = open_file(t.text, parallel);
    auto ok = compact(*s);
    run_until([&] { return ok->done; });
    ASSERT_TRUE(ok->outcome.compacted) << ok->outcome.message;
    ASSERT_EQ(summarizer_->calls(), 2u);
    EXPECT_NE(summarizer_->prompts()[1].prompt.find("## Original Request"), std::string::npos);
    EXPECT_EQ(summarizer_->prompts()[1].max_output_tokens, 32000u);  // Pi 1.6: the same budget rule
    EXPECT_EQ(
        ok->outcome.result->summary.find(
            "## Goal\nhistory\n\n---\n\n**Turn Context (split turn):**\n\n## Original Request\nprefix"
        ),
        0u
    );
    EXPECT_NE(ok->outcome.result->summary.find("<read-files>"), std::string::npos);

    // Now the history request hangs and the prefix request fails: the hanging one is cancelled.
    summarizer_ = std::make_shared<test::scripted_summarizer>(ioc_.get_executor());
    summarizer_->push({script_step::hang});
    summarizer_->push({script_step::stop_error});
    auto cfg2 = config(350);
    cfg2.concurrent_summaries = true;
    auto s2 = open_file(t.text, cfg2, "s2.jsonl");
    const auto before = file();
    auto bad = compact(*s2);
    run_until([&] { return bad->done; });
    EXPECT_EQ(bad->ec, compaction::make_error_code(compaction::errc::summary_failed));
    EXPECT_EQ(summarizer_->cancellations(), 1);
    EXPECT_EQ(file(), before);
}

TEST_F(session_test, manual_compaction_aborts_a_running_automatic_one)
{
    summarizer_->push({script_step::hang});
    auto s = open_file(base_text(), config());
    auto autor = turn_end(*s, assistant_json("ok", 190000));
    run_until([&] { return summarizer_->calls() == 1; });
    auto manual = compact(*s);
    run_until([&] { return autor->done && manual->done; });
    EXPECT_EQ(autor->ec, make_error_code(errc::cancelled));
    EXPECT_TRUE(manual->outcome.compacted) << manual->outcome.message;
    const auto text = file();
    std::size_t n = 0;
    for (std::size_t p = 0; (p = text.find("\"type\":\"compaction\"", p)) != std::string::npos; ++p)
        ++n;
    EXPECT_EQ(n, 1u);
    EXPECT_EQ(
        events_.lines,
        (std::vector<std::string>{"start:threshold", "end:threshold:aborted", "start:manual", "end:manual:ok"}
        )
    );
}

TEST_F(session_test, manual_compaction_raises_the_turn_abort_signal)
{
    auto s = open_file(base_text(), config());
    bool turn_aborted = false;
    asio::post(s->get_executor(), [&] {
        s->turn_abort_slot().assign([&](asio::cancellation_type) { turn_aborted = true; });
    });
    auto r = compact(*s);
    run_until([&] { return r->done; });
    EXPECT_TRUE(turn_aborted);
}

TEST_F(session_test, concurrent_manual_compactions_share_one)
{
    summarizer_->push({script_step::succeed, "## Goal\nshared", std::chrono::milliseconds(50)});
    auto s = open_file(base_text(), config());
    auto a = compact(*s);
    auto b = compact(*s);
    run_until([&] { return a->done && b->done; });
    EXPECT_EQ(summarizer_->calls(), 1u);
    ASSERT_TRUE(a->outcome.compacted);
    EXPECT_EQ(a->outcome.entry_id, b->outcome.entry_id);
}

TEST_F(session_test, an_append_during_compaction_survives_and_stays_in_context)
{
    summarizer_->push({script_step::succeed, "## Goal\nx", std::chrono::milliseconds(100)});
    auto s = open_file(base_text(), config());
    auto r = compact(*s);
    run_until([&] { return summarizer_->calls() == 1; });
    const auto id = append(*s, user_msg("typed while compacting"));
    run_until([&] { return r->done; });
    ASSERT_TRUE(r->outcome.compacted) << r->outcome.message;
    const auto snap = s->current();
    EXPECT_EQ(snap->messages.back().entry_id, id);  // in the retained suffix
    EXPECT_EQ(snap->leaf_id, r->outcome.entry_id);
    const auto text = file();
    EXPECT_LT(text.find("typed while compacting"), text.find("\"type\":\"compaction\""));
    EXPECT_NE(text.find("\"parentId\":\"" + id + "\""), std::string::npos);  // the compaction hangs off it
}

TEST_F(session_test, a_branch_switch_during_compaction_is_a_stale_plan)
{
    summarizer_->push({script_step::succeed, "## Goal\nx", std::chrono::milliseconds(100)});
    auto s = open_file(base_text(), config());
    const auto before = file();
    auto r = compact(*s);
    run_until([&] { return summarizer_->calls() == 1; });
    bool branched = false;
    s->async_branch_from("a1", [&](error_code ec) {
        EXPECT_FALSE(ec);
        branched = true;
    });
    run_until([&] { return branched && r->done; });
    EXPECT_EQ(r->ec, make_error_code(errc::stale_plan));
    EXPECT_EQ(file(), before);
    EXPECT_EQ(s->current()->leaf_id, "a1");
}

TEST_F(session_test, hooks_cancel_supply_a_validated_result_or_throw)
{
    {
        auto s = open_file(base_text(), config(), "hook1.jsonl");
        s->on_before_compact([](const before_compact_event&) {
            return before_compact_decision{.cancel = true};
        });
        const auto before = file();
        auto r = compact(*s);
        run_until([&] { return r->done; });
        EXPECT_EQ(r->ec, make_error_code(errc::hook_cancelled));
        EXPECT_EQ(file(), before);
        EXPECT_EQ(summarizer_->calls(), 0u);
        EXPECT_EQ(events_.lines.back(), "end:manual:aborted");
    }
    {
        events_.lines.clear();
        auto s = open_file(base_text(), config(), "hook2.jsonl");
        std::vector<std::string> order;
        s->on_before_compact([&](const before_compact_event& e) {
            order.push_back("first");
            EXPECT_FALSE(e.preparation.messages_to_summarize.empty());
            compaction::compaction_result custom;
            custom.summary = "CUSTOM SUMMARY";
            custom.tokens_before = 999;
            return before_compact_decision{.result = custom};
        });
        s->on_before_compact([&](const before_compact_event&) -> before_compact_decision {
            order.push_back("second");
            throw std::runtime_error("hook bug");
        });
        bool compacted_hook = false;
        s->on_compacted([&](const compacted_event& e) {
            compacted_hook = true;
            EXPECT_TRUE(e.from_hook);
            EXPECT_EQ(e.entry.summary, "CUSTOM SUMMARY");
        });
        auto r = compact(*s);
        run_until([&] { return r->done; });
        ASSERT_TRUE(r->outcome.compacted) << r->outcome.message;
        EXPECT_EQ(order, (std::vector<std::string>{"first", "second"}));  // the throwing hook is skipped
        EXPECT_TRUE(compacted_hook);
        EXPECT_EQ(summarizer_->calls(), 0u);
        EXPECT_NE(file().find("\"summary\":\"CUSTOM SUMMARY\""), std::string::npos);
        EXPECT_NE(file().find("\"tokensBefore\":999"), std::string::npos);
        EXPECT_NE(file().find("\"fromHook\":true"), std::string::npos);
    }
    {
        events_.lines.clear();
        auto s = open_file(base_text(), config(), "hook3.jsonl");
        s->on_before_compact([](const before_compact_event&) {
            compaction::compaction_result custom;
            custom.summary = "   ";  // invalid: validated like our own
            return before_compact_decision{.result = custom};
        });
        bool failed_hook = false;
        s->on_compact_failed([&](const compact_failed_event& e) {
            failed_hook = true;
            EXPECT_TRUE(e.from_hook);
            EXPECT_FALSE(e.will_retry);
        });
        const auto before = file();
        auto r = compact(*s);
        run_until([&] { return r->done; });
        EXPECT_EQ(r->ec, compaction::make_error_code(compaction::errc::summary_empty));
        EXPECT_TRUE(failed_hook);
        EXPECT_EQ(file(), before);
    }
    {
        auto s = open_file(base_text(), config(), "hook4.jsonl");
        s->on_before_compact([](const before_compact_event&) -> before_compact_decision {
            throw std::runtime_error("boom");
        });
        auto r = compact(*s);
        run_until([&] { return r->done; });
        EXPECT_TRUE(r->outcome.compacted);  // the default compaction still runs
        EXPECT_EQ(summarizer_->calls(), 1u);
    }
}

TEST_F(session_test, insufficient_reduction_pauses_automatic_compaction_until_the_covered_history_changes)
{
    auto c = config(20000);  // keeps nearly everything
    c.model.context_window = 40000;
    c.settings.reserve_tokens = 38000;  // threshold 2000; the cut keeps at most 1000 (half for the summary)
    summarizer_->set_default(
        {.text = "## Goal\nKeep the parser fast. " + tokens(1100) + "\n\n## Next Steps\n1. Benchmark it."}
    );
    test::session_text t;
    t.user("u0", tokens(100)).assistant("a0", tokens(100));
    for (int i = 1; i < 15; ++i)
        t.user("u" + std::to_string(i), tokens(100)).assistant("a" + std::to_string(i), tokens(100));
    c.settings.keep_recent_tokens = 2800;
    auto s = open_file(t.text, c);
    auto first = turn_end(*s, assistant_json("ok", 2400));  // over the threshold, under the window
    run_until([&] { return first->done; });
    EXPECT_EQ(first->ec, compaction::make_error_code(compaction::errc::insufficient_reduction))
        << first->outcome.message;
    EXPECT_NE(first->outcome.message.find("paused until it or the settings change"), std::string::npos);
    EXPECT_EQ(summarizer_->calls(), 1u);
    auto again = turn_end(*s, assistant_json("ok", 2400));
    run_until([&] { return again->done; });
    EXPECT_EQ(again->ec, make_error_code(errc::auto_compaction_paused));
    EXPECT_EQ(summarizer_->calls(), 1u);  // not attempted twice on an unchanged path
    append(
        *s, {{"type", "custom"}, {"customType", "host.note"}, {"data", json::object{{"n", 1}}}}
    );  // not in context: the same prefix
    auto same = turn_end(*s, assistant_json("ok", 2400));
    run_until([&] { return same->done; });
    EXPECT_EQ(same->ec, make_error_code(errc::auto_compaction_paused));
    EXPECT_EQ(summarizer_->calls(), 1u);
    // The cut keeps at most 1000 tokens (half the 2000 allowance is the summary's): with 300 more
    // it moves from u10 to a11, another prefix. Turn 11 is split: a history and a prefix request.
    append(*s, user_msg(tokens(300)));
    auto third = turn_end(*s, assistant_json("ok", 2400));
    run_until([&] { return third->done; });
    EXPECT_EQ(third->ec, compaction::make_error_code(compaction::errc::insufficient_reduction));
    EXPECT_EQ(summarizer_->calls(), 3u);
}

TEST_F(session_test, a_deterministic_failure_pauses_the_same_prefix_until_it_changes_and_manual_always_tries)
{
    summarizer_->set_default({script_step::truncated});  // the same prefix is cut off the same way
    auto s = open_file(base_text(), config());
    auto first = turn_end(*s, assistant_json("ok", 190000));
    run_until([&] { return first->done; });
    EXPECT_EQ(first->ec, compaction::make_error_code(compaction::errc::summary_truncated))
        << first->outcome.message;
    EXPECT_EQ(summarizer_->calls(), 1u);
    // A new entry that leaves the covered prefix (and the settings) as they were: still paused.
    append(*s, {{"type", "custom"}, {"customType", "host.note"}, {"data", json::object{{"n", 1}}}});
    events_.lines.clear();
    auto again = turn_end(*s, assistant_json("ok", 190000));
    run_until([&] { return again->done; });
    EXPECT_EQ(again->ec, make_error_code(errc::auto_compaction_paused)) << again->outcome.message;
    EXPECT_EQ(summarizer_->calls(), 1u);
    EXPECT_TRUE(events_.lines.empty());  // no lifecycle for a paused check
    // A manual compaction always tries; its failure changes nothing for the automatic ones.
    auto manual = compact(*s);
    run_until([&] { return manual->done; });
    EXPECT_EQ(manual->ec, compaction::make_error_code(compaction::errc::summary_truncated));
    EXPECT_EQ(summarizer_->calls(), 2u);
    auto still = turn_end(*s, assistant_json("ok", 190000));
    run_until([&] { return still->done; });
    EXPECT_EQ(still->ec, make_error_code(errc::auto_compaction_paused));
    EXPECT_EQ(summarizer_->calls(), 2u);
    // A new turn moves the cut: another prefix, tried again (and it succeeds).
    summarizer_->set_default({script_step::succeed});
    append(*s, user_msg(tokens(500)));  // the cut moves to this turn (no split turn)
    const auto reply = assistant_json("done", 190000, "stop", 1768467900000);
    append(*s, {{"type", "message"}, {"message", reply}});
    auto third = turn_end(*s, reply);
    run_until([&] { return third->done; });
    EXPECT_FALSE(third->ec) << third->outcome.message;
    EXPECT_TRUE(third->outcome.compacted);
    EXPECT_EQ(summarizer_->calls(), 3u);
}

TEST_F(session_test, thousand_sessions_compact_concurrently_on_one_thread)
{
    const std::string text = base_text(6);
    summarizer_->set_default({script_step::succeed, "## Goal\nconcurrent", std::chrono::milliseconds(5)});
    std::vector<std::shared_ptr<session>> sessions;
    std::vector<std::shared_ptr<outcome_result>> results;
    std::vector<runtime::memory_store*> stores;
    for (int i = 0; i < 1000; ++i)
    {
        auto store = std::make_unique<memory_store>(text);
        stores.push_back(store.get());
        compaction::diagnostics diag;
        auto s = session::open(ioc_.get_executor(), std::move(store), config(), diag).value();
        results.push_back(compact(*s));
        sessions.push_back(std::move(s));
    }
    // A thousand compactions take about a second here, and 20 to 40 s under TSan on a busy machine: the
    // bound that fails the test is wider than the common one.
    test::run_until(
        ioc_,
        [&] { return std::all_of(results.begin(), results.end(), [](const auto& r) { return r->done; }); },
        std::chrono::seconds(180)
    );
    for (std::size_t i = 0; i < sessions.size(); ++i)
    {
        ASSERT_TRUE(results[i]->outcome.compacted) << i << " " << results[i]->outcome.message;
        EXPECT_EQ(sessions[i]->current()->messages[0].msg->role, compaction::role::compaction_summary);
        EXPECT_NE(stores[i]->text().find("\"type\":\"compaction\""), std::string::npos);
    }
    EXPECT_EQ(summarizer_->calls(), 1000u);
}

TEST_F(session_test, closed_sessions_refuse_work)
{
    auto s = open_file(base_text(2), config());
    s->close();
    bool done = false;
    error_code ec;
    s->async_append(user_msg("late"), [&](error_code e, std::string) {
        done = true;
        ec = e;
    });
    run_until([&] { return done; });
    EXPECT_EQ(ec, make_error_code(errc::session_closed));
}

TEST_F(session_test, many_threads_append_compact_and_read_snapshots)
{
    // For TSan: the io_context runs on 4 threads; each session's strand serializes its state,
    // while a reader thread takes snapshots lock-free.
    summarizer_->set_default({script_step::succeed, "## Goal\nthreads", std::chrono::milliseconds(2)});
    const std::string text = base_text(6);
    std::vector<std::shared_ptr<session>> sessions;
    for (int i = 0; i < 200; ++i)
    {
        compaction::diagnostics diag;
        sessions.push_back(
            session::open(ioc_.get_executor(), std::make_unique<memory_store>(text), config(), diag).value()
        );
    }
    std::atomic<int> done{0};
    for (auto& s : sessions)
    {
        s->async_append(user_msg("before"), [&](error_code ec, std::string) { EXPECT_FALSE(ec); });
        s->async_compact(std::nullopt, [&](error_code ec, compaction_outcome o) {
            EXPECT_FALSE(ec) << o.message;
            ++done;
        });
        s->async_append(user_msg("during"), [&](error_code ec, std::string) { EXPECT_FALSE(ec); });
    }
    std::atomic<bool> stop{false};
    std::thread reader([&] {
        std::size_t seen = 0;
        while (!stop)
            for (const auto& s : sessions)
            {
                const auto snap = s->current();
                seen += snap->messages.size() + static_cast<std::size_t>(snap->context_tokens() > 0);
            }
        EXPECT_GT(seen, 0u);
    });
    std::vector<std::thread> pool;
    auto guard = asio::make_work_guard(ioc_);
    ioc_.restart();
    for (int i = 0; i < 4; ++i)
        pool.emplace_back([this] { ioc_.run(); });
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (done < 200 && std::chrono::steady_clock::now() < limit)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    guard.reset();
    ioc_.stop();
    for (auto& t : pool)
        t.join();
    stop = true;
    reader.join();
    EXPECT_EQ(done.load(), 200);
    for (const auto& s : sessions)
    {
        const auto snap = s->current();
        EXPECT_EQ(snap->messages[0].msg->role, compaction::role::compaction_summary);
        EXPECT_EQ(compaction::content_text(snap->messages.back().msg->content), "during");
    }
}

TEST_F(session_test, a_cancellation_emitted_right_after_initiation_is_not_lost)
{
    auto s = open_file(base_text(), config());
    const auto before = file();
    asio::cancellation_signal sig;
    auto r = compact(*s, std::nullopt, sig.slot());
    sig.emit(asio::cancellation_type::terminal);  // before the strand has seen the request
    run_until([&] { return r->done; });
    EXPECT_EQ(r->ec, make_error_code(errc::cancelled));
    EXPECT_EQ(summarizer_->calls(), 0u);  // the model was never asked
    EXPECT_EQ(file(), before);

    // A joined caller cancelled at once: only its wait ends; the shared compaction commits.
    summarizer_->push({script_step::succeed, "## Goal\nshared", std::chrono::milliseconds(50)});
    auto first = compact(*s);
    asio::cancellation_signal sig2;
    auto second = compact(*s, std::nullopt, sig2.slot());
    sig2.emit(asio::cancellation_type::terminal);
    run_until([&] { return first->done && second->done; });
    EXPECT_EQ(second->ec, make_error_code(errc::cancelled));
    EXPECT_TRUE(first->outcome.compacted) << first->outcome.message;
}

// ---- Pi 1.6 lifecycle -----------------------------------------------------------

namespace {}  // namespace

TEST_F(session_test, overflow_recovery_omits_the_failed_attempt_then_compacts)
{
    auto s = open_file(base_text(), config());
    const auto overflow = assistant_json(
        "",
        0,
        "error",
        4102444800000.0,
        "claude-sonnet-4-5",
        "prompt is too long: 210000 tokens > 200000 maximum"
    );
    const auto failed = append(*s, {{"type", "message"}, {"message", overflow}});
    auto r = turn_end(*s, overflow);
    run_until([&] { return r->done; });
    ASSERT_TRUE(r->outcome.compacted) << r->outcome.message;
    EXPECT_TRUE(r->outcome.will_retry);
    const auto lines = test::json_lines(file());
    ASSERT_GE(lines.size(), 3u);
    // The log reads: assistant(error), context_edit(null) for it, compaction.
    const auto& edit = lines[lines.size() - 2];
    EXPECT_EQ(edit.at("type"), "context_edit");
    EXPECT_EQ(edit.at("targetId").as_string(), failed);
    EXPECT_TRUE(edit.at("replacement").is_null());
    EXPECT_EQ(lines.back().at("type"), "compaction");
    for (const auto& m : s->context())
        EXPECT_NE(m.entry_id, failed);  // the retry's request is built without the failed attempt
}

TEST_F(session_test, failed_recovery_keeps_the_omission_and_writes_nothing_else)
{
    summarizer_->push({script_step::stop_error});
    auto s = open_file(base_text(), config());
    const auto overflow = assistant_json(
        "",
        0,
        "error",
        4102444800000.0,
        "claude-sonnet-4-5",
        "prompt is too long: 210000 tokens > 200000 maximum"
    );
    const auto failed = append(*s, {{"type", "message"}, {"message", overflow}});
    const auto before = file();
    auto r = turn_end(*s, overflow);
    run_until([&] { return r->done; });
    EXPECT_FALSE(r->outcome.compacted);
    const auto after = file();
    ASSERT_EQ(after.compare(0, before.size(), before), 0);  // append-only
    const auto added = test::json_lines(after.substr(before.size()));
    ASSERT_EQ(added.size(), 1u);
    EXPECT_EQ(added[0].at("type"), "context_edit");
    EXPECT_EQ(added[0].at("targetId").as_string(), failed);
}

TEST_F(session_test, an_early_length_stop_is_recovered_a_full_one_is_not)
{
    auto cfg = config();
    cfg.model.max_output_tokens = 64000;
    auto s = open_file(base_text(), cfg);
    auto full = assistant_json("partial", 0, "length", 4102444800000.0);
    full["usage"] = json::object{
        {"input", 1000}, {"output", 64000}, {"cacheRead", 0}, {"cacheWrite", 0}, {"totalTokens", 65000}};
    append(*s, {{"type", "message"}, {"message", full}});
    auto no = turn_end(*s, full);
    run_until([&] { return no->done; });
    EXPECT_FALSE(no->outcome.attempted);
    auto early = assistant_json("partial", 0, "length", 4102444800001.0);
    early["usage"] = json::object{
        {"input", 1000}, {"output", 63999}, {"cacheRead", 0}, {"cacheWrite", 0}, {"totalTokens", 64999}};
    const auto id = append(*s, {{"type", "message"}, {"message", early}});
    auto yes = turn_end(*s, early);
    run_until([&] { return yes->done; });
    EXPECT_TRUE(yes->outcome.compacted) << yes->outcome.message;
    EXPECT_TRUE(yes->outcome.will_retry);
    const auto lines = test::json_lines(file());
    EXPECT_EQ(lines[lines.size() - 2].at("targetId").as_string(), id);
}

TEST_F(session_test, the_mid_run_check_measures_new_tool_results_before_they_are_sent)
{
    test::session_text t;
    for (int i = 0; i < 10; ++i)
        t.user("u" + std::to_string(i), tokens(100)).assistant("a" + std::to_string(i), tokens(100));
    t.tool_call("call", "k1", "read", {{"path", "big.log"}});
    auto cfg = config();
    cfg.model.context_window = 20000;
    cfg.settings.reserve_tokens = 2000;
    auto s = open_file(t.text, cfg);
    auto last = assistant_json("", 14790, "toolUse", 1768467900000);
    last["content"] = json::array{json::object{
        {"type", "toolCall"}, {"id", "k2"}, {"name", "read"}, {"arguments", json::object{{"path", "x"}}}}};
    append(*s, {{"type", "message"}, {"message", last}});
    append(
        *s,
        {{"type", "message"},
         {"message",
          json::object{
              {"role", "toolResult"},
              {"toolCallId", "k2"},
              {"toolName", "read"},
              {"content", json::array{json::object{{"type", "text"}, {"text", std::string(51289, 'r')}}}},
              {"isError", false},
              {"timestamp", 1768467900001}}}}
    );
    EXPECT_EQ(s->current()->context_tokens(), 14790 + 12823);  // last usage + ceil(51289 / 4)
    std::optional<compaction_outcome> out;
    s->async_between_turns([&](error_code, compaction_outcome o) { out = std::move(o); });
    run_until([&] { return out.has_value(); });
    EXPECT_TRUE(out->compacted) << out->message;
    EXPECT_EQ(out->reason, compaction_reason::threshold);
    EXPECT_EQ(out->result->tokens_before, 14790 + 12823);
}

TEST_F(session_test, context_edit_writer_rules_in_pis_order)
{
    auto s = open_file(base_text(2), config());
    auto try_append = [&](json::object f) {
        error_code ec;
        bool done = false;
        s->async_append(std::move(f), [&](error_code e, std::string) {
            ec = e;
            done = true;
        });
        run_until([&] { return done; });
        return ec;
    };
    const auto before = file();
    for (const json::value& bad :
         {json::value(json::object{}), json::value(json::object{{"content", 5}}), json::value("bare")})
        EXPECT_EQ(
            try_append({{"type", "context_edit"}, {"targetId", "nope"}, {"replacement", bad}}),
            make_error_code(compaction::errc::wrong_type)
        );  // the replacement is checked first
    EXPECT_EQ(
        try_append({{"type", "context_edit"}, {"targetId", "nope"}, {"replacement", nullptr}}),
        make_error_code(compaction::errc::entry_not_found)
    );
    EXPECT_EQ(file(), before);
    const auto sys = append(
        *s,
        {{"type", "message"},
         {"message", json::object{{"role", "system"}, {"content", ""}, {"timestamp", 1}}}}
    );
    EXPECT_EQ(
        try_append({{"type", "context_edit"}, {"targetId", sys}, {"replacement", nullptr}}),
        make_error_code(compaction::errc::wrong_type)
    );  // not editable
    append(
        *s, {{"type", "context_edit"}, {"targetId", "a1"}, {"replacement", json::object{{"content", "A"}}}}
    );
    append(
        *s, {{"type", "context_edit"}, {"targetId", "u1"}, {"replacement", json::object{{"content", "U"}}}}
    );
    const auto lines = test::json_lines(file());
    EXPECT_EQ(
        json::serialize(lines[lines.size() - 2].at("replacement")),
        R"({"content":[{"type":"text","text":"A"}]})"
    );
    EXPECT_EQ(json::serialize(lines.back().at("replacement")), R"({"content":"U"})");
    // The snapshot applies the edits at once.
    for (const auto& m : s->context())
    {
        if (m.entry_id == "u1")
        {
            EXPECT_EQ(compaction::content_text(m.msg->content), "U");
        }
    }
    // Off the active branch: move the leaf before u1's edit target branch.
    bool branched = false;
    s->async_branch_from("a0", [&](error_code) { branched = true; });
    run_until([&] { return branched; });
    EXPECT_EQ(
        try_append({{"type", "context_edit"}, {"targetId", "u1"}, {"replacement", nullptr}}),
        make_error_code(compaction::errc::entry_not_found)
    );
}

TEST_F(session_test, a_compaction_carries_the_replayed_system_prompt)
{
    test::session_text t;
    t.system(
        "s0",
        {{"pre", "You are helpful."}},
        {json::object{{"name", "read"}, {"description", "Read"}, {"parameters", json::object{}}}}
    );
    for (int i = 0; i < 10; ++i)
        t.user("u" + std::to_string(i), tokens(100)).assistant("a" + std::to_string(i), tokens(100));
    auto s = open_file(t.text, config());
    ASSERT_TRUE(s->current()->system);
    EXPECT_EQ(s->current()->system->sections.size(), 1u);
    auto r = compact(*s);
    run_until([&] { return r->done; });
    ASSERT_TRUE(r->outcome.compacted) << r->outcome.message;
    const auto c = test::json_lines(file()).back();
    ASSERT_TRUE(c.contains("systemMessage"));
    const auto& sm = c.at("systemMessage").as_object();
    EXPECT_EQ(json::serialize(sm.at("sections")), R"({"pre":"You are helpful."})");
    EXPECT_EQ(sm.at("toolsAdded").as_array().size(), 1u);
    EXPECT_EQ(
        sm.at("timestamp").to_number<double>(),
        *compaction::parse_iso_timestamp(c.at("timestamp").as_string())
    );
    std::vector<std::string> keys;
    for (const auto& kv : c)
        keys.emplace_back(kv.key());
    EXPECT_EQ(keys.back(), "systemMessage");  // Pi 1.6 field order
    // Projected from the file: the checkpoint first, then the summary.
    const auto ctx = s->context();
    ASSERT_GE(ctx.size(), 2u);
    EXPECT_EQ(ctx[0].msg->role, compaction::role::system);
    EXPECT_EQ(ctx[1].msg->role, compaction::role::compaction_summary);
}

TEST_F(session_test, an_automatic_compaction_with_nothing_to_prepare_emits_nothing)
{
    auto s = open_file(base_text(2), config(20000));  // keep 20000: everything stays verbatim
    auto r = turn_end(*s, assistant_json("ok", 190000, "stop", 4102444800000.0));
    run_until([&] { return r->done; });
    EXPECT_FALSE(r->ec);
    EXPECT_FALSE(r->outcome.compacted);
    EXPECT_TRUE(events_.lines.empty());  // no compaction_start, no compaction_end
    EXPECT_EQ(summarizer_->calls(), 0u);
    auto m = compact(*s);  // a manual one reports it
    run_until([&] { return m->done; });
    EXPECT_EQ(m->ec, compaction::make_error_code(compaction::errc::nothing_to_compact));
}

TEST_F(session_test, secrets_never_reach_the_summarizer_or_the_committed_summary)
{
    // Fake keys of the right shapes, built here so none is committed verbatim.
    const std::string github = "ghp_" + std::string(36, 'a').replace(3, 5, "Zq7x9");
    const std::string aws = "AKIA" + std::string("Q7X2M9K4P1R8T6W3");
    test::session_text t;
    t.user("u0", "deploy with token " + github + " please " + tokens(100));
    t.assistant("a0", tokens(100));
    for (int i = 1; i < 10; ++i)
        t.user("u" + std::to_string(i), tokens(100)).assistant("a" + std::to_string(i), tokens(100));
    summarizer_->push({script_step::succeed, "## Goal\nDeploy; the key was " + aws});
    auto s = open_file(t.text, config());
    auto r = compact(*s);
    run_until([&] { return r->done; });
    ASSERT_TRUE(r->outcome.compacted) << r->outcome.message;
    ASSERT_EQ(summarizer_->calls(), 1u);
    const std::string sent = summarizer_->prompts()[0].prompt;  // prompts() returns a copy
    EXPECT_EQ(sent.find(github), std::string::npos);
    EXPECT_NE(sent.find("[REDACTED:github_token]"), std::string::npos);
    const auto line = test::json_lines(file()).back();
    const std::string summary(line.at("summary").as_string());
    EXPECT_EQ(summary.find(aws), std::string::npos);
    EXPECT_NE(summary.find("[REDACTED:aws_access_key_id]"), std::string::npos);
    EXPECT_EQ(
        json::serialize(line.at("details").at("agentctx").at("redactions")),
        R"({"aws_access_key_id":1,"github_token":1})"
    );
    // The session file itself is never rewritten: the original line still holds the token.
    EXPECT_NE(file().find(github), std::string::npos);
}

TEST_F(session_test, pinned_reminders_stay_verbatim_through_repeated_compactions)
{
    test::session_text t;
    t.user("u0", tokens(100)).assistant("a0", tokens(100));
    t.entry(
        "custom_message",
        "rem",
        {{"customType", "reminder"}, {"content", "Never push to main."}, {"display", false}}
    );
    for (int i = 1; i < 10; ++i)
        t.user("u" + std::to_string(i), tokens(100)).assistant("a" + std::to_string(i), tokens(100));
    summarizer_->push({script_step::succeed, "## Goal\nfirst"});
    summarizer_->push({script_step::succeed, "## Goal\nsecond"});
    auto c = config();
    c.pins.custom_types = {"reminder"};
    auto s = open_file(t.text, c);
    auto customs = [&] {
        std::vector<std::string> out;
        for (const auto& m : s->context())
            if (m.msg->role == compaction::role::custom)
                out.push_back(compaction::content_text(m.msg->content));
        return out;
    };
    auto r = compact(*s);
    run_until([&] { return r->done; });
    ASSERT_TRUE(r->outcome.compacted) << r->outcome.message;
    // The summarizer neither sees the reminder as history nor is left unaware that it is kept.
    const std::string sent = summarizer_->prompts()[0].prompt;
    EXPECT_EQ(sent.find("Never push to main."), std::string::npos);
    EXPECT_NE(sent.find("<kept-verbatim>\n1 pinned entry (reminder)"), std::string::npos) << sent;
    // agentctx: the reminder right after the summary; Pi: the labelled block in the summary.
    const auto ctx = s->context();
    ASSERT_GE(ctx.size(), 2u);
    EXPECT_EQ(ctx[0].msg->role, compaction::role::compaction_summary);
    EXPECT_EQ(ctx[1].msg->custom_type, "reminder");
    EXPECT_EQ(customs(), std::vector<std::string>{"Never push to main."});
    auto line = test::json_lines(file()).back();
    EXPECT_NE(
        std::string(line.at("summary").as_string()).find("[reminder]\nNever push to main."), std::string::npos
    );
    EXPECT_EQ(line.at("details").at("agentctx").at("pinned").as_array().size(), 1u);

    for (int i = 10; i < 20; ++i)
    {
        const double at = 1768467900000.0 + i * 1000;
        append(
            *s,
            {{"type", "message"},
             {"message", json::object{{"role", "user"}, {"content", tokens(100)}, {"timestamp", at}}}}
        );
        append(
            *s,
            {{"type", "message"},
             {"message",
              json::object{
                  {"role", "assistant"},
                  {"content", json::array{json::object{{"type", "text"}, {"text", tokens(100)}}}},
                  {"api", "anthropic-messages"},
                  {"provider", "anthropic"},
                  {"model", "claude-sonnet-4-5"},
                  {"stopReason", "stop"},
                  {"timestamp", at + 500}}}}
        );
    }
    auto r2 = compact(*s);
    run_until([&] { return r2->done; });
    ASSERT_TRUE(r2->outcome.compacted) << r2->outcome.message;
    EXPECT_EQ(summarizer_->prompts()[1].prompt.find("Never push to main."), std::string::npos);
    EXPECT_EQ(customs(), std::vector<std::string>{"Never push to main."});
    line = test::json_lines(file()).back();
    const std::string summary(line.at("summary").as_string());
    EXPECT_EQ(summary.find("Never push to main."), summary.rfind("Never push to main."));  // exactly once
    EXPECT_NE(summary.find("Never push to main."), std::string::npos);
}

TEST_F(session_test, a_required_entry_holds_the_cut_and_is_never_summarized)
{
    auto c = config();  // without requirements the cut is at u8
    c.required.ids = {"u5"};
    auto s = open_file(base_text(), c);
    auto r = compact(*s);
    run_until([&] { return r->done; });
    ASSERT_FALSE(r->ec) << r->ec.message() << " " << r->outcome.message;
    ASSERT_TRUE(r->outcome.result);
    EXPECT_EQ(r->outcome.result->first_kept_entry_id, "u5");
    ASSERT_EQ(summarizer_->calls(), 1u);
    // u0..a4 are summarized: five user and five assistant messages, nothing of u5 on.
    const std::string prompt = summarizer_->prompts()[0].prompt;
    std::size_t users = 0;
    for (auto at = prompt.find("[User]: "); at != std::string::npos; at = prompt.find("[User]: ", at + 1))
        ++users;
    EXPECT_EQ(users, 5u);
    const auto snap = s->current();
    ASSERT_GE(snap->messages.size(), 2u);
    EXPECT_EQ(snap->messages[1].entry_id, "u5");
}

TEST_F(session_test, a_compaction_that_required_entries_leave_nothing_to_summarize_fails_with_budget_exceeded)
{
    auto c = config();
    c.required.ids = {"u0"};
    auto s = open_file(base_text(), c);
    const auto& shortfalls = *capture_shortfalls(*s);
    const auto before = file();
    auto r = compact(*s);
    run_until([&] { return r->done; });
    EXPECT_EQ(r->ec, make_error_code(compaction::errc::budget_exceeded)) << r->ec.message();
    EXPECT_NE(r->outcome.message.find("required entry u0"), std::string::npos) << r->outcome.message;
    EXPECT_EQ(summarizer_->calls(), 0u);
    EXPECT_EQ(file(), before);
    // The numbers reach the host: ten turns of 2 x 100 tokens, all of them required.
    ASSERT_EQ(shortfalls.size(), 1u);
    EXPECT_EQ(shortfalls[0].reason, compaction_reason::manual);
    EXPECT_EQ(shortfalls[0].input_tokens, 2000);
    EXPECT_EQ(shortfalls[0].required_tokens, 2000);
    EXPECT_EQ(shortfalls[0].allowance, 200000 - 16384);
    EXPECT_EQ(shortfalls[0].required_entry_id, "u0");
    EXPECT_EQ(shortfalls[0].boundary_entry_id, "u0");
    EXPECT_EQ(shortfalls[0].required_position, 0u);
}

TEST_F(session_test, a_request_view_keeps_required_entries_and_reports_when_they_do_not_fit)
{
    auto c = config();
    c.required.ids = {"u5"};
    auto s = open_file(base_text(), c);
    const auto& shortfalls = *capture_shortfalls(*s);
    auto view = [&](std::int64_t max_tokens) {
        std::optional<compaction::fit_result> out;
        s->async_request_view({.max_tokens = max_tokens}, [&](error_code ec, compaction::fit_result r) {
            EXPECT_FALSE(ec);
            out = std::move(r);
        });
        run_until([&] { return out.has_value(); });
        return *out;
    };
    // Five turns of 200 tokens from u5 on must stay: 1000 tokens in a 700-token view.
    const auto tight = view(700);
    EXPECT_EQ(tight.reason, compaction::fit_reason::required_overflow);
    ASSERT_EQ(tight.kept_entry_ids.size(), 10u);
    EXPECT_EQ(tight.kept_entry_ids.front(), "u5");
    ASSERT_EQ(shortfalls.size(), 1u);
    EXPECT_TRUE(shortfalls[0].request_view);
    EXPECT_EQ(shortfalls[0].input_tokens, 2000);
    EXPECT_EQ(shortfalls[0].required_tokens, 1000);
    EXPECT_EQ(shortfalls[0].allowance, 700);
    EXPECT_EQ(shortfalls[0].required_entry_id, "u5");
    EXPECT_EQ(shortfalls[0].required_position, 10u);
    EXPECT_EQ(shortfalls[0].boundary_entry_id, "u0");
    // With room for them, older turns are trimmed as usual and nothing is reported.
    const auto roomy = view(1100);
    EXPECT_EQ(roomy.reason, compaction::fit_reason::trimmed);
    EXPECT_EQ(roomy.kept_entry_ids.front(), "u5");
    EXPECT_FALSE(roomy.shortfall.has_value());
    EXPECT_EQ(shortfalls.size(), 1u);
}

TEST_F(session_test, branching_with_a_summary_writes_pis_branch_summary_entry)
{
    summarizer_->set_default({script_step::succeed, "## Goal\nApproach B"});
    auto s = open_file(base_text(4), config());  // u0 a0 u1 a1 u2 a2 u3 a3, leaf a3
    auto navigate = [&](const std::string& to, bool summarize) {
        std::optional<std::pair<error_code, std::string>> out;
        s->async_branch_from(to, summarize, [&](error_code ec, std::string id) {
            out.emplace(ec, std::move(id));
        });
        run_until([&] { return out.has_value(); });
        return *out;
    };
    // A failed summary moves nothing and writes nothing.
    summarizer_->push({script_step::truncated});
    const auto before = file();
    const auto failed = navigate("u2", true);
    EXPECT_EQ(failed.first, compaction::make_error_code(compaction::errc::summary_truncated))
        << failed.second;
    EXPECT_EQ(file(), before);
    EXPECT_EQ(s->current()->leaf_id, "a3");
    // Back to u2, a user message: the leaf is its parent a1, and a2 u3 a3 are summarized.
    const auto [ec, id] = navigate("u2", true);
    ASSERT_FALSE(ec) << id;
    ASSERT_EQ(summarizer_->calls(), 2u);
    const auto prompt = summarizer_->prompts()[1];
    EXPECT_TRUE(prompt.prompt.starts_with("<conversation>\n[Assistant]: "));  // a2, then u3 and a3
    EXPECT_EQ(prompt.prompt.find("[User]: "), prompt.prompt.rfind("[User]: "));
    EXPECT_TRUE(prompt.prompt.ends_with(std::string(compaction::branch_summary_instructions)));
    EXPECT_EQ(prompt.system_prompt, compaction::summarization_system_prompt);
    const auto line = test::json_lines(file()).back();
    EXPECT_EQ(line.at("type"), "branch_summary");
    EXPECT_EQ(line.at("id").as_string(), id);
    EXPECT_EQ(line.at("parentId"), "a1");
    EXPECT_EQ(line.at("fromId"), "a3");
    EXPECT_EQ(
        std::string(line.at("summary").as_string()),
        std::string(compaction::branch_summary_preamble) + "## Goal\nApproach B"
    );
    EXPECT_EQ(
        line.at("details"), (json::object{{"readFiles", json::array{}}, {"modifiedFiles", json::array{}}})
    );
    EXPECT_EQ(line.at("fromHook"), false);
    std::vector<std::string> keys;
    for (const auto& kv : line)
        keys.emplace_back(kv.key());
    EXPECT_EQ(
        keys,
        (std::vector<std::string>{
            "type", "id", "parentId", "timestamp", "fromId", "summary", "details", "fromHook"})
    );
    EXPECT_EQ(s->current()->leaf_id, id);
    EXPECT_EQ(s->current()->messages.back().msg->role, compaction::role::branch_summary);
    // Without a summary the leaf only moves (not persisted), as Pi's branch().
    const auto lines = test::json_lines(file()).size();
    const auto plain = navigate("a0", false);
    EXPECT_FALSE(plain.first);
    EXPECT_TRUE(plain.second.empty());
    EXPECT_EQ(s->current()->leaf_id, "a0");
    EXPECT_EQ(test::json_lines(file()).size(), lines);
}

TEST_F(session_test, the_five_name_loop_appends_built_entries_and_checks_the_stored_reply)
{
    auto s = open_file(base_text(), config());
    append(*s, entries::user("run the tests"));
    entries::assistant_reply calling;
    calling.text = "Running them.";
    calling.tool_calls.push_back({"call_1", "bash", json::object{{"command", "make test"}}});
    calling.provider = "anthropic";
    calling.model = "claude-sonnet-4-5";
    calling.input_tokens = 1000;
    append(*s, entries::assistant(calling));
    append(*s, entries::tool_result("call_1", "bash", "2 failed", true));
    entries::assistant_reply done;
    done.text = "Two tests fail.";
    done.provider = "anthropic";
    done.model = "claude-sonnet-4-5";
    done.input_tokens = 183000;
    done.output_tokens = 617;  // 183,617: one token over contextWindow - reserveTokens
    append(*s, entries::assistant(done));
    const auto& msgs = s->current()->messages.to_vector();
    ASSERT_GE(msgs.size(), 4u);
    const auto n = msgs.size();
    EXPECT_EQ(msgs[n - 3].msg->role, compaction::role::assistant);
    EXPECT_EQ(msgs[n - 3].msg->stop_reason, compaction::stop_reason::tool_use);
    EXPECT_EQ(msgs[n - 2].msg->role, compaction::role::tool_result);
    EXPECT_TRUE(msgs[n - 2].msg->is_error);
    // No message to pass: the session checks the reply it stored.
    auto r = std::make_shared<outcome_result>();
    s->async_on_turn_end([r](error_code ec, compaction_outcome o) {
        r->done = true;
        r->ec = ec;
        r->outcome = std::move(o);
    });
    run_until([&] { return r->done; });
    EXPECT_TRUE(r->outcome.compacted) << r->outcome.message;
    EXPECT_EQ(r->outcome.reason, compaction_reason::threshold);
}

TEST_F(session_test, a_running_background_job_keeps_its_launch_through_a_compaction_and_the_summary_lists_it)
{
    test::session_text t;
    t.user("u0", tokens(100)).assistant("a0", tokens(100));
    t.user("u1", "build it");
    t.tool_call("l1", "call_1", "start_build", {{"target", "all"}});
    t.tool_result("l2", "call_1", "start_build", "queued job build-42");
    for (int i = 2; i < 10; ++i)
        t.user("u" + std::to_string(i), tokens(100)).assistant("a" + std::to_string(i), tokens(100));
    summarizer_->push({script_step::succeed, "## Goal\nbuild"});
    auto c = config();
    compaction::job_rule rule;
    rule.tools = {"start_build"};
    rule.id_source = compaction::job_rule::id_from::result_text;
    rule.id_pattern = "queued job ([a-z0-9-]+)";
    rule.completion_custom_types = {"job_done"};
    c.jobs.rules = {rule};
    auto s = open_file(t.text, c);
    auto r = compact(*s);
    run_until([&] { return r->done; });
    ASSERT_TRUE(r->outcome.compacted) << r->outcome.message;
    // The summarizer is told the launch is kept and never sees it as history.
    const std::string sent = summarizer_->prompts()[0].prompt;
    EXPECT_EQ(sent.find("queued job build-42"), std::string::npos);
    EXPECT_NE(
        sent.find("<kept-verbatim>\n2 pinned entries (running background job launch)"), std::string::npos
    ) << sent;
    const auto ctx = s->context();
    ASSERT_GE(ctx.size(), 3u);
    EXPECT_EQ(ctx[0].msg->role, compaction::role::compaction_summary);
    EXPECT_EQ(ctx[1].msg->role, compaction::role::assistant);
    EXPECT_EQ(ctx[2].msg->role, compaction::role::tool_result);
    EXPECT_EQ(ctx[2].msg->tool_call_id, "call_1");
    const auto line = test::json_lines(file()).back();
    EXPECT_EQ(line.at("details").at("agentctx").at("pinned").as_array().size(), 2u);
    EXPECT_NE(
        std::string(line.at("summary").as_string())
            .find("<running-jobs>\nBackground jobs still running (their launch is kept verbatim after this "
                  "summary):\n- job build-42: `start_build` (call call_1), queued or running; no completion "
                  "recorded\n</running-jobs>"),
        std::string::npos
    ) << line.at("summary");
}
