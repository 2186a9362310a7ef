// Test helpers for the agent server over loopback HTTP: a blocking connection, one-shot requests.
#pragma once

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <cerrno>
#include <cstdint>
#include <string>
#include <string_view>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace agentctx::test {

// A blocking loopback connection for byte-level tests. Every read is bounded by a receive
// timeout, so a server that never answers fails the test instead of hanging it.
class raw_conn
{
public:
    raw_conn() : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0))
    {
        timeval tv{20, 0};
        ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    }
    explicit raw_conn(std::uint16_t port) : raw_conn() { connect(port); }
    ~raw_conn() { close(); }
    raw_conn(const raw_conn&) = delete;
    raw_conn& operator=(const raw_conn&) = delete;

    bool connect(std::uint16_t port)
    {
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        return ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    }
    bool send(std::string_view data)
    {
        while (!data.empty())
        {
            const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                return false;
            data.remove_prefix(static_cast<std::size_t>(n));
        }
        return true;
    }
    /// Reads until the server closes the connection (true) or the receive timeout (false).
    bool read_to_close(std::string& out)
    {
        for (;;)
        {
            char buf[4096];
            const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
            if (n == 0)
                return true;
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0)
                return errno == ECONNRESET;
            out.append(buf, static_cast<std::size_t>(n));
        }
    }
    /// Reads until `marker` arrives (true) or the connection ends or times out (false).
    bool read_until(std::string& out, std::string_view marker)
    {
        while (out.find(marker) == std::string::npos)
        {
            char buf[4096];
            const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                return false;
            out.append(buf, static_cast<std::size_t>(n));
        }
        return true;
    }
    void close()
    {
        if (fd_ >= 0)
            ::close(fd_);
        fd_ = -1;
    }

private:
    int fd_;
};

// The JSON body of a raw HTTP/1.1 response.
inline boost::json::value raw_body(const std::string& response)
{
    const auto p = response.find("\r\n\r\n");
    return p == std::string::npos ? boost::json::value() : boost::json::parse(response.substr(p + 4));
}

/// One request on its own connection (`Connection: close`), the whole raw response.
inline std::string ask(
    std::uint16_t port, const std::string& method, const std::string& path, const std::string& body = ""
)
{
    raw_conn c(port);
    c.send(
        method + " " + path +
        " HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Type: application/json\r\n" +
        "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body
    );
    std::string res;
    c.read_to_close(res);
    return res;
}

}  // namespace agentctx::test
