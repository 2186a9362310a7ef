// Benchmark helper: one keep-alive HTTP/1.1 connection to a loopback server, blocking.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace agentctx::bench {

// One keep-alive HTTP/1.1 connection; requests are sent whole and answers read by Content-Length.
class connection
{
public:
    explicit connection(std::uint16_t port)
    {
        fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
        {
            std::perror("connect");
            std::exit(1);
        }
        const int one = 1;
        ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    ~connection() { ::close(fd_); }
    connection(const connection&) = delete;
    connection& operator=(const connection&) = delete;

    /// The status code (0: the connection failed); the body in `body`.
    int request(
        const std::string& method, const std::string& target, const std::string& payload, std::string& body
    )
    {
        std::string req = method + " " + target +
                          " HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
                          "Content-Length: " +
                          std::to_string(payload.size()) + "\r\n\r\n" + payload;
        for (std::size_t sent = 0; sent < req.size();)
        {
            const auto n = ::send(fd_, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
            if (n <= 0)
                return 0;
            sent += static_cast<std::size_t>(n);
        }
        std::size_t head_end;
        while ((head_end = buf_.find("\r\n\r\n")) == std::string::npos)
            if (!fill())
                return 0;
        const std::string head = buf_.substr(0, head_end);
        std::size_t length = 0;
        for (std::size_t at = 0; (at = head.find('\n', at)) != std::string::npos;)
        {
            ++at;
            if (strncasecmp(head.c_str() + at, "content-length:", 15) == 0)
                length = std::strtoull(head.c_str() + at + 15, nullptr, 10);
        }
        while (buf_.size() < head_end + 4 + length)
            if (!fill())
                return 0;
        body = buf_.substr(head_end + 4, length);
        buf_.erase(0, head_end + 4 + length);
        return head.size() > 12 ? std::atoi(head.c_str() + 9) : 0;
    }

private:
    bool fill()
    {
        char tmp[65536];
        const auto n = ::recv(fd_, tmp, sizeof tmp, 0);
        if (n <= 0)
            return false;
        buf_.append(tmp, static_cast<std::size_t>(n));
        return true;
    }

    int fd_ = -1;
    std::string buf_;
};

}  // namespace agentctx::bench
