// Responses `input` items as Pi messages.
#include "wire_input_reader.hpp"

#include <agentctx/compaction/json_text.hpp>

namespace agentctx::providers::detail {

namespace {

enum class side
{
    input,   ///< user and system messages, tool outputs: `input_text`, `input_image`
    output,  ///< assistant messages: `output_text`, `refusal` (kept as text), `input_text`
};

bool read_parts(
    const json::array& parts, const std::string& path, side s, bool images, wire_reader& rd, json::array& out
)
{
    return read_each_typed(
        parts,
        path,
        rd,
        [&](const json::object& p, const std::string& type, const std::string& at) {
            std::optional<json::object> block;
            if (type == "input_text" || (type == "output_text" && s == side::output))
            {
                if (auto t = rd.string(p, "text", at))
                    block = pi_text(std::move(*t));
            }
            else if (type == "refusal" && s == side::output)
            {
                if (auto t = rd.string(p, "refusal", at))
                    block = pi_text(std::move(*t));
            }
            else if (type == "input_image" && images)
                block = rd.data_url_image(p, "image_url", at);
            else
                return rd.fail(field_path(at, "type"), "unsupported content part '" + type + "'");
            if (!block)
                return false;
            out.push_back(std::move(*block));
            return true;
        }
    );
}

// `key`: a string (kept when `keep_string`, else one text block) or an array of parts.
std::optional<json::value> read_content(
    const json::object& o,
    std::string_view key,
    const std::string& path,
    side s,
    bool images,
    bool keep_string,
    wire_reader& rd
)
{
    const std::string at = field_path(path, key);
    const auto* v = o.if_contains(key);
    if (!v)
        return rd.fail(at, "required field is missing"), std::nullopt;
    if (v->is_string())
        return keep_string ? json::value(v->get_string())
                           : json::value(json::array{pi_text(std::string(v->get_string()))});
    if (!v->is_array())
        return rd.fail(at, "expected a string or an array"), std::nullopt;
    json::array blocks;
    if (!read_parts(v->get_array(), at, s, images, rd, blocks))
        return std::nullopt;
    return json::value(std::move(blocks));
}

// Pi's Responses client keeps a reasoning item as a thinking block: the summary text, and the
// whole item (id, encrypted_content) serialized as the signature it sends back.
std::optional<json::object> read_reasoning(const json::object& item, const std::string& path, wire_reader& rd)
{
    const auto* summary = rd.array(item, "summary", path);
    std::string text;
    for (std::size_t i = 0; summary && i < summary->size(); ++i)
    {
        const std::string at = index_path(field_path(path, "summary"), i);
        const auto* s = rd.object((*summary)[i], at);
        const auto t = s ? rd.string(*s, "text", at) : std::nullopt;
        if (!t)
            return std::nullopt;
        text += (i ? "\n\n" : "") + *t;
    }
    if (!summary)
        return std::nullopt;
    return json::object{
        {"type", "thinking"},
        {"thinking", std::move(text)},
        {"thinkingSignature", compaction::stringify(item)}};
}

// Consecutive assistant-side items (reasoning, assistant message, function calls) form one Pi
// assistant message, as one response's output does; reasoning or text after text or a call opens
// the next one (to_responses_input renders one text item, then the calls, per message).
class reader
{
public:
    reader(wire_reader& rd, pi_batch& out) : rd_(rd), out_(out) {}

    bool item(const json::object& o, const std::string& path);

private:
    json::array& assistant(bool opens)
    {
        if (!open_ || opens)
        {
            out_.assistant({});
            open_ = true;
            text_ = calls_ = false;
        }
        return out_.messages.back()["content"].get_array();
    }
    bool message(const json::object& o, const std::string& path);
    bool compaction(const json::object& o, const std::string& path);

    wire_reader& rd_;
    pi_batch& out_;
    bool open_ = false, text_ = false, calls_ = false;
};

bool reader::message(const json::object& o, const std::string& path)
{
    const auto role = rd_.string(o, "role", path);
    if (!role)
        return false;
    if (*role == "assistant")
    {
        auto content = read_content(o, "content", path, side::output, false, false, rd_);
        if (!content)
            return false;
        auto& blocks = assistant(text_ || calls_);
        for (auto& b : content->get_array())
            blocks.push_back(std::move(b));
        text_ = true;
        return true;
    }
    open_ = false;
    const bool user = *role == "user";
    if (!user && *role != "system" && *role != "developer")
        return rd_.fail(field_path(path, "role"), "unsupported role '" + *role + "'");
    auto content = read_content(o, "content", path, side::input, user, true, rd_);
    if (!content)
        return false;
    user ? out_.user(std::move(*content)) : out_.system(std::move(*content));
    return true;
}

// The provider's compaction item, kept verbatim beside the messages; what follows it opens a new
// assistant message (the context continues after it).
bool reader::compaction(const json::object& o, const std::string& path)
{
    if (out_.compaction)
        return rd_.fail(
            field_path(path, "type"),
            "a second compaction item (at most one per batch; the first is " + out_.compaction->path + ")"
        );
    const auto content = rd_.string(o, "encrypted_content", path);
    if (!content)
        return false;
    if (content->empty())
        return rd_.fail(field_path(path, "encrypted_content"), "must not be empty");
    out_.compaction = wire_compaction_item{o, path, out_.messages.size()};
    return true;
}

bool reader::item(const json::object& o, const std::string& path)
{
    const auto type =
        o.contains("type") ? rd_.string(o, "type", path) : std::optional<std::string>("message");
    if (!type)
        return false;
    if (*type == "message")
        return message(o, path);
    if (*type == "reasoning")
    {
        auto block = read_reasoning(o, path, rd_);
        if (block)
            assistant(text_ || calls_).push_back(std::move(*block));
        return block.has_value();
    }
    if (*type == "function_call")
    {
        auto id = rd_.string(o, "call_id", path);
        auto name = rd_.string(o, "name", path);
        auto args = rd_.arguments_text(o, "arguments", path);
        if (rd_.failed())
            return false;
        assistant(false).push_back(pi_tool_call(std::move(*id), std::move(*name), std::move(*args)));
        out_.id_paths.back().push_back(field_path(path, "call_id"));
        calls_ = true;
        return true;
    }
    open_ = false;
    if (*type == "compaction" && out_.accept_compaction)
        return compaction(o, path);
    if (*type == "function_call_output")
        return read_tool_result(o, "call_id", path, rd_, out_, [&] {
            return read_content(o, "output", path, side::input, true, false, rd_);
        });
    return rd_.fail(field_path(path, "type"), "unsupported item type '" + *type + "'");
}

}  // namespace

bool read_responses_items(const json::array& items, const std::string& path, wire_reader& rd, pi_batch& out)
{
    reader r(rd, out);
    return read_each_object(items, path, rd, [&](const json::object& o, const std::string& at) {
        return r.item(o, at);
    });
}

}  // namespace agentctx::providers::detail
