// Test helper: appends one entry to a session and waits for it (the append must succeed).
#pragma once

#include <agentctx/runtime/session.hpp>

#include "run_until.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/json/object.hpp>

#include <gtest/gtest.h>

#include <string>

namespace agentctx::test {

/// The new entry's id; a refused append fails the test with the reason.
inline std::string append_entry(boost::asio::io_context& ioc, runtime::session& s, boost::json::object fields)
{
    std::string id;
    bool done = false;
    boost::system::error_code ec;
    s.async_append(std::move(fields), [&](boost::system::error_code e, std::string i) {
        done = true;
        ec = e;
        id = std::move(i);
    });
    run_until(ioc, [&] { return done; });
    EXPECT_FALSE(ec) << ec.message() << ": " << id;
    return id;
}

}  // namespace agentctx::test
