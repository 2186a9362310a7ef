// An HTTP agent server embedding the runtime: sessions as JSONL files, REST endpoints, SSE events.
#pragma once

#include <agentctx/providers/summarizer.hpp>
#include <agentctx/runtime/session.hpp>

#include <boost/asio/io_context.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

namespace agentctx::server {

struct server_options
{
    std::filesystem::path data_dir;      ///< one <id>.jsonl per session
    std::string address = "127.0.0.1";
    std::uint16_t port = 0;              ///< 0 = any free port
    runtime::model_identity model{"offline", "offline", 200000, 0};
    compaction::compaction_settings settings;
    /// Makes the summarizer for a session (called once per opened session, on the server's executor).
    std::function<std::shared_ptr<providers::summarizer>(boost::asio::any_io_executor)> make_summarizer;
};

/**
 * Endpoints (JSON in, JSON out; errors are `{"error": {"code", "message"}}` with a 4xx/5xx status):
 * - `POST /v1/sessions` → 201 `{"id"}`; body optional `{"cwd"}`
 * - `POST /v1/sessions/{id}/entries` → 201 `{"id"}`; body: an entry without id/parentId/timestamp,
 *   e.g. `{"type":"message","message":{...}}`. After an assistant message the automatic threshold
 *   check runs (its compaction, if any, shows on the events stream).
 * - `POST /v1/sessions/{id}/compact` → 200 `{"entryId", "firstKeptEntryId", "tokensBefore",
 *   "tokensAfter", "summary"}`; body optional `{"instructions"}`
 * - `GET /v1/sessions/{id}/context` → 200 `{"leafId", "estimatedTokens", "messages": [{"role",
 *   "entryId", "tokens"}]}`
 * - `GET /v1/sessions/{id}/events` → `text/event-stream` of `compaction_start` / `compaction_end`
 *
 * Each session is a runtime::session on its own strand; the server runs on the given io_context
 * (any number of threads).
 */
class agent_server
{
public:
    agent_server(boost::asio::io_context& ioc, server_options opts);
    ~agent_server();
    agent_server(const agent_server&) = delete;
    agent_server& operator=(const agent_server&) = delete;

    /// Starts accepting. Returns the bound port.
    std::uint16_t start();
    /// Stops accepting and closes every session.
    void stop();

    struct impl;

private:
    std::shared_ptr<impl> impl_;
};

}  // namespace agentctx::server
