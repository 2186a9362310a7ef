// One cancellation vocabulary: the shared condition, the HTTP summarizer, and a session on top of it.
#include <agentctx/compaction/cancelled.hpp>
#include <agentctx/providers/http_summarizer.hpp>
#include <agentctx/runtime/error.hpp>
#include <agentctx/runtime/jsonl_store.hpp>
#include <agentctx/runtime/session.hpp>

#include "fake_provider_server.hpp"
#include "session_text.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <atomic>
#include <thread>
#include <vector>

using namespace agentctx;
namespace asio = boost::asio;
namespace fs = std::filesystem;
using boost::system::error_code;
using test::scripted_response;

TEST(cancelled_condition, every_module_and_asio_map_to_it)
{
    const auto cancelled = make_error_condition(errc_condition::cancelled);
    EXPECT_EQ(error_code(asio::error::operation_aborted), cancelled);
    EXPECT_EQ(providers::make_error_code(providers::errc::cancelled), cancelled);
    EXPECT_EQ(runtime::make_error_code(runtime::errc::cancelled), cancelled);
    EXPECT_TRUE(is_cancelled(asio::error::operation_aborted));
    EXPECT_TRUE(is_cancelled(runtime::make_error_code(runtime::errc::cancelled)));
    // Failures are not cancellations, nor is a model's own `aborted` stop or a hook's veto.
    EXPECT_FALSE(is_cancelled(providers::make_error_code(providers::errc::transient)));
    EXPECT_FALSE(is_cancelled(runtime::make_error_code(runtime::errc::hook_cancelled)));
    EXPECT_FALSE(is_cancelled(compaction::make_error_code(compaction::errc::summary_aborted)));
    EXPECT_FALSE(is_cancelled(asio::error::connection_reset));
    EXPECT_FALSE(is_cancelled(error_code{}));
    // Codes keep their own identity and message.
    EXPECT_NE(
        providers::make_error_code(providers::errc::cancelled),
        runtime::make_error_code(runtime::errc::cancelled)
    );
    EXPECT_EQ(runtime::make_error_code(runtime::errc::cancelled).message(), "cancelled");
    EXPECT_EQ(
        runtime::make_error_code(runtime::errc::io_error).default_error_condition(),
        boost::system::error_condition(static_cast<int>(runtime::errc::io_error), runtime::error_category())
    );
}

// The three modules share one category template: their names, messages and condition mapping.
TEST(module_error_categories, names_messages_and_conditions)
{
    EXPECT_STREQ(compaction::error_category().name(), "agentctx.compaction");
    EXPECT_STREQ(providers::error_category().name(), "agentctx.providers");
    EXPECT_STREQ(runtime::error_category().name(), "agentctx.runtime");
    EXPECT_EQ(compaction::make_error_code(compaction::errc::duplicate_id).message(), "duplicate_id");
    EXPECT_EQ(
        providers::make_error_code(providers::errc::response_too_large).message(), "response_too_large"
    );
    EXPECT_EQ(runtime::make_error_code(runtime::errc::session_locked).message(), "session_locked");
    EXPECT_EQ(error_code(999, runtime::error_category()).message(), "unknown");
    // Only the modules' own `cancelled` codes map to the shared condition; every other code is
    // its own condition (compaction has no cancelled code).
    for (int ev = 0; ev <= 30; ++ev)
    {
        const error_code c(ev, compaction::error_category());
        EXPECT_EQ(
            c.default_error_condition(), boost::system::error_condition(ev, compaction::error_category())
        ) << ev;
        EXPECT_FALSE(is_cancelled(c)) << ev;
        EXPECT_EQ(
            is_cancelled(error_code(ev, providers::error_category())),
            ev == static_cast<int>(providers::errc::cancelled)
        ) << ev;
        EXPECT_EQ(
            is_cancelled(error_code(ev, runtime::error_category())),
            ev == static_cast<int>(runtime::errc::cancelled)
        ) << ev;
    }
    // Codes of different modules never compare equal, even with equal values.
    EXPECT_NE(error_code(1, compaction::error_category()), error_code(1, runtime::error_category()));
    EXPECT_NE(compaction::error_category(), providers::error_category());
}

