// The agent server over loopback: concurrent clients, events, automatic checks, errors.
#include "server.hpp"

#include <agentctx/providers/http_client.hpp>
#include <agentctx/providers/offline_summarizer.hpp>

#include "scripted_summarizer.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <sys/resource.h>
#include <thread>

using namespace agentctx;
namespace asio = boost::asio;
namespace fs = std::filesystem;
using boost::system::error_code;

namespace {

struct reply
{
    bool done = false;
    error_code ec;
    providers::http_response res;
    boost::json::value json() const { return boost::json::parse(res.body); }
};

class agent_server_test : public ::testing::Test
{
protected:
    void start(std::function<std::shared_ptr<providers::summarizer>(asio::any_io_executor)> make = {}, std::int64_t window = 200000,
               std::int64_t reserve = 16384)
    {
        dir_ = fs::temp_directory_path() / ("agentctx-server-" + std::to_string(::getpid()) + "-" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        server::server_options o;
        o.data_dir = dir_;
        o.model = {"anthropic", "claude-sonnet-4-5", window, 0};
        o.settings.keep_recent_tokens = 200;
        o.settings.reserve_tokens = reserve;
        o.make_summarizer = make ? make : [](asio::any_io_executor ex) { return std::make_shared<providers::offline_summarizer>(ex); };
        server_ = std::make_unique<server::agent_server>(server_ioc_, o);
        port_ = server_->start();
        server_thread_ = std::thread([this] { server_ioc_.run(); });
    }

    void TearDown() override
    {
        client_.reset();
        if (server_)
        {
            asio::post(server_ioc_, [this] { server_->stop(); });
            guard_.reset();
            server_ioc_.stop();
            server_thread_.join();
            server_.reset();
        }
        fs::remove_all(dir_);
    }

    std::shared_ptr<reply> request(const std::string& method, const std::string& path, const std::string& body = "")
    {
        auto r = std::make_shared<reply>();
        providers::http_request req;
        req.method = method;
        req.url = "http://127.0.0.1:" + std::to_string(port_) + path;
        req.body = body;
        req.headers.emplace_back("content-type", "application/json");
        client_->async_request(std::move(req), [r](error_code ec, providers::http_response res) {
            r->done = true;
            r->ec = ec;
            r->res = std::move(res);
        });
        return r;
    }

    template <class Pred>
    void run_until(Pred p, std::chrono::seconds limit = std::chrono::seconds(120))
    {
        const auto end = std::chrono::steady_clock::now() + limit;
        ioc_.restart();
        while (!p() && std::chrono::steady_clock::now() < end)
            ioc_.run_one_for(std::chrono::milliseconds(20));
        ASSERT_TRUE(p()) << "timed out";
    }

    std::shared_ptr<reply> sync(const std::string& method, const std::string& path, const std::string& body = "")
    {
        auto r = request(method, path, body);
        run_until([&] { return r->done; });
        return r;
    }

    std::string file(const std::string& id) const
    {
        std::ifstream f(dir_ / (id + ".jsonl"), std::ios::binary);
        std::stringstream ss;
        ss << f.rdbuf();
        return ss.str();
    }

    static std::string user(const std::string& text)
    {
        return R"({"type":"message","message":{"role":"user","content":")" + text + R"(","timestamp":1}})";
    }

    static std::string assistant(const std::string& text, int total, double ts = 4102444800000.0)
    {
        return R"({"type":"message","message":{"role":"assistant","content":[{"type":"text","text":")" + text +
               R"("}],"provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":)" + std::to_string(total - 10) +
               R"(,"output":10,"totalTokens":)" + std::to_string(total) + R"(},"stopReason":"stop","timestamp":)" +
               std::to_string(static_cast<long long>(ts)) + "}}";
    }

    asio::io_context server_ioc_;
    asio::executor_work_guard<asio::io_context::executor_type> guard_ = asio::make_work_guard(server_ioc_);
    std::thread server_thread_;
    std::unique_ptr<server::agent_server> server_;
    std::uint16_t port_ = 0;
    fs::path dir_;
    asio::io_context ioc_{1};
    std::unique_ptr<providers::http_client> client_ = std::make_unique<providers::http_client>(ioc_.get_executor());
};

}  // namespace

