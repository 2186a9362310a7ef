// A store held in memory: the same JSONL text a file would hold.
#pragma once

#include <agentctx/runtime/text_store.hpp>

#include <string>

namespace agentctx::runtime {

class memory_store final : public text_store
{
public:
    memory_store() = default;
    explicit memory_store(std::string jsonl) : text_store(std::move(jsonl)) {}

    result<void> write_header(const compaction::session_header& h, diagnostics& diag) override;
    result<void> append(const compaction::entry& e, diagnostics& diag) override;
    result<void> append_all(const std::vector<compaction::entry_ptr>& entries, diagnostics& diag) override;

    const std::string& text() const noexcept { return text_; }

private:
    // Whole lines after the header; the entry is never copied to be appended.
    result<void> append_lines(const std::string& lines, diagnostics& diag);
};

}  // namespace agentctx::runtime
