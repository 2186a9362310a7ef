// The compaction module's error_category.
#include <agentctx/compaction/error.hpp>

#include <agentctx/compaction/error_category.hpp>

namespace agentctx::compaction {

const char* to_string(errc e) noexcept
{
    switch (e)
    {
    case errc::empty_file:
        return "empty_file";
    case errc::missing_header:
        return "missing_header";
    case errc::unsupported_version:
        return "unsupported_version";
    case errc::invalid_json:
        return "invalid_json";
    case errc::invalid_utf8:
        return "invalid_utf8";
    case errc::line_too_long:
        return "line_too_long";
    case errc::nesting_too_deep:
        return "nesting_too_deep";
    case errc::wrong_type:
        return "wrong_type";
    case errc::missing_field:
        return "missing_field";
    case errc::duplicate_id:
        return "duplicate_id";
    case errc::dangling_parent:
        return "dangling_parent";
    case errc::parent_cycle:
        return "parent_cycle";
    case errc::entry_not_found:
        return "entry_not_found";
    case errc::migration_required:
        return "migration_required";
    case errc::transcript_invalid:
        return "transcript_invalid";
    case errc::already_compacted:
        return "already_compacted";
    case errc::nothing_to_compact:
        return "nothing_to_compact";
    case errc::boundary_unavailable:
        return "boundary_unavailable";
    case errc::invalid_settings:
        return "invalid_settings";
    case errc::summary_truncated:
        return "summary_truncated";
    case errc::summary_failed:
        return "summary_failed";
    case errc::summary_aborted:
        return "summary_aborted";
    case errc::summary_empty:
        return "summary_empty";
    case errc::summary_too_long:
        return "summary_too_long";
    case errc::insufficient_reduction:
        return "insufficient_reduction";
    case errc::summary_tool_call:
        return "summary_tool_call";
    case errc::checkpoint_invalid:
        return "checkpoint_invalid";
    case errc::checkpoint_mismatch:
        return "checkpoint_mismatch";
    case errc::checkpoint_unavailable:
        return "checkpoint_unavailable";
    case errc::progress_invalid:
        return "progress_invalid";
    case errc::progress_mismatch:
        return "progress_mismatch";
    case errc::duplicate_key:
        return "duplicate_key";
    case errc::reserved_type:
        return "reserved_type";
    case errc::over_limit:
        return "over_limit";
    case errc::budget_exceeded:
        return "budget_exceeded";
    case errc::reserved_field:
        return "reserved_field";
    case errc::invalid_value:
        return "invalid_value";
    }
    return "unknown";
}

const boost::system::error_category& error_category() noexcept
{
    static const agentctx::detail::module_category<errc> instance{"agentctx.compaction", &to_string};
    return instance;
}

}  // namespace agentctx::compaction
