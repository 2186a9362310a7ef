// Test helpers for the agent server over loopback HTTP: a blocking connection, one-shot requests, a server process.
#pragma once

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <vector>

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
boost::json::value raw_body(const std::string& response)
{
    const auto p = response.find("\r\n\r\n");
    return p == std::string::npos ? boost::json::value() : boost::json::parse(response.substr(p + 4));
}

/// One request on its own connection (`Connection: close`), the whole raw response.
inline std::string ask(std::uint16_t port, const std::string& method, const std::string& path, const std::string& body = "")
{
    raw_conn c(port);
    c.send(method + " " + path + " HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Type: application/json\r\n" +
           "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
    std::string res;
    c.read_to_close(res);
    return res;
}

/// A server program started with fork/exec; its stdout and stderr go to `fd`.
struct server_process
{
    pid_t pid = -1;
    std::uint16_t port = 0;  ///< from its "listening on http://127.0.0.1:PORT" line; 0 if it never said
    int fd = -1;
    std::string log;
};

/// Starts `bin args...` with extra environment and waits (up to 30 s) for its port.
inline server_process spawn_server(const std::string& bin, const std::vector<std::string>& args,
                                   const std::map<std::string, std::string>& env = {})
{
    server_process sp;
    int out[2];
    if (::pipe(out) != 0)
        return sp;
    sp.pid = ::fork();
    if (sp.pid == 0)
    {
        ::dup2(out[1], 1);
        ::dup2(out[1], 2);
        for (const auto& [k, v] : env)
            ::setenv(k.c_str(), v.c_str(), 1);
        std::vector<char*> argv{const_cast<char*>(bin.c_str())};
        for (const auto& a : args)
            argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        ::execv(bin.c_str(), argv.data());
        ::_exit(127);
    }
    ::close(out[1]);
    sp.fd = out[0];
    for (int i = 0; i < 300 && !sp.port; ++i)
    {
        pollfd p{sp.fd, POLLIN, 0};
        if (::poll(&p, 1, 100) > 0)
        {
            char buf[512];
            const auto n = ::read(sp.fd, buf, sizeof buf);
            if (n <= 0)
                break;
            sp.log.append(buf, static_cast<std::size_t>(n));
        }
        if (const auto at = sp.log.find("127.0.0.1:"); at != std::string::npos && sp.log.find(' ', at) != std::string::npos)
            sp.port = static_cast<std::uint16_t>(std::atoi(sp.log.c_str() + at + 10));
    }
    return sp;
}

}  // namespace agentctx::test
