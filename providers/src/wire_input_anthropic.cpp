// Anthropic Messages `messages` as Pi messages.
#include "wire_input_reader.hpp"

namespace agentctx::providers::detail {

namespace {

// A base64 `image` block (URL and file sources would need fetching).
std::optional<json::object> read_image(const json::object& b, const std::string& path, wire_reader& rd)
{
    const auto* source = rd.object_field(b, "source", path);
    const std::string at = field_path(path, "source");
    const auto type = source ? rd.string(*source, "type", at) : std::nullopt;
    if (!type)
        return std::nullopt;
    if (*type != "base64")
        return rd.fail(
                   field_path(at, "type"), "only base64 image sources are accepted (images are not fetched)"
               ),
               std::nullopt;
    auto mime = rd.string(*source, "media_type", at);
    auto data = rd.string(*source, "data", at);
    if (rd.failed())
        return std::nullopt;
    return rd.image(std::move(*data), std::move(*mime), field_path(at, "data"), field_path(at, "media_type"));
}

// Text and image blocks (user content, tool result content).
std::optional<json::object> read_plain_block(
    const json::object& b, const std::string& type, const std::string& path, wire_reader& rd
)
{
    if (type == "text")
    {
        auto t = rd.string(b, "text", path);
        return t ? std::optional<json::object>(pi_text(std::move(*t))) : std::nullopt;
    }
    if (type == "image")
        return read_image(b, path, rd);
    return rd.fail(field_path(path, "type"), "unsupported content block '" + type + "'"), std::nullopt;
}

// The blocks of `content` (a string is one text block), each with its path and type.
template <class Visit>
bool for_each_block(const json::object& m, const std::string& path, wire_reader& rd, Visit&& visit)
{
    const auto* v = m.if_contains("content");
    const std::string at = field_path(path, "content");
    if (!v)
        return rd.fail(at, "required field is missing");
    if (v->is_string())
        return visit(json::object{{"type", "text"}, {"text", v->get_string()}}, "text", at);
    if (!v->is_array())
        return rd.fail(at, "expected a string or an array");
    for (std::size_t i = 0; i < v->get_array().size(); ++i)
    {
        const std::string bat = index_path(at, i);
        const auto* b = rd.object(v->get_array()[i], bat);
        const auto type = b ? rd.string(*b, "type", bat) : std::nullopt;
        if (!type || !visit(*b, *type, bat))
            return false;
    }
    return true;
}

std::optional<json::array> read_result_content(
    const json::object& r, const std::string& path, wire_reader& rd
)
{
    json::array blocks;
    const auto* v = r.if_contains("content");
    if (!v || v->is_null())
        return blocks;
    const bool ok = for_each_block(
        r,
        path,
        rd,
        [&](const json::object& b, const std::string& type, const std::string& at) {
            auto block = read_plain_block(b, type, at, rd);
            if (block)
                blocks.push_back(std::move(*block));
            return block.has_value();
        }
    );
    return ok ? std::optional<json::array>(std::move(blocks)) : std::nullopt;
}

// A user turn: its tool results (Anthropic puts them first) become toolResult messages, the
// other blocks one user message after them (a string content stays a string).
bool read_user(const json::object& m, const std::string& path, wire_reader& rd, pi_batch& out)
{
    if (const auto* c = m.if_contains("content"); c && c->is_string())
        return out.user(json::value(c->get_string())), true;
    json::array blocks;
    const bool ok = for_each_block(
        m,
        path,
        rd,
        [&](const json::object& b, const std::string& type, const std::string& at) {
            if (type != "tool_result")
            {
                auto block = read_plain_block(b, type, at, rd);
                if (block)
                    blocks.push_back(std::move(*block));
                return block.has_value();
            }
            auto id = rd.string(b, "tool_use_id", at);
            bool is_error = false;
            rd.opt_bool(b, "is_error", at, is_error);
            auto content = id ? read_result_content(b, at, rd) : std::nullopt;
            if (!content || rd.failed())
                return false;
            out.tool_result(std::move(*id), std::move(*content), is_error, field_path(at, "tool_use_id"));
            return true;
        }
    );
    if (ok && !blocks.empty())
        out.user(std::move(blocks));
    return ok;
}

std::optional<json::object> read_assistant_block(
    const json::object& b, const std::string& type, const std::string& at, wire_reader& rd
)
{
    if (type == "thinking")
    {
        auto thinking = rd.string(b, "thinking", at);
        auto signature = rd.opt_string(b, "signature", at);
        if (rd.failed())
            return std::nullopt;
        json::object t{{"type", "thinking"}, {"thinking", std::move(*thinking)}};
        if (signature)
            t["thinkingSignature"] = std::move(*signature);
        return t;
    }
    if (type == "redacted_thinking")
    {
        // The encrypted data is what goes back to the provider: kept as the signature, with a
        // placeholder text and `redacted` set.
        auto data = rd.string(b, "data", at);
        if (!data)
            return std::nullopt;
        return json::object{
            {"type", "thinking"},
            {"thinking", "[Reasoning redacted]"},
            {"thinkingSignature", std::move(*data)},
            {"redacted", true}};
    }
    if (type == "tool_use")
    {
        auto id = rd.string(b, "id", at);
        auto name = rd.string(b, "name", at);
        const auto* input = rd.object_field(b, "input", at);
        if (rd.failed())
            return std::nullopt;
        return pi_tool_call(std::move(*id), std::move(*name), *input);
    }
    if (type == "text")
        return read_plain_block(b, type, at, rd);
    return rd.fail(field_path(at, "type"), "unsupported content block '" + type + "'"), std::nullopt;
}

bool read_assistant(const json::object& m, const std::string& path, wire_reader& rd, pi_batch& out)
{
    json::array blocks;
    std::vector<std::string> id_paths;
    const bool ok = for_each_block(
        m,
        path,
        rd,
        [&](const json::object& b, const std::string& type, const std::string& at) {
            auto block = read_assistant_block(b, type, at, rd);
            if (block && type == "tool_use")
                id_paths.push_back(field_path(at, "id"));
            if (block)
                blocks.push_back(std::move(*block));
            return block.has_value();
        }
    );
    if (ok)
        out.assistant(std::move(blocks), std::move(id_paths));
    return ok;
}

}  // namespace

bool read_anthropic_messages(
    const json::array& items, const std::string& path, wire_reader& rd, pi_batch& out
)
{
    return read_each_object(items, path, rd, [&](const json::object& m, const std::string& at) {
        const auto role = rd.string(m, "role", at);
        if (!role)
            return false;
        if (*role == "user")
            return read_user(m, at, rd, out);
        if (*role == "assistant")
            return read_assistant(m, at, rd, out);
        return rd.fail(field_path(at, "role"), "unsupported role '" + *role + "'");
    });
}

}  // namespace agentctx::providers::detail
