// Test fixture: an agent server in this process over loopback, every answer checked against
// docs/openapi.json.
#pragma once

#include "server.hpp"

#include <agentctx/providers/http_client.hpp>
#include <agentctx/providers/offline_summarizer.hpp>
#include <agentctx/runtime/error.hpp>
#include <agentctx/runtime/jsonl_store.hpp>

#include "file_text.hpp"
#include "server_contract.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

namespace agentctx::test {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using boost::system::error_code;

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
    void start(
        std::function<std::shared_ptr<providers::summarizer>(asio::any_io_executor)> make = {},
        std::int64_t window = 200000,
        std::int64_t reserve = 16384
    )
    {
        dir_ = fs::temp_directory_path() / ("agentctx-server-" + std::to_string(::getpid()) + "-" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        server::server_options o;
        o.data_dir = dir_;
        o.host.model = {"anthropic", "claude-sonnet-4-5", window, 0};
        o.host.settings.compaction.keep_recent_tokens = 200;
        o.host.settings.compaction.reserve_tokens = reserve;
        o.host.make_summarizer = make ? make : [](asio::any_io_executor ex) {
            return std::make_shared<providers::offline_summarizer>(ex);
        };
        if (tweak_)
            tweak_(o);
        server_ = std::make_unique<server::agent_server>(server_ioc_, o);
        port_ = server_->start();
        server_thread_ = std::thread([this] { server_ioc_.run(); });
        for (int i = 1; i < server_threads_; ++i)
            extra_threads_.emplace_back([this] { server_ioc_.run(); });
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
            for (auto& t : extra_threads_)
                t.join();
            server_.reset();
        }
        fs::remove_all(dir_);
    }

    std::shared_ptr<reply> request(
        const std::string& method, const std::string& path, const std::string& body = ""
    )
    {
        auto r = std::make_shared<reply>();
        providers::http_request req;
        req.method = method;
        req.url = "http://127.0.0.1:" + std::to_string(port_) + path;
        req.body = body;
        req.headers.emplace_back("content-type", "application/json");
        const openapi_check* contract = contract_ ? contract_.get() : &server_contract();
        client_->async_request(
            std::move(req),
            [r, method, path, contract](error_code ec, providers::http_response res) {
                // Every answer a test receives must agree with the OpenAPI document.
                if (!ec)
                    if (auto why = contract_violation(
                            method, path, res.status, res.header("content-type"), res.body, *contract
                        );
                        !why.empty())
                        ADD_FAILURE() << method << " " << path << " -> " << res.status << ": " << why << "\n"
                                      << res.body;
                r->done = true;
                r->ec = ec;
                r->res = std::move(res);
            }
        );
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

    std::shared_ptr<reply> sync(
        const std::string& method, const std::string& path, const std::string& body = ""
    )
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
        return R"({"type":"message","message":{"role":"assistant","content":[{"type":"text","text":")" +
               text + R"("}],"provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":)" +
               std::to_string(total - 10) + R"(,"output":10,"totalTokens":)" + std::to_string(total) +
               R"(},"stopReason":"stop","timestamp":)" + std::to_string(static_cast<long long>(ts)) + "}}";
    }

    // Descriptors this process has open (the server runs in it).
    static std::size_t open_descriptors()
    {
        std::size_t n = 0;
        for ([[maybe_unused]] const auto& e : fs::directory_iterator("/proc/self/fd"))
            ++n;
        return n;
    }

    // True when the server has the session open: its file's writer lock is taken.
    bool open_in_server(const std::string& id) const
    {
        compaction::diagnostics diag;
        auto s = runtime::jsonl_store::open(dir_ / (id + ".jsonl"), {}, diag);
        return !s && s.error() == runtime::make_error_code(runtime::errc::session_locked);
    }

    // A session's event stream, read into `text` until `stop()`; subscribed when this returns.
    struct event_subscription
    {
        std::string text;
        boost::asio::cancellation_signal stop_signal;
        bool done = false;
    };
    std::unique_ptr<event_subscription> subscribe(const std::string& id)
    {
        auto sub = std::make_unique<event_subscription>();
        providers::http_request sse;
        sse.method = "GET";
        sse.url = "http://127.0.0.1:" + std::to_string(port_) + "/v1/sessions/" + id + "/events";
        sse.on_data = [s = sub.get()](std::string_view chunk) { s->text.append(chunk); };
        client_->async_request(
            std::move(sse),
            boost::asio::bind_cancellation_slot(
                sub->stop_signal.slot(),
                [s = sub.get()](error_code, providers::http_response) { s->done = true; }
            )
        );
        run_until([s = sub.get()] { return s->text.find(": subscribed") != std::string::npos; });
        return sub;
    }
    void unsubscribe(event_subscription& sub)
    {
        sub.stop_signal.emit(boost::asio::cancellation_type::terminal);
        run_until([&] { return sub.done; });
    }

    std::string new_session()
    {
        auto r = sync("POST", "/v1/sessions");
        EXPECT_EQ(r->res.status, 201) << r->res.body;
        return r->res.status == 201 ? std::string(r->json().at("id").as_string()) : std::string();
    }

    std::shared_ptr<const openapi_check> contract_;       ///< set to check answers against another document
    std::function<void(server::server_options&)> tweak_;  ///< set before start() to change options
    int server_threads_ = 1;                              ///< set before start() to run more io threads
    std::vector<std::thread> extra_threads_;
    asio::io_context server_ioc_;
    asio::executor_work_guard<asio::io_context::executor_type> guard_ = asio::make_work_guard(server_ioc_);
    std::thread server_thread_;
    std::unique_ptr<server::agent_server> server_;
    std::uint16_t port_ = 0;
    fs::path dir_;
    asio::io_context ioc_{1};
    std::unique_ptr<providers::http_client> client_ =
        std::make_unique<providers::http_client>(ioc_.get_executor());
};

}  // namespace agentctx::test