TEST_F(agent_server_test, concurrent_clients_every_accepted_entry_is_on_disk_and_in_context)
{
    rlimit lim{};
    getrlimit(RLIMIT_NOFILE, &lim);
    if (lim.rlim_cur < 4096 && lim.rlim_max >= 4096)
    {
        lim.rlim_cur = 4096;
        setrlimit(RLIMIT_NOFILE, &lim);
    }
    start();
    constexpr int sessions = 200, per_session = 20, batch = 25;
    std::vector<std::string> ids;
    for (int i = 0; i < sessions; ++i)
    {
        auto r = sync("POST", "/v1/sessions", R"({"cwd":"/work"})");
        ASSERT_EQ(r->res.status, 201) << r->res.body;
        ids.push_back(std::string(r->json().at("id").as_string()));
    }
    std::map<std::string, std::set<std::string>> accepted;
    for (int b = 0; b < sessions; b += batch)
    {
        std::vector<std::pair<std::string, std::shared_ptr<reply>>> inflight;
        for (int i = b; i < b + batch; ++i)
            for (int j = 0; j < per_session; ++j)
                inflight.emplace_back(ids[static_cast<std::size_t>(i)],
                                      request("POST", "/v1/sessions/" + ids[static_cast<std::size_t>(i)] + "/entries",
                                              user("s" + std::to_string(i) + "-m" + std::to_string(j))));
        run_until([&] { return std::all_of(inflight.begin(), inflight.end(), [](const auto& p) { return p.second->done; }); });
        for (const auto& [sid, r] : inflight)
        {
            ASSERT_FALSE(r->ec) << r->ec.message();
            ASSERT_EQ(r->res.status, 201) << r->res.body;
            accepted[sid].insert(std::string(r->json().at("id").as_string()));
        }
    }
    std::size_t total = 0;
    for (const auto& id : ids)
    {
        ASSERT_EQ(accepted[id].size(), static_cast<std::size_t>(per_session));
        const std::string text = file(id);
        auto ctx = sync("GET", "/v1/sessions/" + id + "/context");
        ASSERT_EQ(ctx->res.status, 200) << ctx->res.body;
        const auto ctx_json = ctx->json();  // range-for must not iterate into a temporary
        std::set<std::string> in_context;
        for (const auto& m : ctx_json.at("messages").as_array())
            in_context.insert(std::string(m.at("entryId").as_string()));
        for (const auto& e : accepted[id])
        {
            EXPECT_NE(text.find("\"id\":\"" + e + "\""), std::string::npos) << id << " " << e;
            EXPECT_TRUE(in_context.count(e)) << id << " " << e;
            ++total;
        }
    }
    EXPECT_EQ(total, static_cast<std::size_t>(sessions * per_session));
}

TEST_F(agent_server_test, compact_endpoint_and_event_stream)
{
    start();
    const auto id = std::string(sync("POST", "/v1/sessions")->json().at("id").as_string());
    for (int i = 0; i < 6; ++i)
    {
        ASSERT_EQ(sync("POST", "/v1/sessions/" + id + "/entries", user(std::string(400, 'u')))->res.status, 201);
        ASSERT_EQ(sync("POST", "/v1/sessions/" + id + "/entries", assistant(std::string(400, 'a'), 1000))->res.status, 201);
    }
    // Subscribe to the event stream first.
    std::string events;
    providers::http_request sse;
    sse.method = "GET";
    sse.url = "http://127.0.0.1:" + std::to_string(port_) + "/v1/sessions/" + id + "/events";
    sse.on_data = [&](std::string_view chunk) { events.append(chunk); };
    asio::cancellation_signal stop_sse;
    bool sse_done = false;
    client_->async_request(std::move(sse), asio::bind_cancellation_slot(stop_sse.slot(), [&](error_code, providers::http_response) { sse_done = true; }));
    run_until([&] { return events.find(": subscribed") != std::string::npos; });

    auto r = sync("POST", "/v1/sessions/" + id + "/compact", R"({"instructions":"keep the tests"})");
    ASSERT_EQ(r->res.status, 200) << r->res.body;
    const auto v = r->json();
    EXPECT_NE(std::string(v.at("summary").as_string()).find("## Goal"), std::string::npos);
    EXPECT_LT(v.at("tokensAfter").as_int64(), v.at("tokensBefore").as_int64());
    run_until([&] { return events.find("event: compaction_end") != std::string::npos; });
    EXPECT_LT(events.find("event: compaction_start\ndata: {\"reason\":\"manual\"}"), events.find("event: compaction_end"));
    auto ctx = sync("GET", "/v1/sessions/" + id + "/context")->json();
    EXPECT_EQ(ctx.at("messages").as_array()[0].at("role"), "compactionSummary");
    EXPECT_EQ(ctx.at("messages").as_array()[0].at("entryId"), v.at("entryId"));
    stop_sse.emit(asio::cancellation_type::terminal);
    run_until([&] { return sse_done; });
    // Compacting again right away: nothing to compact.
    EXPECT_EQ(sync("POST", "/v1/sessions/" + id + "/compact")->res.status, 409);
}

