// What the server's rooms share: options, the session registry, connections, metrics.
#pragma once

#include "http_reply.hpp"
#include "idle_connections.hpp"
#include "metrics.hpp"
#include "server.hpp"
#include "session_registry.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace agentctx::server {

struct server_state : std::enable_shared_from_this<server_state>
{
    /// Builds the state and its session registry (whose callbacks hold the state weakly).
    static std::shared_ptr<server_state> make(boost::asio::io_context& ioc, server_options opts);
    server_state(boost::asio::io_context& ioc, server_options opts);

    boost::asio::io_context& ioc;
    const server_options opts;
    const std::string data_dir_prefix;  ///< "/abs/data/dir/", removed from messages sent to clients
    boost::asio::ip::tcp::acceptor acceptor;
    std::shared_ptr<session_registry> sessions;
    idle_connections idle;
    server_metrics metrics;
    std::atomic<bool> stopped{false};
    std::atomic<std::uint64_t> accept_failures{0};
    std::atomic<std::size_t> connections{0};
    /// Parses and checks large request bodies (off_thread_body_bytes) off the io threads.
    boost::asio::thread_pool body_worker{1};

    /// One request answered: its counter, and one structured line at debug (route labels never
    /// carry ids or unknown paths; nothing of the body or the headers is logged).
    void record(const http_request& req, unsigned status, std::chrono::steady_clock::time_point started);
    /// Whether the request carries the bearer token (always, without one configured).
    bool authorized(const http_request& req) const;
    /// Out of descriptors: closes the least recently used idle sessions and the longest-idle
    /// connection, so that waiting a moment frees some (instead of failing forever).
    void free_descriptors();
    /// The background-job declaration a session was created with: used each time it opens
    /// (after being closed to make room too) in place of the settings' "jobs" section.
    void declare_jobs(const std::string& id, compaction::job_rules jobs);
    void forget_jobs(const std::string& id);

private:
    /// The jobs of session `id`: its own declaration, else the settings' section.
    void configure(const std::string& id, runtime::session_config& c) const;
    mutable std::mutex jobs_mu_;
    std::map<std::string, compaction::job_rules> session_jobs_;
    runtime::session_config session_config() const;
    // A session just opened: its compactions feed the metrics, its events its subscribers.
    void observe(const std::shared_ptr<session_slot>& slot);
};

}  // namespace agentctx::server
