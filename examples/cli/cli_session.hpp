// The session configuration of the writing subcommands (compact, checkpoint): settings, budget
// flags, redaction and the summarizer, as `agentctx compact --help` describes them.
#pragma once

#include "cli_common.hpp"

#include <agentctx/providers/http_summarizer.hpp>
#include <agentctx/runtime/session.hpp>

#include <boost/asio/io_context.hpp>

#include <memory>
#include <optional>

namespace agentctx::cli {

struct cli_session_setup
{
    runtime::session_config config;
    std::shared_ptr<providers::http_summarizer> http;  ///< null: the offline summarizer
};

/// The options these flags read (valued): provider, model, base-url, keep-recent, reserve,
/// context-window, settings, project-dir; (flags): trust-project.
extern const std::vector<std::string_view> session_valued_options;

/// runtime::make_session_config of cli_host_config, as the agent server builds its sessions:
/// the settings and budget flags, `--context-window` (default 200000), the settings file's
/// `redaction` section, and the summarizer: `--provider`/`--model`/`--base-url`, else the
/// settings file's `provider` section or the environment; offline when none. Prints the error
/// and sets `code` on failure.
std::optional<cli_session_setup> cli_session_config(
    const args& a, bool json, boost::asio::io_context& ioc, int& code
);

/// Opens `path` as a writable session with `config`: through jsonl_store, holding the file's
/// write lock (`exit_locked` when another writer has it, `exit_io` otherwise), or with `dry_run`
/// on a copy in memory (`exit_io` without the file); `exit_bad_session` for an invalid file.
/// Prints the error and sets `code` on failure (nullptr).
std::shared_ptr<runtime::session> open_writable_session(
    boost::asio::io_context& ioc,
    const std::string& path,
    const runtime::session_config& config,
    bool json,
    bool dry_run,
    int& code
);

}  // namespace agentctx::cli
