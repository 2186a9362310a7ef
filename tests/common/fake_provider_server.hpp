// A loopback HTTP server (Boost.Beast) that plays scripted model-API responses for provider tests.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace agentctx::test {

struct scripted_response
{
    int status = 200;
    std::vector<std::pair<std::string, std::string>> headers;  ///< e.g. {"retry-after", "1"}
    std::string body;                                          ///< a plain body
    std::vector<std::string> chunks;      ///< non-empty: a chunked text/event-stream, one write each
    std::chrono::milliseconds delay{0};   ///< before the response
    std::chrono::milliseconds chunk_gap{0};
    std::optional<std::size_t> reset_after;  ///< announce the full body, send this many bytes, reset
    bool stall = false;                      ///< after the chunks, never finish
};

struct recorded_request
{
    std::string method, target, body;
    std::vector<std::pair<std::string, std::string>> headers;  ///< names lowercased
    std::string header(const std::string& name) const;
};

/// Binds 127.0.0.1 on a free port and serves on its own thread until destroyed. Loopback only.
class fake_provider_server
{
public:
    fake_provider_server();
    ~fake_provider_server();
    fake_provider_server(const fake_provider_server&) = delete;
    fake_provider_server& operator=(const fake_provider_server&) = delete;

    std::string base_url() const;  ///< http://127.0.0.1:PORT

    void push(scripted_response r);          ///< next response (FIFO)
    void set_default(scripted_response r);   ///< when the queue is empty
    std::vector<recorded_request> requests() const;
    std::size_t connections() const;

    struct impl;

private:
    std::unique_ptr<impl> impl_;
};

// Bodies in each API's shape.
std::string openai_body(const std::string& text, const std::string& finish = "stop", int prompt = 100, int cached = 40, int completion = 20);
std::vector<std::string> openai_stream(const std::vector<std::string>& parts, const std::string& finish = "stop");
std::string anthropic_body(const std::string& text, const std::string& stop = "end_turn");
std::vector<std::string> anthropic_stream(const std::vector<std::string>& parts, const std::string& stop = "end_turn");

}  // namespace agentctx::test
