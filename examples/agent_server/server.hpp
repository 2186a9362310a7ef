// An HTTP agent server embedding the runtime: sessions as JSONL files, REST endpoints, SSE events.
#pragma once

#include <agentctx/runtime/host_config.hpp>
#include <agentctx/runtime/pg_store.hpp>
#include <agentctx/runtime/session.hpp>

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace agentctx::server {

struct server_options
{
    std::filesystem::path data_dir;  ///< one <id>.jsonl per session (unless `pg`)
    /// Sessions in PostgreSQL instead of files (many server nodes on one database); migrated.
    std::shared_ptr<runtime::pg_pool> pg;
    std::string address = "127.0.0.1";
    std::uint16_t port = 0;  ///< 0 = any free port
    /// What every session is built from (runtime::make_session_config, as the CLI builds its
    /// own): the resolved settings, the model and the models it may switch to, the summarizer
    /// choice. A session created with its own `settings.jobs` (POST /v1/sessions) keeps those
    /// instead of `host.settings.jobs`.
    runtime::host_config host;
    /// Time to receive a request's header once its first byte arrived (slow senders are closed).
    std::chrono::milliseconds header_timeout{std::chrono::seconds(30)};
    /// Time a keep-alive connection may wait for its next request, and the time allowed to
    /// receive a body or to write a response (a peer that stops reading is closed).
    std::chrono::milliseconds idle_timeout{std::chrono::seconds(60)};
    std::size_t header_limit = 8 * 1024;        ///< larger request headers get 431
    std::size_t body_limit = 16 * 1024 * 1024;  ///< larger request bodies get 413
    /// Sessions kept open at once (each holds one descriptor, its file); 0 = no limit. When the
    /// limit is reached the least recently used idle session is closed; when none is idle the
    /// request gets 503 `too_many_open_sessions`. The binary derives it from RLIMIT_NOFILE
    /// (descriptor_budget.hpp).
    std::size_t max_open_sessions = 256;
    /// Connections open at once; 0 = no limit. Beyond it the connection idle for longest (waiting
    /// for its next request) is closed to make room; when none is idle the new one gets 503
    /// `too_many_connections` and is closed. The binary derives it from RLIMIT_NOFILE.
    std::size_t max_connections = 0;
    /// The bearer token every request must carry (`Authorization: Bearer <token>`, compared in
    /// constant time; otherwise 401 `unauthorized`). nullopt = no authentication (the binary
    /// allows that only with an explicit `--no-auth`).
    std::optional<std::string> token;
    /// Threads that open and load session files (never the io threads): a session opening
    /// blocks one of them, not the requests of sessions already open.
    std::size_t open_threads = 2;
    /// Threads that create session files: a create waits for two syncs (the header, then the
    /// directory), so many run at once and their syncs are grouped; they parse nothing.
    std::size_t create_threads = 16;
    /// Test hook: called with the session id on the open thread just before a file is opened.
    std::function<void(const std::string&)> before_load;
    /// Test hook: called on the body worker thread just before a large body (over
    /// off_thread_body_bytes) is parsed.
    std::function<void()> before_body_parse;
    /// Test hook: called with each session once it is open, before any request uses it (a test
    /// registers its own hooks, e.g. a before_compact hook).
    std::function<void(runtime::session&)> after_open;
};

/// Request bodies over this size are parsed (and checked) on the server's body worker thread,
/// never on an io thread: the largest accepted body does not hold up other requests meanwhile.
inline constexpr std::size_t off_thread_body_bytes = 64 * 1024;
/// The door's pairing check of tool calls and results walks the whole context: for a context
/// longer than this it runs on the body worker too, so a long session's append holds up no one.
inline constexpr std::size_t off_thread_context_messages = 2000;

/**
 * Endpoints (JSON in, JSON out; errors are `{"error": {"code", "message"}}` with a 4xx/5xx status;
 * request bodies are one JSON object, at most 64 levels deep, with no repeated keys):
 * - `POST /v1/sessions` → 201 `{"id"}`; body optional `{"cwd"}`
 * - `POST /v1/sessions/{id}/entries` → 201 `{"id"}`; body: an entry without id/parentId/timestamp,
 *   e.g. `{"type":"message","message":{...}}`. After an assistant message the automatic threshold
 *   check runs (its compaction, if any, shows on the events stream). `session` and `compaction`
 *   entries are not appendable (422 `entry_not_appendable`); an entry is validated completely
 *   before anything is written.
 * - `POST /v1/sessions/{id}/compact` → 200 `{"entryId", "firstKeptEntryId", "tokensBefore",
 *   "tokensAfter", "summary"}`; body optional `{"instructions"}`
 * - `GET /v1/sessions/{id}/context` → 200 `{"leafId", "estimatedTokens", "messages": [{"role",
 *   "entryId", "tokens"}]}`
 * - `GET /v1/sessions/{id}/events` → `text/event-stream` of `compaction_start` / `compaction_end`,
 *   and `remote_change` (`{"entries", "compactions"}`) when another node changed a shared session
 * - `POST /v1/sessions/{id}/messages?format=openai|responses|anthropic` → 201 `{"ids"}`: the
 *   provider's messages appended as one batch (wire_routes.hpp)
 * - `POST /v1/sessions/{id}/turn-end` → 200 what the threshold check did; `POST
 *   /v1/sessions/{id}/overflow` → 200 `{"overflow", "retry", ...}` (turn_routes.hpp)
 * - `GET /openapi.json` → docs/openapi.json, which describes all of them
 *
 * Each session is a runtime::session on its own strand, each connection a coroutine on its own
 * strand; the server runs on the given io_context (any number of threads). Connections are
 * closed after the timeouts of server_options; oversized requests get 413/431 and a close; a
 * request without the bearer token gets 401 from its header alone (its body is never read) and
 * a close. A failed accept (out of descriptors) closes idle sessions and an idle connection,
 * backs off and accepts again; an open that runs out of descriptors does the same and retries.
 *
 * At most `max_open_sessions` sessions are open (their files held) at once. A session is idle
 * when no request, automatic check or event stream uses it; to make room the least recently
 * used idle one is closed, and its next request waits for its release and reopens it from disk.
 * Files are opened and loaded on `open_threads` threads of their own, never on the io threads;
 * concurrent requests for a session being opened share that one open.
 * When none is idle the request gets 503 `too_many_open_sessions`.
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

    /// Diagnostics: accepts that failed so far, and connections currently open.
    std::uint64_t accept_failures() const noexcept;
    std::size_t open_connections() const noexcept;

    struct impl;

private:
    std::shared_ptr<impl> impl_;
};

}  // namespace agentctx::server
