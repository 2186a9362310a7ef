// A store held in memory: the same JSONL text a file would hold.
#pragma once

#include <agentctx/runtime/store.hpp>

#include <string>

namespace agentctx::runtime {

class memory_store final : public store
{
public:
    memory_store() = default;
    explicit memory_store(std::string jsonl) : text_(std::move(jsonl)) {}

    result<void> write_header(const compaction::session_header& h, diagnostics& diag) override;
    result<void> append(const compaction::entry& e, diagnostics& diag) override;
    result<compaction::session_log> load(
        const compaction::load_options& opts,
        compaction::load_report& report,
        diagnostics& diag
    ) override;

    const std::string& text() const noexcept { return text_; }

private:
    std::string text_;
};

}  // namespace agentctx::runtime
