// How the server shares its descriptor limit between connections and open sessions (no I/O).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace agentctx::server {

struct descriptor_budget
{
    std::size_t max_connections = 0;
    std::size_t max_open_sessions = 0;
};

/// Descriptors kept aside whatever the load: standard streams, the event loop's, the listening
/// socket, log files and the process's own handful.
inline constexpr std::uint64_t fixed_descriptors = 32;
/// Per io thread: its HTTP client to the model provider (a multi handle and its connections).
inline constexpr std::uint64_t descriptors_per_io_thread = 4;
/// Caps on the defaults, whatever the limit: sessions hold memory, connections hold buffers.
inline constexpr std::size_t max_default_sessions = 4096;
inline constexpr std::size_t max_default_connections = 65536;

/// The defaults for a descriptor limit of `nofile` (RLIMIT_NOFILE): after what the process needs
/// anyway (`fixed_descriptors`, each io thread's provider client, each open or create thread's file being
/// opened, `database_connections`), half of the rest for connections and half for sessions (one
/// descriptor each), each at least 1 and at most its cap.
inline descriptor_budget budget_for(
    std::uint64_t nofile, std::size_t io_threads, std::size_t open_threads, std::size_t database_connections
)
{
    const std::uint64_t reserved =
        fixed_descriptors + descriptors_per_io_thread * io_threads + open_threads + database_connections;
    const std::uint64_t spare = nofile > reserved ? nofile - reserved : 0;
    descriptor_budget b;
    b.max_connections =
        static_cast<std::size_t>(std::clamp<std::uint64_t>(spare / 2, 1, max_default_connections));
    b.max_open_sessions =
        static_cast<std::size_t>(std::clamp<std::uint64_t>(spare - spare / 2, 1, max_default_sessions));
    return b;
}

}  // namespace agentctx::server
