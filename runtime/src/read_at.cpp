// read_at: pread in a loop, retried on EINTR.
#include "read_at.hpp"

#include <cerrno>
#include <unistd.h>

namespace agentctx::runtime {

result<std::string> read_at(int fd, std::uint64_t offset, std::size_t length)
{
    std::string buf(length, '\0');
    std::size_t done = 0;
    while (done < length)
    {
        const ssize_t n = ::pread(fd, buf.data() + done, length - done, static_cast<off_t>(offset + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return errc::io_error;
        done += static_cast<std::size_t>(n);
    }
    return buf;
}

}  // namespace agentctx::runtime
