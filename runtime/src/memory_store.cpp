// memory_store: JSONL text in a string.
#include <agentctx/runtime/memory_store.hpp>

#include <agentctx/compaction/json_text.hpp>
#include <agentctx/runtime/error.hpp>

#include <memory>

namespace agentctx::runtime {

std::string to_jsonl_line(const boost::json::object& raw)
{
    std::string line;
    compaction::stringify_to(line, raw);
    line += '\n';
    return line;
}

result<void> memory_store::write_header(const compaction::session_header& h, diagnostics& diag)
{
    if (!text_.empty())
    {
        diag.message = "the store already holds a session";
        return errc::already_exists;
    }
    text_ = to_jsonl_line(h.raw);
    return {};
}

result<void> memory_store::append(const compaction::entry& e, diagnostics& diag)
{
    return append_lines(to_jsonl_line(e.raw), diag);
}

result<void> memory_store::append_all(const std::vector<compaction::entry_ptr>& entries, diagnostics& diag)
{
    std::string lines;
    for (const auto& e : entries)
        lines += to_jsonl_line(e->raw);
    return append_lines(lines, diag);
}

result<void> memory_store::append_lines(const std::string& lines, diagnostics& diag)
{
    if (text_.empty())
    {
        diag.message = "append before the session header was written";
        return errc::no_header;
    }
    if (text_.back() != '\n')
        text_ += '\n';  // text given at construction may lack its final newline
    text_ += lines;
    return {};
}

}  // namespace agentctx::runtime
