// A Pi session file read once, then only the bytes appended since the last read.
#pragma once

#include <agentctx/compaction/session_log.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace agentctx::cli {

/// Why a read failed: a named code (`session_unreadable`, `session_invalid`) and a message.
struct tail_error
{
    std::string code;
    std::string message;
};

/// Follows one session file that another program (Pi) appends to. The first read loads the whole
/// file; each later read parses only the complete lines appended since and adds their entries
/// to the log (a line still being written waits for its newline). A file that shrank, or whose
/// appended lines do not fit the log, is loaded again whole. A file that does not exist yet is an
/// empty session (Pi writes its file only once the first reply exists).
class session_tail
{
public:
    explicit session_tail(std::string path) : path_(std::move(path)) {}

    /// Reads what is new. nullopt on success.
    std::optional<tail_error> refresh();

    /// The session as read so far; null until the file has a header.
    const compaction::session_log* log() const noexcept { return log_ ? &*log_ : nullptr; }
    const std::string& path() const noexcept { return path_; }
    std::uint64_t offset() const noexcept { return offset_; }
    /// Whole-file loads so far (1 after the first read of an existing file; appends add none).
    std::size_t loads() const noexcept { return loads_; }
    /// Lines parsed incrementally so far.
    std::size_t appended_lines() const noexcept { return appended_; }

private:
    std::optional<tail_error> load_whole(const std::string& text);
    std::optional<tail_error> append_lines(const std::string& bytes);

    std::string path_;
    std::optional<compaction::session_log> log_;
    std::uint64_t offset_ = 0;  ///< bytes consumed: up to and including the last complete line
    std::size_t loads_ = 0;
    std::size_t appended_ = 0;
};

}  // namespace agentctx::cli
