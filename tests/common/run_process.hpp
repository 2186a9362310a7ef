// Test helper: runs a command line through the shell, capturing stdout, stderr and the exit code.
#pragma once

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace agentctx::test {

struct process_result
{
    int exit_code = -1;
    std::string out;
    std::string err;
};

inline process_result run_process(const std::string& command)
{
    const auto err_path =
        std::filesystem::temp_directory_path() / ("agentctx-stderr-" + std::to_string(::getpid()) + ".txt");
    process_result r;
    std::FILE* p = ::popen((command + " 2>" + err_path.string()).c_str(), "r");
    if (!p)
        return r;
    std::array<char, 65536> buf{};
    for (std::size_t n; (n = std::fread(buf.data(), 1, buf.size(), p)) > 0;)
        r.out.append(buf.data(), n);
    const int status = ::pclose(p);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::ifstream f(err_path);
    std::stringstream ss;
    ss << f.rdbuf();
    r.err = ss.str();
    std::filesystem::remove(err_path);
    return r;
}

}  // namespace agentctx::test
