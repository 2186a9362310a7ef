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
        for (const auto& s : v->get_array())
            if (s.is_string())
                into.insert(std::string(s.get_string()));
    };
    take("readFiles", ops.read);
    take("modifiedFiles", ops.edited);
}

file_lists compute_file_lists(const file_operations& ops)
{
    file_lists l;
    std::set<std::string> modified = ops.written;
    modified.insert(ops.edited.begin(), ops.edited.end());
    for (const auto& r : ops.read)
        if (!modified.count(r))
            l.read_files.push_back(r);
    l.modified_files.assign(modified.begin(), modified.end());
    auto by_utf16 = [](const std::string& a, const std::string& b) { return utf16_less(a, b); };
    std::sort(l.read_files.begin(), l.read_files.end(), by_utf16);
    std::sort(l.modified_files.begin(), l.modified_files.end(), by_utf16);
    return l;
}

std::string format_file_operations(const file_lists& lists)
{
    std::vector<std::string> sections;
    auto block = [&](const char* tag, const std::vector<std::string>& files) {
        if (files.empty())
            return;
        std::string s = std::string("<") + tag + ">\n";
        for (std::size_t i = 0; i < files.size(); ++i)
            s += (i ? "\n" : "") + files[i];
        s += std::string("\n</") + tag + ">";
        sections.push_back(std::move(s));
    };
    block("read-files", lists.read_files);
    block("modified-files", lists.modified_files);
    if (sections.empty())
        return "";
    std::string out = "\n\n" + sections[0];
    for (std::size_t i = 1; i < sections.size(); ++i)
        out += "\n\n" + sections[i];
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
