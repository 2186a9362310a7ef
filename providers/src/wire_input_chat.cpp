// Chat Completions `messages` as Pi messages.
#include "wire_input_reader.hpp"

namespace agentctx::providers::detail {

namespace {

struct part_kinds
{
    bool images = false;   ///< `image_url` parts (user messages)
    bool refusal = false;  ///< `refusal` parts (assistant messages), kept as text
};

// Content parts as Pi blocks: `text`, and `image_url` / `refusal` where allowed.
bool read_parts(
    const json::array& parts, const std::string& path, part_kinds kinds, wire_reader& rd, json::array& out
)
{
    return read_each_typed(
        parts,
        path,
        rd,
        [&](const json::object& p, const std::string& type, const std::string& at) {
            if (type == "text")
            {
                if (auto t = rd.string(p, "text", at))
                    out.push_back(pi_text(std::move(*t)));
            }
            else if (type == "image_url" && kinds.images)
            {
                if (const auto* u = rd.object_field(p, "image_url", at))
                    if (auto image = rd.data_url_image(*u, "url", field_path(at, "image_url")))
                        out.push_back(std::move(*image));
            }
            else if (type == "refusal" && kinds.refusal)
            {
                if (auto t = rd.string(p, "refusal", at))
                    out.push_back(pi_text(std::move(*t)));
            }
            else
                return rd.fail(field_path(at, "type"), "unsupported content part '" + type + "'");
            return !rd.failed();
        }
    );
}

// `content`: a string (kept as a string when `keep_string`, else one text block) or parts.
std::optional<json::value> read_content(
    const json::object& m, const std::string& path, part_kinds kinds, bool keep_string, wire_reader& rd
)
{
    const std::string at = field_path(path, "content");
    const auto* v = m.if_contains("content");
    if (!v || v->is_null())
        return json::value(json::array{});
    if (v->is_string())
        return keep_string ? json::value(v->get_string())
                           : json::value(json::array{pi_text(std::string(v->get_string()))});
    if (!v->is_array())
        return rd.fail(at, "expected a string, an array or null"), std::nullopt;
    json::array blocks;
    if (!read_parts(v->get_array(), at, kinds, rd, blocks))
        return std::nullopt;
    return json::value(std::move(blocks));
}

bool read_tool_calls(
    const json::object& m,
    const std::string& path,
    wire_reader& rd,
    json::array& content,
    std::vector<std::string>& id_paths
)
{
    const auto* v = m.if_contains("tool_calls");
    if (!v || v->is_null())
        return true;
    const auto* calls = rd.array(m, "tool_calls", path);
    for (std::size_t i = 0; calls && i < calls->size(); ++i)
    {
        const std::string at = index_path(field_path(path, "tool_calls"), i);
        const auto* c = rd.object((*calls)[i], at);
        auto id = c ? rd.string(*c, "id", at) : std::nullopt;
        if (const auto type = c ? rd.opt_string(*c, "type", at) : std::nullopt; type && *type != "function")
            return rd.fail(field_path(at, "type"), "unsupported tool call type '" + *type + "'");
        const auto* f = c ? rd.object_field(*c, "function", at) : nullptr;
        const std::string fat = field_path(at, "function");
        auto name = f ? rd.string(*f, "name", fat) : std::nullopt;
        auto args = f ? rd.arguments_text(*f, "arguments", fat) : std::nullopt;
        if (rd.failed())
            return false;
        content.push_back(pi_tool_call(std::move(*id), std::move(*name), std::move(*args)));
        id_paths.push_back(field_path(at, "id"));
    }
    return !rd.failed();
}

bool read_message(const json::object& m, const std::string& path, wire_reader& rd, pi_batch& out)
{
    const auto role = rd.string(m, "role", path);
    if (!role)
        return false;
    if (*role == "user" || *role == "system" || *role == "developer")
    {
        const bool user = *role == "user";
        auto content = read_content(m, path, {.images = user}, true, rd);
        if (!content)
            return false;
        user ? out.user(std::move(*content)) : out.system(std::move(*content));
        return true;
    }
    if (*role == "assistant")
    {
        auto content = read_content(m, path, {.refusal = true}, false, rd);
        if (!content)
            return false;
        auto& blocks = content->get_array();
        // An empty string is no text: to_wire_messages renders both as `content: null`.
        if (blocks.size() == 1 && blocks[0].get_object().at("text").get_string().empty())
            blocks.clear();
        std::vector<std::string> id_paths;
        if (!read_tool_calls(m, path, rd, blocks, id_paths))
            return false;
        out.assistant(std::move(blocks), std::move(id_paths));
        return true;
    }
    if (*role == "tool")
        return read_tool_result(m, "tool_call_id", path, rd, out, [&] {
            return read_content(m, path, {}, false, rd);
        });
    return rd.fail(field_path(path, "role"), "unsupported role '" + *role + "'");
}

}  // namespace

bool read_chat_messages(const json::array& items, const std::string& path, wire_reader& rd, pi_batch& out)
{
    return read_each_object(items, path, rd, [&](const json::object& m, const std::string& at) {
        return read_message(m, at, rd, out);
    });
}

}  // namespace agentctx::providers::detail
