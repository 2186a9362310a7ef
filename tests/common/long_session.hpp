// Test helper: a long Pi-format session of numbered turns (some with a tool round), for piecewise compaction.
#pragma once

#include "file_text.hpp"

#include "session_text.hpp"

#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <string>
#include <vector>

namespace agentctx::test {

/// The marker a turn's user message starts with (`MARK-007`), unique in the session.
inline std::string turn_marker(std::size_t i)
{
    std::string n = std::to_string(i);
    return "MARK-" + std::string(n.size() < 3 ? 3 - n.size() : 0, '0') + n;
}

/// `turns` turns: a user message (`MARK-iii` + `pad` chars), every third turn a tool call and
/// its result, then an assistant answer; the last assistant reports `usage_total` tokens.
inline std::string long_session(std::size_t turns, std::size_t pad = 300, std::int64_t usage_total = 5000)
{
    session_text s;
    for (std::size_t i = 0; i < turns; ++i)
    {
        const std::string n = std::to_string(i);
        s.user("u" + n, turn_marker(i) + " " + std::string(pad, 'q'));
        if (i % 3 == 2)
            s.tool_call(
                 "c" + n, "call" + n, "read", {{"path", "src/f" + n + ".ts"}}
            ).tool_result("r" + n, "call" + n, "read", "RESULT " + n + " " + std::string(pad, 'r'));
        s.assistant("a" + n, "answer " + n + " " + std::string(pad, 'a'), i + 1 == turns ? usage_total : 0);
    }
    return s.text;
}

/// A fresh scratch directory for the running test (`<tmp>/agentctx-<suite>-<pid>-<test>`) holding
/// `name` with long_session(turns); returns the file's path.
inline std::filesystem::path scratch_long_session(
    const std::string& suite, const std::string& name, std::size_t turns
)
{
    const auto dir = std::filesystem::temp_directory_path() /
                     ("agentctx-" + suite + "-" + std::to_string(::getpid()) + "-" +
                      ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    std::ofstream(dir / name, std::ios::binary) << long_session(turns);
    return dir / name;
}

/// The JSON objects of a JSONL text, one per non-empty line.
inline std::vector<boost::json::object> json_lines(const std::string& text)
{
    std::vector<boost::json::object> out;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);)
        if (!l.empty())
            out.push_back(boost::json::parse(l).as_object());
    return out;
}

}  // namespace agentctx::test
