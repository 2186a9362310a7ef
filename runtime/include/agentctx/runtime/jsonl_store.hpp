// The embedded default store: one Pi-format JSONL file, appended line by line.
#pragma once

#include <agentctx/runtime/store.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

namespace agentctx::runtime {

struct jsonl_store_options
{
    fsync_policy fsync = fsync_policy::on_compaction;
    bool read_only = false;  ///< no lock taken; append() fails with read_only
};

/// A JSONL session file.
///
/// - Each append is one complete line written with a single write(2) (looping only on a short
///   write); a failed write is rolled back by truncating to the previous size.
/// - A writable store holds an advisory lock (flock) for its lifetime: a second writer gets
///   `session_locked` instead of interleaving lines. Read-only stores take no lock.
/// - load() never modifies the file. A torn final line (an append cut short by a crash) is
///   reported in the load report; the next append moves the fragment to `<file>.torn` and
///   truncates it away, so the file stays valid JSONL and nothing is silently dropped. A batch
///   (append_all) that a crash cut short is treated the same way: its marked entries at the end
///   of the file are left out of the load and moved to `<file>.torn` by the next append.
///
/// Blocking I/O: call from a thread that may block (not an io_context thread that must not).
class jsonl_store final : public store
{
public:
    ~jsonl_store() override;
    jsonl_store(const jsonl_store&) = delete;
    jsonl_store& operator=(const jsonl_store&) = delete;

    /// Opens an existing file. Errors: not_found, session_locked, io_error.
    static result<std::unique_ptr<jsonl_store>> open(
        const std::filesystem::path& path, jsonl_store_options opts, diagnostics& diag
    );

    /// Creates a new file (fails with already_exists) and writes `header` into it. The file is
    /// written unnamed (O_TMPFILE) and linked at `path` with its header complete, so a crash
    /// inside create never leaves an empty or torn header behind.
    static result<std::unique_ptr<jsonl_store>> create(
        const std::filesystem::path& path,
        const compaction::session_header& header,
        jsonl_store_options opts,
        diagnostics& diag
    );

    result<void> write_header(const compaction::session_header& h, diagnostics& diag) override;
    result<void> append(const compaction::entry& e, diagnostics& diag) override;
    /// All lines in one write(2), rolled back together on failure.
    result<void> append_all(const std::vector<compaction::entry_ptr>& entries, diagnostics& diag) override;
    result<compaction::session_log> load(
        const compaction::load_options& opts, compaction::load_report& report, diagnostics& diag
    ) override;

    const std::filesystem::path& path() const noexcept { return path_; }

private:
    struct fd_holder;
    jsonl_store(std::filesystem::path path, std::shared_ptr<fd_holder> fd, jsonl_store_options opts);
    result<void> write_line(const std::string& line, bool sync, diagnostics& diag);
    result<compaction::session_log> load_without_batch(
        const compaction::load_options& opts,
        const compaction::session_log& full,
        std::size_t first,
        std::shared_ptr<const compaction::line_reader> reader,
        compaction::load_report& report,
        diagnostics& diag
    );

    std::filesystem::path path_;
    std::shared_ptr<fd_holder> fd_;
    jsonl_store_options opts_;
    std::optional<compaction::torn_tail> torn_;  ///< from the last load, repaired on next append
    bool needs_newline_ = false;                 ///< last line complete but unterminated
};

enum class migrate_outcome
{
    migrated,         ///< the file was rewritten as v3
    already_current,  ///< the file was v3 already and was not touched
};

/// Rewrites a v1/v2 session file as v3, atomically (temp file, fsync, rename). Takes the
/// writer's lock for the duration (`session_locked` if another writer holds it).
result<migrate_outcome> migrate_file(const std::filesystem::path& path, diagnostics& diag);

}  // namespace agentctx::runtime
