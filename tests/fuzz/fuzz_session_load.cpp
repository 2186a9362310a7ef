// The whole session-file load path: session_log::load (strict and tolerant), the streaming
// builder fed in fuzzer-chosen chunks (must give the same result as one load), then every entry
// materialized, the context projected and a compaction planned. Invariants: an indexed entry
// always materializes (the indexer and the reader agree), its type and id are the index's, and
// the chunking never changes the outcome.
#include "fuzz_check.hpp"

#include <agentctx/compaction/prepare.hpp>
#include <agentctx/compaction/projection.hpp>
#include <agentctx/compaction/session_log.hpp>
#include <agentctx/compaction/settings.hpp>

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cx = agentctx::compaction;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    FuzzedDataProvider in(data, size);
    const std::uint8_t flags = in.ConsumeIntegral<std::uint8_t>();
    const std::size_t chunk = 1 + in.ConsumeIntegralInRange<std::size_t>(0, 63);
    std::string text = in.ConsumeRemainingBytesAsString();

    cx::load_options opts;
    opts.tolerant = flags & 1;
    opts.max_depth = flags & 2 ? 8 : 64;
    opts.max_line_bytes = flags & 4 ? 256 : opts.max_line_bytes;

    cx::load_report report;
    cx::diagnostics diag;
    auto log = cx::session_log::load(text, opts, report, diag);

    // The same bytes in small chunks through the streaming builder.
    {
        cx::session_log_builder b(opts);
        for (std::size_t i = 0; i < text.size(); i += chunk)
            b.feed(std::string_view(text).substr(i, chunk));
        cx::load_report r2;
        cx::diagnostics d2;
        auto log2 = b.finish(std::make_shared<cx::string_line_reader>(text), r2, d2);
        FUZZ_CHECK(
            log.has_value() == log2.has_value(),
            "chunked load differs: %s / %s",
            diag.message.c_str(),
            d2.message.c_str()
        );
        // The same error on the same line; the text may differ only for an over-long line, whose
        // size a streaming load cannot know (it stops buffering at the limit).
        if (!log)
            FUZZ_CHECK(
                log.error() == log2.error() && diag.line == d2.line &&
                    (diag.message == d2.message || log.error() == cx::errc::line_too_long),
                "chunked load fails differently: %s / %s",
                diag.message.c_str(),
                d2.message.c_str()
            );
        else
        {
            FUZZ_CHECK(
                log->size() == log2->size() && log->leaf() == log2->leaf(), "chunked load builds another tree"
            );
            FUZZ_CHECK(
                report.skipped_lines.size() == r2.skipped_lines.size() && report.lines == r2.lines &&
                    report.torn.has_value() == r2.torn.has_value() &&
                    report.missing_final_newline == r2.missing_final_newline,
                "chunked load reports differently"
            );
        }
    }
    if (!log)
    {
        FUZZ_CHECK(!diag.message.empty(), "a load error without a message");
        return 0;
    }

    for (std::size_t i = 0; i < log->size(); ++i)
    {
        cx::diagnostics d;
        auto e = log->get(i, d);
        if (!e)
        {
            // The index validated the line; only decoding (types deep in the entry) may fail.
            FUZZ_CHECK(
                e.error() != cx::errc::invalid_json, "an indexed line does not parse: %s", d.message.c_str()
            );
            continue;
        }
        FUZZ_CHECK((*e)->id == log->meta(i).id, "entry %zu: id differs from the index", i);
        FUZZ_CHECK((*e)->type == log->meta(i).type, "entry %zu: type differs from the index", i);
    }

    cx::diagnostics cd;
    (void)cx::build_session_context(*log, cd);
    cx::compaction_settings settings;
    settings.keep_recent_tokens = flags & 8 ? 1 : 200;
    settings.reserve_tokens = 100;
    cx::plan_options po;
    po.mode = flags & 16 ? cx::compat_mode::pi : cx::compat_mode::agentctx;
    cx::diagnostics pd;
    (void)cx::prepare_compaction(*log, settings, po, pd);
    return 0;
}
