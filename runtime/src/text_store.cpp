// text_store: loading is parsing the text held.
#include <agentctx/runtime/text_store.hpp>

namespace agentctx::runtime {

result<compaction::session_log> text_store::load(
    const compaction::load_options& opts, compaction::load_report& report, diagnostics& diag
)
{
    return compaction::session_log::load(text_, opts, report, diag);
}

}  // namespace agentctx::runtime
