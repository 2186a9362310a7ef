// Classifies tool calls (probe, edit, command, check) and judges tool results (failed or not).
#include "tools.hpp"

#include "facts.hpp"
#include "text.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <regex>

namespace agentctx::providers::offline {

namespace {

bool one_of(std::string_view s, std::initializer_list<std::string_view> set)
{
    return std::find(set.begin(), set.end(), s) != set.end();
}

std::string first_word(std::string_view s)
{
    const auto t = one_line(s);
    return t.substr(0, t.find(' '));
}

// Shell segments split on && || ; and |.
std::vector<std::string> segments(std::string_view cmd)
{
    std::vector<std::string> out;
    std::string cur;
    for (std::size_t i = 0; i < cmd.size(); ++i)
    {
        const char c = cmd[i];
        if (c == ';' || c == '|' || c == '&' || c == '\n')
        {
            if (auto t = one_line(cur); !t.empty())
                out.push_back(t);
            cur.clear();
        }
        else
            cur += c;
    }
    if (auto t = one_line(cur); !t.empty())
        out.push_back(t);
    return out;
}

bool probe_segment(const std::string& seg)
{
    const auto w = first_word(seg);
    if (w == "git")
    {
        const auto rest = first_word(seg.substr(std::min(seg.size(), std::size_t{4})));
        return one_of(rest, {"status", "diff", "log", "show", "blame", "grep"});
    }
    if (w == "sed")
        return seg.find(" -i") == std::string::npos;
    return one_of(w, {"ls",   "grep", "cat",  "find", "rg",   "head",  "tail", "wc",   "pwd",
                      "tree", "less", "file", "stat", "echo", "which", "cd",   "awk",  "fd",
                      "ag",   "du",   "nl",   "sort", "uniq", "cut",   "jq",   "xargs"});
}

bool check_command(const std::string& cmd)
{
    const auto l = lower(cmd);
    return has_any_word(
               l,
               {"test",
                "tests",
                "pytest",
                "ctest",
                "jest",
                "vitest",
                "mocha",
                "tsc",
                "lint",
                "eslint",
                "make",
                "cmake",
                "build",
                "cargo",
                "go vet",
                "mypy",
                "ruff",
                "check"}
           ) ||
           l.find("test") != std::string::npos;
}

// Drops phrases that mention failure words in a passing report ("0 tests failed", "errors: 0").
std::string without_passing_counts(const std::string& l)
{
    static const std::regex passing(
        R"((\b0 (\w+ )?(failed|failures?|errors?|fail)\b)|(\b(failed|failures|errors?|fail)(ed)?\s*[:=]\s*0\b)|)"
        R"((\b(no|without) (errors?|failures?)\b)|(exit(ed with)? code:? 0\b))"
    );
    return std::regex_replace(l, passing, " ");
}

}  // namespace

std::string command_of(const tool_call& c)
{
    auto cmd = c.arg("command");
    if (cmd.empty())
        cmd = c.arg("cmd");
    return one_line(cmd);
}

std::string path_of(const tool_call& c)
{
    for (std::string_view k : {"path", "file_path", "filePath", "file", "filename"})
        if (auto p = c.arg(k); !p.empty())
            return one_line(p);
    return {};
}

call_kind kind_of(const tool_call& c)
{
    const auto n = lower(c.name);
    if (one_of(
            n,
            {"read",
             "read_file",
             "view",
             "cat",
             "ls",
             "glob",
             "grep",
             "find",
             "search",
             "list",
             "list_files",
             "rg",
             "list_dir",
             "search_files"}
        ))
        return call_kind::probe;
    if (one_of(
            n,
            {"edit",
             "write",
             "str_replace",
             "apply_patch",
             "multiedit",
             "multi_edit",
             "create",
             "write_file",
             "edit_file",
             "str_replace_editor",
             "patch"}
        ))
        return call_kind::edit;
    const auto cmd = command_of(c);
    if (cmd.empty())
        return call_kind::other;
    const auto segs = segments(cmd);
    if (!segs.empty() && std::all_of(segs.begin(), segs.end(), probe_segment))
        return call_kind::probe;
    return check_command(cmd) ? call_kind::check : call_kind::command;
}

std::string key_of(const tool_call& c)
{
    const auto cmd = command_of(c);
    return cmd.empty() ? lower(c.name) + " " + path_of(c) : cmd;
}

bool reports_failure(std::string_view result)
{
    static constexpr std::array<std::string_view, 18> failure_words = {
        "error",
        "errors",
        "fail",
        "failed",
        "failing",
        "failure",
        "failures",
        "exception",
        "panic",
        "traceback",
        "no such file",
        "segmentation fault",
        "assertionerror",
        "command exited with code",
        "could not find",
        "not found",
        "undefined reference",
        "fatal"};
    auto l = lower(result);
    if (!has_any_word(l, std::span<const std::string_view>(failure_words)))
        return false;  // cheap test first; the regex only runs on candidates
    return has_any_word(without_passing_counts(l), std::span<const std::string_view>(failure_words));
}

std::vector<std::string> error_lines(std::string_view result, std::size_t n)
{
    static constexpr std::array<std::string_view, 18> marks{
        "error",
        "failed",
        "fail",
        "exception",
        "panic",
        "assert",
        "expected",
        "traceback",
        "not found",
        "fatal",
        "undefined",
        "no such file",
        "could not",
        "segmentation fault",
        "core dumped",
        "crash",
        "timeout",
        "timed out"};
    std::vector<std::string> out;
    for (const auto& line : lines(result))
    {
        // Substrings, not words: TypeError, AssertionError, FAILED.
        auto marked = [&](const std::string& l) {
            return std::any_of(marks.begin(), marks.end(), [&](std::string_view m) {
                return l.find(m) != std::string::npos;
            });
        };
        auto l = lower(line);
        if (out.size() >= n || length(line) < 8 || !marked(l))
            continue;  // cheap test first; the regex only runs on candidates
        l = without_passing_counts(l);
        if (!starts_with_any(l, {"test files ", "tests ", "test suites:", "tests:"}) &&
            marked(l))  // not runner totals
            add_unique(out, clip_words(line, 200));
    }
    return out;
}

void paths_in(std::string_view text, std::vector<std::string>& out)
{
    auto stop = [](char c) {
        return std::isspace(static_cast<unsigned char>(c)) || c == '"' || c == '\'' || c == '`' || c == ',' ||
               c == ')' || c == '(' || c == '=' || c == '<' || c == '>';
    };
    std::size_t i = 0;
    while (i < text.size())
    {
        while (i < text.size() && stop(text[i]))
            ++i;
        std::size_t j = i;
        while (j < text.size() && !stop(text[j]))
            ++j;
        std::string tok(text.substr(i, j - i));
        while (!tok.empty() && (tok.back() == '.' || tok.back() == ':' || tok.back() == ';'))
            tok.pop_back();
        if (const auto colon = tok.find(':');
            colon != std::string::npos && tok.find("://") == std::string::npos)
            tok.erase(colon);  // src/a.ts:12:3 -> src/a.ts
        const auto dot = tok.rfind('.');
        const bool ext = dot != std::string::npos && dot > 1 && dot + 1 < tok.size() &&
                         tok.size() - dot <= 5 &&
                         std::all_of(tok.begin() + static_cast<long>(dot) + 1, tok.end(), [](char c) {
                             return std::isalpha(static_cast<unsigned char>(c));
                         });
        const bool slash = tok.find('/') != std::string::npos &&
                           tok.find_first_of("abcdefghijklmnopqrstuvwxyz") != std::string::npos;
        const bool bare_root =
            tok.front() == '/' && tok.find('/', 1) == std::string::npos && !ext;  // "/model"
        if (tok.size() >= 3 && tok.size() <= 160 && (slash || ext) && !bare_root &&
            tok.find("://") == std::string::npos && tok.front() != '-' && tok.front() != '@' &&
            std::isalnum(static_cast<unsigned char>(tok.back())))
            add_unique(out, tok, true);
        i = j + 1;
    }
}

}  // namespace agentctx::providers::offline
