// Opens a runtime::session over a JSONL file for a test; a failure fails the test with its message.
#pragma once

#include <agentctx/runtime/jsonl_store.hpp>
#include <agentctx/runtime/session.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include <unistd.h>

namespace agentctx::test {

/// A new session file holding only a v3 header, in the temporary directory, named after
/// `prefix`, the process and the running test.
inline std::filesystem::path new_session_file(const std::string& prefix)
{
    const auto path = std::filesystem::temp_directory_path() /
                      (prefix + "-" + std::to_string(::getpid()) + "-" +
                       ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".jsonl");
    std::ofstream(path
    ) << R"({"type":"session","version":3,"id":"s1","timestamp":"2026-01-15T09:00:00.000Z","cwd":"/"})"
      << '\n';
    return path;
}

/// The session, or null (with a test failure naming the cause) when the store or the session
/// cannot be opened.
inline std::shared_ptr<runtime::session> open_session(
    boost::asio::any_io_executor ex, const std::filesystem::path& path, runtime::session_config config
)
{
    compaction::diagnostics diag;
    auto store = runtime::jsonl_store::open(path, {}, diag);
    if (!store)
    {
        ADD_FAILURE() << "cannot open the store: " << diag.message;
        return nullptr;
    }
    auto s = runtime::session::open(std::move(ex), std::move(*store), std::move(config), diag);
    if (!s)
    {
        ADD_FAILURE() << "cannot open the session: " << diag.message;
        return nullptr;
    }
    return *s;
}

}  // namespace agentctx::test
