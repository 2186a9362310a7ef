// A store that holds the session's JSONL text in memory and loads by parsing it.
#pragma once

#include <agentctx/runtime/store.hpp>

#include <string>

namespace agentctx::runtime {

/// The base of the stores whose session is a JSONL text held in memory: the memory store, and a
/// PostgreSQL store's text as last read from the database.
class text_store : public store
{
public:
    /// Parses the text held (no I/O).
    result<compaction::session_log> load(
        const compaction::load_options& opts, compaction::load_report& report, diagnostics& diag
    ) override;

protected:
    text_store() = default;
    explicit text_store(std::string jsonl) : text_(std::move(jsonl)) {}

    std::string text_;
};

}  // namespace agentctx::runtime
