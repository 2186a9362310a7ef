// The PostgreSQL store suites' fixture: two nodes (pools) on the throwaway cluster, and
// import/export/open/append helpers.
#pragma once

#include "pg_test_support.hpp"
#include "scripted_summarizer.hpp"
#include "session_text.hpp"

#include <agentctx/compaction/entry.hpp>
#include <agentctx/runtime/error.hpp>
#include <agentctx/runtime/session.hpp>

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace agentctx::test {

/// `n` user messages chained after the leaf of the session `text`, each with a fresh id (or all
/// with `id`). A store gives its text to its one load, so the tests keep the text they stored.
inline std::vector<compaction::entry_ptr> next_entries(
    const std::string& text, std::size_t n, std::optional<std::string> id = {}
)
{
    compaction::diagnostics diag;
    compaction::load_report report;
    auto log = compaction::session_log::load(text, {}, report, diag);
    EXPECT_TRUE(log) << diag.message;
    std::vector<compaction::entry_ptr> out;
    std::optional<std::string> parent = log->leaf_id();
    for (std::size_t i = 0; i < n; ++i)
    {
        const std::string eid = id ? *id : log->new_id() + std::to_string(i);
        auto e = compaction::make_message_entry(
            eid,
            parent,
            compaction::iso_timestamp_now(),
            {{"role", "user"}, {"content", "next " + std::to_string(i)}, {"timestamp", 1}},
            diag
        );
        EXPECT_TRUE(e) << diag.message;
        out.push_back(std::make_shared<const compaction::entry>(std::move(*e)));
        parent = eid;
    }
    return out;
}

namespace pg_fixture_detail {
using namespace agentctx::runtime;
namespace asio = boost::asio;
namespace json = boost::json;
using boost::system::error_code;

class pg_store_fixture : public ::testing::Test
{
protected:
    void SetUp() override
    {
        std::string why;
        auto url = agentctx::test::pg_conninfo(why);
        if (!url)
            GTEST_SKIP() << why;
        url_ = *url;
        node_a_ = std::make_unique<pg_pool>(ioc_.get_executor(), url_);
        node_b_ = std::make_unique<pg_pool>(ioc_.get_executor(), url_);
        ASSERT_EQ(migrate(*node_a_), error_code{});
        ASSERT_EQ(migrate(*node_b_), error_code{}) << "a second migration is a no-op";
    }

    error_code migrate(pg_pool& p)
    {
        std::optional<std::pair<error_code, std::string>> r;
        p.async_migrate([&](error_code ec, std::string m) { r.emplace(ec, std::move(m)); });
        EXPECT_TRUE(agentctx::test::run_until(ioc_, [&] { return r.has_value(); }));
        EXPECT_FALSE(r->first) << r->second;
        return r->first;
    }

    std::pair<error_code, std::string> import(pg_pool& p, std::string text)
    {
        std::optional<std::pair<error_code, std::string>> r;
        p.async_import(std::move(text), [&](error_code ec, std::string m) { r.emplace(ec, std::move(m)); });
        EXPECT_TRUE(agentctx::test::run_until(ioc_, [&] { return r.has_value(); }));
        return *r;
    }

    std::pair<error_code, std::string> export_text(pg_pool& p, std::string id)
    {
        std::optional<std::pair<error_code, std::string>> r;
        p.async_export(std::move(id), [&](error_code ec, std::string m) { r.emplace(ec, std::move(m)); });
        EXPECT_TRUE(agentctx::test::run_until(ioc_, [&] { return r.has_value(); }));
        return *r;
    }

    std::unique_ptr<pg_store> open_store(pg_pool& p, const std::string& id)
    {
        std::optional<error_code> done;
        std::unique_ptr<pg_store> st;
        p.async_open(id, [&](error_code ec, std::unique_ptr<pg_store> s, std::string m) {
            EXPECT_FALSE(ec) << m;
            st = std::move(s);
            done = ec;
        });
        EXPECT_TRUE(agentctx::test::run_until(ioc_, [&] { return done.has_value(); }));
        return st;
    }

    session_config config()
    {
        session_config c;
        c.settings.keep_recent_tokens = 400;
        c.model = {"anthropic", "claude-sonnet-4-5", 200000, 0};
        c.summarizer = summarizer_;
        return c;
    }

    std::shared_ptr<session> open_session(pg_pool& p, const std::string& id)
    {
        auto st = open_store(p, id);
        compaction::diagnostics diag;
        auto s = session::open(ioc_.get_executor(), std::move(st), config(), diag);
        EXPECT_TRUE(s) << diag.message;
        return *s;
    }

    std::pair<error_code, std::string> append(session& s, json::object fields)
    {
        std::optional<std::pair<error_code, std::string>> r;
        s.async_append(std::move(fields), [&](error_code ec, std::string id) {
            r.emplace(ec, std::move(id));
        });
        EXPECT_TRUE(agentctx::test::run_until(ioc_, [&] { return r.has_value(); }));
        return *r;
    }

    static json::object user(const std::string& text)
    {
        return {{"type", "message"}, {"message", {{"role", "user"}, {"content", text}, {"timestamp", 1}}}};
    }

    std::string ten_turns(const std::string& id)
    {
        agentctx::test::session_text s(3, id);
        for (int i = 0; i < 10; ++i)
            s.user("u" + std::to_string(i), tokens(100))
                .assistant("a" + std::to_string(i), tokens(100), i == 9 ? 2000 : 0);
        return s.text;
    }

    asio::io_context ioc_;
    std::string url_;
    std::unique_ptr<pg_pool> node_a_, node_b_;
    std::shared_ptr<agentctx::test::scripted_summarizer> summarizer_ =
        std::make_shared<agentctx::test::scripted_summarizer>(ioc_.get_executor());
};

}  // namespace pg_fixture_detail

using pg_fixture_detail::pg_store_fixture;

}  // namespace agentctx::test
