// Test helper: the agent_server binary as a child process (fork/exec), its output on a pipe, killed at the
// end.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <csignal>
#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace agentctx::test {

/// How the child is started: its arguments, environment additions (the provider variables are
/// always removed, so no test reaches a real model), working directory and descriptor limit.
struct server_launch
{
    std::vector<std::string> args;
    std::map<std::string, std::string> env;
    std::optional<std::filesystem::path> cwd;
    std::optional<rlim_t> nofile;  ///< RLIMIT_NOFILE (soft and hard) set in the child before exec
};

/// A started server. `port` is read from its "listening on http://127.0.0.1:PORT" line (0 when
/// it never said so within 30 s; `log` then says why).
class server_process
{
public:
    server_process(const std::string& bin, const server_launch& launch) { start(bin, launch); }
    ~server_process()
    {
        kill_now();
        if (fd >= 0)
            ::close(fd);
    }
    server_process(const server_process&) = delete;
    server_process& operator=(const server_process&) = delete;

    pid_t pid = -1;
    std::uint16_t port = 0;
    int fd = -1;      ///< the child's stdout and stderr
    std::string log;  ///< what it wrote so far

    /// Reads its output until `marker` appears (true) or `limit` passes (false).
    bool wait_for_output(std::string_view marker, std::chrono::milliseconds limit)
    {
        const auto end = std::chrono::steady_clock::now() + limit;
        while (log.find(marker) == std::string::npos && std::chrono::steady_clock::now() < end)
            if (!read_some(std::chrono::milliseconds(50)))
                break;
        return log.find(marker) != std::string::npos;
    }

    /// Waits up to `limit` for the child to exit: its waitpid status, or -1 while it runs.
    int wait(std::chrono::milliseconds limit)
    {
        const auto end = std::chrono::steady_clock::now() + limit;
        while (pid > 0)
        {
            int status = 0;
            if (::waitpid(pid, &status, WNOHANG) == pid)
            {
                pid = -1;
                return status;
            }
            if (std::chrono::steady_clock::now() > end)
                return -1;
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        return -1;
    }

    /// SIGKILL and reap (nothing when it has exited).
    void kill_now()
    {
        if (pid <= 0)
            return;
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
        pid = -1;
    }

private:
    // Appends what arrives within `limit`; false at the end of the output.
    bool read_some(std::chrono::milliseconds limit)
    {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, static_cast<int>(limit.count())) <= 0)
            return true;
        char buf[4096];
        const auto n = ::read(fd, buf, sizeof buf);
        if (n <= 0)
            return false;
        log.append(buf, static_cast<std::size_t>(n));
        return true;
    }

    [[noreturn]] static void exec_child(const std::string& bin, const server_launch& launch, int out)
    {
        ::dup2(out, 1);
        ::dup2(out, 2);
        for (const char* v : {"AGENTCTX_PROVIDER", "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY"})
            ::unsetenv(v);
        for (const auto& [k, v] : launch.env)
            ::setenv(k.c_str(), v.c_str(), 1);
        if (launch.cwd && ::chdir(launch.cwd->c_str()) != 0)
            ::_exit(126);
        if (launch.nofile)
        {
            const rlimit lim{*launch.nofile, *launch.nofile};
            if (::setrlimit(RLIMIT_NOFILE, &lim) != 0)
                ::_exit(125);
        }
        std::vector<char*> argv{const_cast<char*>(bin.c_str())};
        for (const auto& a : launch.args)
            argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        ::execv(bin.c_str(), argv.data());
        ::_exit(127);
    }

    void start(const std::string& bin, const server_launch& launch)
    {
        int out[2];
        if (::pipe(out) != 0)
            return;
        pid = ::fork();
        if (pid == 0)
            exec_child(bin, launch, out[1]);
        ::close(out[1]);
        fd = out[0];
        if (pid < 0)
            return;
        constexpr std::string_view marker = "listening on http://127.0.0.1:";
        if (wait_for_output(marker, std::chrono::seconds(30)))
        {
            const auto at = log.find(marker) + marker.size();
            wait_for_output(std::string_view(" with data"), std::chrono::seconds(5));  // the whole port
            port = static_cast<std::uint16_t>(std::atoi(log.c_str() + at));
        }
    }
};

}  // namespace agentctx::test
