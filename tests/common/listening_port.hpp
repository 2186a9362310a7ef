// Test helper: the port of an agent_server child, read from its "listening on" log line.
#pragma once

#include <poll.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

namespace agentctx::test {

/// Reads the child's output from `fd` (up to 30 s) until "listening on http://127.0.0.1:PORT "
/// appears; 0 if it does not. What was read is left in `log`. The provider's address, which the
/// server may log first, is not mistaken for it.
inline std::uint16_t read_listening_port(int fd, std::string& log)
{
    const std::string key = "listening on http://127.0.0.1:";
    for (int i = 0; i < 300; ++i)
    {
        if (const auto at = log.find(key); at != std::string::npos && log.find(' ', at + key.size()) != std::string::npos)
            return static_cast<std::uint16_t>(std::atoi(log.c_str() + at + key.size()));
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 100) > 0)
        {
            char buf[512];
            const auto n = ::read(fd, buf, sizeof buf);
            if (n <= 0)
                return 0;
            log.append(buf, static_cast<std::size_t>(n));
        }
    }
    return 0;
}

}  // namespace agentctx::test