namespace {

compaction::message decode(const boost::json::object& m)
{
    compaction::diagnostics diag;
    return compaction::decode_message(m, "", diag).value();
}

boost::json::object assistant_json(std::int64_t total)
{
    return {
        {"role", "assistant"},
        {"content", boost::json::array{boost::json::object{{"type", "text"}, {"text", "ok"}}}},
        {"api", "openai-completions"},
        {"provider", "openai"},
        {"model", "test-model"},
        {"usage", test::session_text::usage(total)},
        {"stopReason", "stop"},
        {"timestamp", 1768467800000}};
}

struct outcome
{
    bool done = false;
    error_code ec;
    runtime::compaction_outcome out;
};

class http_cancellation_test : public ::testing::Test
{
protected:
    void SetUp() override
    {
        dir_ = fs::temp_directory_path() / ("agentctx-http-cancel-" + std::to_string(::getpid()) + "-" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }

    providers::provider_config config(bool stream = false)
    {
        providers::provider_config c;
        c.base_url = server_.base_url() + "/v1";
        c.model = "test-model";
        c.api_key = "sk-test";
        c.stream = stream;
        c.base_delay = std::chrono::milliseconds(10);
        return c;
    }

    std::shared_ptr<runtime::session> open(
        const std::string& name, const std::string& first_prompt_extra = {}
    )
    {
        test::session_text t;
        for (int i = 0; i < 10; ++i)
            t.user(
                 "u" + std::to_string(i),
                 (i == 0 ? first_prompt_extra : std::string()) + std::string(400, 'x')
            )
                .assistant("a" + std::to_string(i), std::string(400, 'y'));
        std::ofstream(dir_ / name, std::ios::binary) << t.text;
        compaction::diagnostics diag;
        auto store = runtime::jsonl_store::open(dir_ / name, {}, diag).value();
        runtime::session_config c;
        c.settings.keep_recent_tokens = 400;
        c.model = {"openai", "test-model", 200000, 0};
        c.summarizer = std::make_shared<providers::http_summarizer>(ioc_.get_executor(), config());
        auto s = runtime::session::open(ioc_.get_executor(), std::move(store), c, diag).value();
        s->on_event([this](const runtime::session_event& e) {
            if (const auto* end = std::get_if<runtime::compaction_end_event>(&e))
                ends_.push_back(end->aborted ? "aborted" : end->error_message ? "error" : "ok");
        });
        s->on_compact_failed([this](const runtime::compact_failed_event& e) {
            failed_hook_aborted_.push_back(e.aborted);
        });
        return s;
    }

    template <class Pred>
    void run_until(Pred p)
    {
        const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        ioc_.restart();
        while (!p() && std::chrono::steady_clock::now() < end)
            ioc_.run_one_for(std::chrono::milliseconds(20));
        ASSERT_TRUE(p()) << "timed out";
    }

    std::shared_ptr<outcome> compact(runtime::session& s, asio::cancellation_slot slot = {})
    {
        auto r = std::make_shared<outcome>();
        s.async_compact(
            std::nullopt,
            asio::bind_cancellation_slot(
                slot,
                [r](error_code ec, runtime::compaction_outcome o) {
                    r->done = true;
                    r->ec = ec;
                    r->out = std::move(o);
                }
            )
        );
        return r;
    }

    std::shared_ptr<outcome> turn_end(runtime::session& s)
    {
        auto r = std::make_shared<outcome>();
        s.async_on_turn_end(
            decode(assistant_json(190000)),
            [r](error_code ec, runtime::compaction_outcome o) {
                r->done = true;
                r->ec = ec;
                r->out = std::move(o);
            }
        );
        return r;
    }

    test::fake_provider_server server_;
    asio::io_context ioc_{1};
    fs::path dir_;
    std::vector<std::string> ends_;
    std::vector<bool> failed_hook_aborted_;
};

}  // namespace

TEST_F(http_cancellation_test, the_summarizer_completes_a_cancelled_request_with_operation_aborted)
{
    server_.push({.body = test::openai_body("late"), .delay = std::chrono::seconds(5)});
    providers::http_summarizer s(ioc_.get_executor(), config());
    asio::cancellation_signal sig;
    bool done = false;
    error_code got;
    s.async_summarize(
        compaction::summary_prompt{"SYS", "hi", 100},
        asio::bind_cancellation_slot(
            sig.slot(),
            [&](error_code ec, compaction::summary_output) {
                got = ec;
                done = true;
            }
        )
    );
    run_until([&] { return server_.requests().size() == 1; });
    sig.emit(asio::cancellation_type::terminal);
    run_until([&] { return done; });
    EXPECT_EQ(got, asio::error::operation_aborted) << got.message();
    EXPECT_EQ(s.client().live_transfers(), 0u);
}

// Cancelled while the reply arrives: whether the transfer or the retry sleep notices first, the
// result is operation_aborted (it used to throw at the next co_await: malformed_response).
TEST_F(http_cancellation_test, cancellation_during_a_retryable_reply_is_operation_aborted)
{
    server_.push(
        {.chunks =
             {"event: error\ndata: "
              "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"busy\"}}\n\n"}}
    );
    providers::http_summarizer s(ioc_.get_executor(), config(true));
    asio::cancellation_signal sig;
    s.on_progress([&](std::size_t) { sig.emit(asio::cancellation_type::terminal); });
    bool done = false;
    error_code got;
    s.async_summarize(
        compaction::summary_prompt{"SYS", "hi", 100},
        asio::bind_cancellation_slot(
            sig.slot(),
            [&](error_code ec, compaction::summary_output) {
                got = ec;
                done = true;
            }
        )
    );
    run_until([&] { return done; });
    EXPECT_EQ(got, asio::error::operation_aborted) << got.message();
    EXPECT_EQ(server_.requests().size(), 1u);  // no retry after the cancellation
}

TEST_F(http_cancellation_test, abort_close_and_the_callers_slot_are_cancellations_not_failures)
{
    for (int how = 1; how <= 3; ++how)  // 1 abort_compaction, 2 the caller's slot, 3 close
    {
        SCOPED_TRACE(how);
        ends_.clear();
        failed_hook_aborted_.clear();
        server_.push({.body = test::openai_body("## Goal\nlate"), .delay = std::chrono::seconds(5)});
        auto s = open("s" + std::to_string(how) + ".jsonl");
        const auto before = s->current();
        const auto seen = server_.requests().size();
        asio::cancellation_signal sig;
        auto r = compact(*s, sig.slot());
        run_until([&] { return server_.requests().size() == seen + 1; });
        if (how == 1)
            s->abort_compaction();
        else if (how == 2)
            sig.emit(asio::cancellation_type::terminal);
        else
            s->close();
        run_until([&] { return r->done; });
        EXPECT_EQ(r->ec, runtime::make_error_code(runtime::errc::cancelled))
            << r->ec.message() << " " << r->out.message;
        EXPECT_TRUE(is_cancelled(r->ec));
        EXPECT_FALSE(r->out.compacted);
        EXPECT_EQ(s->current(), before);
        EXPECT_EQ(ends_, std::vector<std::string>{"aborted"});
        EXPECT_EQ(failed_hook_aborted_, std::vector<bool>{true});
        s->close();
        run_until([] { return true; });
    }
}

TEST_F(http_cancellation_test, an_aborted_automatic_compaction_does_not_pause_the_next_one)
{
    server_.push({.body = test::openai_body("## Goal\nlate"), .delay = std::chrono::seconds(5)});
    server_.push({.body = test::openai_body("## Goal\nsecond attempt")});
    auto s = open("auto.jsonl");
    auto first = turn_end(*s);
    run_until([&] { return server_.requests().size() == 1; });
    s->abort_compaction();
    run_until([&] { return first->done; });
    EXPECT_EQ(first->ec, runtime::make_error_code(runtime::errc::cancelled))
        << first->ec.message() << " " << first->out.message;
    EXPECT_EQ(ends_, std::vector<std::string>{"aborted"});
    // Same path, no new entries: a failure would pause automatic compaction; a cancellation must not.
    auto second = turn_end(*s);
    run_until([&] { return second->done; });
    EXPECT_NE(second->ec, runtime::make_error_code(runtime::errc::auto_compaction_paused));
    EXPECT_FALSE(second->ec) << second->ec.message() << " " << second->out.message;
    EXPECT_TRUE(second->out.compacted);
    s->close();
    run_until([] { return true; });
}

TEST_F(http_cancellation_test, no_secret_reaches_a_provider_request_body)
{
    // Fake keys of the right shapes, built here.
    const std::string openai =
        "sk-proj-" + std::string("Tq9ZvX2mK7pL4rW8sN3bF6hJ1cD5gY0e") + "A1b2C3d4E5f6G7h8";
    const std::string aws = "AKIA" + std::string("Q7X2M9K4P1R8T6W3");
    server_.push({.body = test::openai_body("## Goal\nDeploy with " + aws)});
    auto s = open("secret.jsonl", "use this key: " + openai + " and then ");
    auto r = compact(*s);
    run_until([&] { return r->done; });
    ASSERT_FALSE(r->ec) << r->ec.message() << " " << r->out.message;
    // "use this key: ..." reads as a rule the reply leaves out: the recall gate's follow-up is a
    // second request, which carries the rule redacted too.
    ASSERT_EQ(server_.requests().size(), 2u);
    for (const auto& req : server_.requests())
    {
        EXPECT_EQ(req.body.find(openai), std::string::npos);
        EXPECT_NE(req.body.find("[REDACTED:openai_api_key]"), std::string::npos);
    }
    EXPECT_NE(server_.requests()[1].body.find("Your checkpoint above leaves out"), std::string::npos);
    ASSERT_TRUE(r->out.result);
    EXPECT_EQ(r->out.result->summary.find(aws), std::string::npos);  // the model's echo is scrubbed too
    EXPECT_EQ(r->out.result->summary.find(openai), std::string::npos);
}

TEST_F(http_cancellation_test, a_failed_request_explains_itself_in_the_outcome)
{
    // The provider's account (cause, attempts) reaches the host through the summarizer
    // interface: the CLI prints outcome.message and never reaches into http_summarizer.
    server_.set_default(
        {.status = 401, .body = R"({"error":{"message":"bad key sk-test","type":"invalid_api_key"}})"}
    );
    auto s = open("failed.jsonl");
    const auto before = s->current();
    auto r = compact(*s);
    run_until([&] { return r->done; });
    EXPECT_EQ(r->ec, providers::make_error_code(providers::errc::auth)) << r->ec.message();
    EXPECT_EQ(r->out.message.rfind("summary request failed: auth (", 0), 0u) << r->out.message;
    EXPECT_NE(r->out.message.find("1 attempt(s))"), std::string::npos) << r->out.message;
    EXPECT_EQ(r->out.message.find("sk-test"), std::string::npos) << r->out.message;
    EXPECT_EQ(s->current(), before);
    EXPECT_EQ(ends_, std::vector<std::string>{"error"});
    s->close();
    run_until([] { return true; });
}

// One client shared by callers on other strands and threads (a server's http_client_pool): each
// completes on its own strand, and cancelling one stops only its transfer.
TEST(shared_http_client, callers_on_other_strands_complete_there_and_cancel_independently)
{
    test::fake_provider_server server;
    scripted_response slow;
    slow.body = "done";
    slow.delay = std::chrono::milliseconds(300);
    server.set_default(slow);
    asio::io_context ioc;
    auto client = std::make_shared<providers::http_client>(asio::make_strand(ioc));
    constexpr int callers = 6;
    std::vector<asio::strand<asio::io_context::executor_type>> strands;
    std::vector<asio::cancellation_signal> signals(callers);
    std::vector<error_code> results(callers);
    std::vector<std::string> bodies(callers);
    std::atomic<int> done{0}, on_own_strand{0};
    for (int i = 0; i < callers; ++i)
        strands.push_back(asio::make_strand(ioc));
    for (int i = 0; i < callers; ++i)
        asio::post(strands[i], [&, i] {
            providers::http_request req;
            req.method = "GET";
            req.url = server.base_url() + "/x";
            client->async_request(
                std::move(req),
                asio::bind_cancellation_slot(
                    signals[i].slot(),
                    asio::bind_executor(
                        strands[i],
                        [&, i](error_code ec, providers::http_response r) {
                            on_own_strand += strands[i].running_in_this_thread() ? 1 : 0;
                            results[i] = ec;
                            bodies[i] = r.body;
                            ++done;
                        }
                    )
                )
            );
        });
    // Caller 0 cancels (on its own strand, where its slot lives) once every request reached the server.
    std::thread waiter([&] {
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (server.requests().size() < callers && std::chrono::steady_clock::now() < until)
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        asio::post(strands[0], [&] { signals[0].emit(asio::cancellation_type::terminal); });
    });
    std::thread second([&] { ioc.run(); });
    ioc.run();
    second.join();
    waiter.join();
    EXPECT_EQ(done, callers);
    EXPECT_EQ(on_own_strand, callers);
    EXPECT_EQ(results[0], asio::error::operation_aborted);
    for (int i = 1; i < callers; ++i)
    {
        EXPECT_FALSE(results[i]) << i << ": " << results[i].message();
        EXPECT_EQ(bodies[i], "done") << i;
    }
    EXPECT_EQ(client->live_transfers(), 0u);  // the io_context stopped: read after its threads joined
}
