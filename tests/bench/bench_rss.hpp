// Benchmark helper: a process's peak resident set (VmHWM) from /proc.
#pragma once

#include <fstream>
#include <string>

namespace agentctx::bench {

/// VmHWM of `/proc/<pid>/status` in MiB ("self": this process); 0 if unreadable.
inline double peak_rss_mib(const std::string& pid = "self")
{
    std::ifstream f("/proc/" + pid + "/status");
    for (std::string line; std::getline(f, line);)
        if (line.rfind("VmHWM:", 0) == 0)
            return std::stod(line.substr(6)) / 1024.0;
    return 0;
}

}  // namespace agentctx::bench
