// File-operation extraction, carry-over and the <read-files>/<modified-files> blocks.
#include <agentctx/compaction/file_ops.hpp>

#include <agentctx/compaction/json_text.hpp>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <algorithm>

namespace agentctx::compaction {

namespace {

void record_call(std::string_view name, const boost::json::object& arguments, file_operations& ops)
{
    const auto* p = arguments.if_contains("path");
    if (!p || !p->is_string() || p->get_string().empty())
        return;
    const std::string path(p->get_string());
    if (name == "read")
        ops.read.insert(path);
    else if (name == "write")
        ops.written.insert(path);
    else if (name == "edit")
        ops.edited.insert(path);
    else
        return;
    ops.last_touched[path] = ++ops.clock;
}

// Newest first; paths touched at the same moment (never, but seeds of two lists) by UTF-16 order.
void sort_newest_first(std::vector<std::string>& files, const file_operations& ops)
{
    auto when = [&](const std::string& f) {
        const auto it = ops.last_touched.find(f);
        return it == ops.last_touched.end() ? std::uint64_t{0} : it->second;
    };
    std::sort(files.begin(), files.end(), [&](const std::string& a, const std::string& b) {
        const auto ta = when(a), tb = when(b);
        return ta != tb ? ta > tb : utf16_less(a, b);
    });
}

// Keeps the first `limit` paths and returns how many it dropped.
std::size_t keep_first(std::vector<std::string>& files, std::size_t limit)
{
    if (files.size() <= limit)
        return 0;
    const std::size_t dropped = files.size() - limit;
    files.resize(limit);
    return dropped;
}

// One block; a bounded one stops at the path or character bound and says what it left out.
std::string file_block(
    const char* tag,
    const std::vector<std::string>& files,
    std::size_t omitted,
    const std::optional<file_list_bounds>& bounds
)
{
    std::string s = std::string("<") + tag + ">\n";
    std::size_t shown = 0, chars = 0;
    for (const auto& f : files)
    {
        if (bounds &&
            (shown == bounds->summary_paths || (shown > 0 && chars + f.size() > bounds->summary_chars)))
            break;
        s += (shown ? "\n" : "") + f;
        chars += f.size() + 1;
        ++shown;
    }
    if (const std::size_t more = files.size() - shown + omitted; more > 0)
        s += "\n\u2026and " + std::to_string(more) + " more";
    return s + "\n</" + tag + ">";
}

}  // namespace

void extract_file_ops(const message& m, file_operations& ops)
{
    if (m.role == role::tool_result)
    {
        // Pi 1.6: calls a tool made to other tools count like tool calls; records
        // without arguments (over Pi's size limits) contribute nothing; status is ignored.
        for (const auto& c : m.nested_calls)
            if (c.arguments)
                record_call(c.name, *c.arguments, ops);
        return;
    }
    if (m.role != role::assistant)
        return;
    for (const auto& b : m.content.blocks)
        if (const auto* c = std::get_if<tool_call_block>(&b))
            record_call(c->name, c->arguments, ops);
}

void seed_file_ops(const boost::json::value& details, file_operations& ops)
{
    if (!details.is_object())
        return;
    auto take = [&](const char* key, std::set<std::string>& into) {
        const auto* v = details.get_object().if_contains(key);
        if (!v || !v->is_array())
            return;
        const auto& paths = v->get_array();
        for (auto it = paths.rbegin(); it != paths.rend(); ++it)  // the first path is the newest
            if (it->is_string())
            {
                std::string path(it->get_string());
                ops.last_touched[path] = ++ops.clock;
                into.insert(std::move(path));
            }
    };
    take("readFiles", ops.read);
    take("modifiedFiles", ops.edited);
}

file_lists compute_file_lists(const file_operations& ops, const std::optional<file_list_bounds>& bounds)
{
    file_lists l;
    std::set<std::string> modified = ops.written;
    modified.insert(ops.edited.begin(), ops.edited.end());
    for (const auto& r : ops.read)
        if (!modified.count(r))
            l.read_files.push_back(r);
    l.modified_files.assign(modified.begin(), modified.end());
    if (!bounds)
    {
        auto by_utf16 = [](const std::string& a, const std::string& b) { return utf16_less(a, b); };
        std::sort(l.read_files.begin(), l.read_files.end(), by_utf16);
        std::sort(l.modified_files.begin(), l.modified_files.end(), by_utf16);
        return l;
    }
    l.bounded = true;
    sort_newest_first(l.read_files, ops);
    sort_newest_first(l.modified_files, ops);
    l.read_omitted = keep_first(l.read_files, bounds->details_paths);
    l.modified_omitted = keep_first(l.modified_files, bounds->details_paths);
    return l;
}

std::string format_file_operations(const file_lists& lists, const file_list_bounds& bounds)
{
    const std::optional<file_list_bounds> limit = lists.bounded ? std::optional(bounds) : std::nullopt;
    std::vector<std::string> sections;
    auto block = [&](const char* tag, const std::vector<std::string>& files, std::size_t omitted) {
        if (!files.empty())
            sections.push_back(file_block(tag, files, omitted, limit));
    };
    if (lists.bounded)
        block("modified-files", lists.modified_files, lists.modified_omitted);
    block("read-files", lists.read_files, lists.read_omitted);
    if (!lists.bounded)
        block("modified-files", lists.modified_files, 0);
    std::string out;
    for (const auto& s : sections)
        out += "\n\n" + s;
    return out;
}

boost::json::value file_lists_details(const file_lists& lists)
{
    boost::json::array r, m;
    for (const auto& f : lists.read_files)
        r.emplace_back(f);
    for (const auto& f : lists.modified_files)
        m.emplace_back(f);
    return boost::json::object{{"readFiles", std::move(r)}, {"modifiedFiles", std::move(m)}};
}

}  // namespace agentctx::compaction