TEST_F(agent_server_test, automatic_threshold_check_after_an_assistant_message)
{
    start({}, 5000, 1000);  // threshold 4000
    const auto id = std::string(sync("POST", "/v1/sessions")->json().at("id").as_string());
    for (int i = 0; i < 5; ++i)
    {
        ASSERT_EQ(sync("POST", "/v1/sessions/" + id + "/entries", user(std::string(400, 'u')))->res.status, 201);
        // Usage 4500: over the threshold, under the window (not an overflow).
        ASSERT_EQ(sync("POST", "/v1/sessions/" + id + "/entries", assistant(std::string(400, 'a'), 4500, 1768467600000.0 + i))->res.status, 201);
    }
    // The automatic compaction runs after the reply; poll the context until it shows.
    run_until([&] {
        auto ctx = sync("GET", "/v1/sessions/" + id + "/context")->json();
        return ctx.at("messages").as_array()[0].at("role") == "compactionSummary";
    }, std::chrono::seconds(20));
    EXPECT_NE(file(id).find("\"reason\":\"threshold\""), std::string::npos);
}

TEST_F(agent_server_test, a_failed_compaction_loses_nothing)
{
    start([](asio::any_io_executor ex) {
        auto s = std::make_shared<test::scripted_summarizer>(ex);
        s->set_default({test::script_step::truncated});
        return s;
    });
    const auto id = std::string(sync("POST", "/v1/sessions")->json().at("id").as_string());
    for (int i = 0; i < 4; ++i)
    {
        sync("POST", "/v1/sessions/" + id + "/entries", user(std::string(400, 'u')));
        sync("POST", "/v1/sessions/" + id + "/entries", assistant(std::string(400, 'a'), 100));
    }
    const auto before = file(id);
    auto r = sync("POST", "/v1/sessions/" + id + "/compact");
    EXPECT_EQ(r->res.status, 422) << r->res.body;
    EXPECT_EQ(r->json().at("error").at("code"), "summary_truncated");
    EXPECT_EQ(file(id), before);
}

TEST_F(agent_server_test, bad_requests_get_4xx_with_a_json_error)
{
    start();
    const auto id = std::string(sync("POST", "/v1/sessions")->json().at("id").as_string());
    auto bad_json = sync("POST", "/v1/sessions/" + id + "/entries", "{not json");
    EXPECT_EQ(bad_json->res.status, 400);
    EXPECT_EQ(bad_json->json().at("error").at("code"), "invalid_json");
    auto wrong = sync("POST", "/v1/sessions/" + id + "/entries", R"({"type":"message","message":{"role":"user","content":5}})");
    EXPECT_EQ(wrong->res.status, 400);
    EXPECT_EQ(wrong->json().at("error").at("code"), "wrong_type");
    EXPECT_EQ(sync("GET", "/v1/sessions/nosuchsession/context")->res.status, 404);
    EXPECT_EQ(sync("GET", "/v1/sessions/..%2F..%2Fetc/context")->res.status, 404);
    EXPECT_EQ(sync("GET", "/v1/sessions/" + id + "/compact")->res.status, 405);
    EXPECT_EQ(sync("GET", "/v2/anything")->res.status, 404);
    EXPECT_EQ(sync("POST", "/v1/sessions/" + id + "/compact")->res.status, 409);  // nothing to compact yet
    EXPECT_EQ(file(id).find("\"content\":5"), std::string::npos);  // nothing bad was written
}
