// A loopback HTTP server (Boost.Beast) that plays scripted model-API responses for provider tests.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
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
    std::vector<std::string> chunks;     ///< non-empty: a chunked text/event-stream, one write each
    std::chrono::milliseconds delay{0};  ///< before the response
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

    using responder = std::function<scripted_response(const recorded_request&)>;
    /// Requests whose path (the target before any `?`) ends with `path_suffix` are answered by
    /// `r` (first matching route); every other request takes the FIFO, then the default.
    void route(std::string path_suffix, responder r);

    /// Refuse Anthropic Messages and count requests as Anthropic does before any route sees
    /// them (400 `invalid_request_error`; see anthropic_request_problem). Off by default.
    void check_anthropic_requests(bool on);

    void push(scripted_response r);         ///< next response (FIFO)
    void set_default(scripted_response r);  ///< when the queue is empty
    std::vector<recorded_request> requests() const;
    std::size_t connections() const;

    struct impl;

private:
    std::unique_ptr<impl> impl_;
};

/// Why Anthropic refuses a Messages (or count_tokens) request body, or nullopt: `tool_use` or
/// `tool_result` blocks in a request without `tools`; a `tool_choice` without `tools`.
std::optional<std::string> anthropic_request_problem(const std::string& body);

// Bodies in each API's shape.
std::string openai_body(
    const std::string& text,
    const std::string& finish = "stop",
    int prompt = 100,
    int cached = 40,
    int completion = 20
);
std::vector<std::string> openai_stream(
    const std::vector<std::string>& parts, const std::string& finish = "stop"
);
std::string anthropic_body(const std::string& text, const std::string& stop = "end_turn");
std::vector<std::string> anthropic_stream(
    const std::vector<std::string>& parts, const std::string& stop = "end_turn"
);

// Counting: `{"input_tokens": N}` and `{"object": "response.input_tokens", "input_tokens": N}`.
std::string anthropic_count_body(std::int64_t tokens);
std::string openai_count_body(std::int64_t tokens);
/// A `compaction` block as Anthropic returns it (`content` nullopt = null: the compaction failed).
std::string anthropic_compaction_block(
    const std::optional<std::string>& content, const std::string& encrypted
);
/// A paused Messages response (`stop_reason: "compaction"`) holding `blocks` (JSON objects as
/// text), with `usage.iterations` for the compaction pass.
std::string anthropic_compaction_body(const std::vector<std::string>& blocks);
/// The same response streamed: `content_block_start` (type compaction), one `compaction_delta`.
std::vector<std::string> anthropic_compaction_stream(
    const std::string& content, const std::string& encrypted
);
/// `POST /responses/compact`: `output` = `user_texts` as user messages, then `items` (JSON text;
/// normally one compaction item, see openai_compaction_item).
std::string openai_compact_body(
    const std::vector<std::string>& user_texts, const std::vector<std::string>& items
);
std::string openai_compaction_item(const std::string& encrypted);
/// OpenAI inline compaction as the Responses API documents it, for `POST /v1/responses`: a
/// request whose `context_management` is `[{"type": "compaction", "compact_threshold"?: N}]` and
/// whose input ends with `{"type": "compaction_trigger"}` gets a Response object whose `output`
/// is one reasoning item and one compaction item (`encrypted`); a `compaction_trigger` anywhere
/// but last, or an unknown `context_management` type, is 400 `invalid_request_error`; a request
/// without the trigger whose input passes the threshold (chars/4) compacts the same way and then
/// answers (the same two items, then one assistant message `ok`); else it answers the message.
scripted_response openai_inline_reply(const recorded_request& r, const std::string& encrypted);
/// `GET /v1/models/{id}` with `capabilities.context_management.compact_20260112.supported`.
std::string anthropic_model_body(const std::string& id, bool compaction_supported);

}  // namespace agentctx::test
