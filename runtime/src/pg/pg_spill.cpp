// The pool's spill file: the text of the logs it loads waits there, not in the heap.
#include "pg_pool.hpp"

#include <spdlog/spdlog.h>

#include <filesystem>

namespace agentctx::runtime::pg {

std::shared_ptr<spill_file> pool::spill()
{
    const std::lock_guard lock(mutex_);
    if (spill_ || spill_failed_ || spill_directory_.empty())
        return spill_;
    diagnostics diag;
    auto made = spill_file::open(spill_directory_, diag);
    if (!made)
    {
        spill_failed_ = true;
        spdlog::warn("PostgreSQL sessions keep their text in memory: {}", diag.message);
        return nullptr;
    }
    spill_ = std::move(*made);
    return spill_;
}

result<compaction::session_log> pool::load_log(
    std::string text, const compaction::load_options& opts, compaction::load_report& report, diagnostics& diag
)
{
    compaction::session_log_builder builder(opts);
    builder.feed(text);
    std::shared_ptr<const compaction::line_reader> lines;
    if (auto file = spill())
    {
        diagnostics spill_diag;
        if (auto kept = file->keep(text, spill_diag))
            lines = std::move(*kept);
        else
            spdlog::debug("a PostgreSQL session keeps its text in memory: {}", spill_diag.message);
    }
    if (!lines)
    {
        if (!spill_directory_.empty())
            spill_fallbacks_.fetch_add(1, std::memory_order_relaxed);
        lines = std::make_shared<compaction::string_line_reader>(std::move(text));
    }
    return builder.finish(std::move(lines), report, diag);
}

std::string spill_directory_for(const pg_pool_options& opts)
{
    if (!opts.spill_text)
        return {};
    if (!opts.spill_directory.empty())
        return opts.spill_directory;
    std::error_code ec;
    auto tmp = std::filesystem::temp_directory_path(ec);
    return ec ? std::string("/tmp") : tmp.string();
}

}  // namespace agentctx::runtime::pg
