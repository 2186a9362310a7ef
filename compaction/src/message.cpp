// Strict decoding of agent messages and content blocks.
#include <agentctx/compaction/message.hpp>

#include "field_reader.hpp"

namespace agentctx::compaction {

using detail::field_reader;

std::string_view to_string(role r) noexcept
{
    switch (r)
    {
    case role::user: return "user";
    case role::assistant: return "assistant";
    case role::tool_result: return "toolResult";
    case role::bash_execution: return "bashExecution";
    case role::custom: return "custom";
    case role::branch_summary: return "branchSummary";
    case role::compaction_summary: return "compactionSummary";
    case role::other: return "other";
    }
    return "other";
}

role role_from_string(std::string_view s) noexcept
{
    if (s == "user")
        return role::user;
    if (s == "assistant")
        return role::assistant;
    if (s == "toolResult")
        return role::tool_result;
    if (s == "bashExecution")
        return role::bash_execution;
    if (s == "custom" || s == "hookMessage")  // hookMessage: v2 name, migrated to custom (§1.8)
        return role::custom;
    if (s == "branchSummary")
        return role::branch_summary;
    if (s == "compactionSummary")
        return role::compaction_summary;
    return role::other;
}

namespace {

stop_reason stop_reason_from_string(std::string_view s) noexcept
{
    if (s == "stop")
        return stop_reason::stop;
    if (s == "length")
        return stop_reason::length;
    if (s == "toolUse")
        return stop_reason::tool_use;
    if (s == "error")
        return stop_reason::error;
    if (s == "aborted")
        return stop_reason::aborted;
    return stop_reason::other;
}

result<content_block> decode_block(const boost::json::value& v, const std::string& path, diagnostics& diag)
{
    if (!v.is_object())
    {
        diag.field = path;
        diag.message = "field '" + path + "': expected object, got " + detail::kind_name(v.kind());
        return errc::wrong_type;
    }
    field_reader f(v.get_object(), path, diag);
    const std::string type = f.req_string("type");
    content_block out = other_block{type};
    if (type == "text")
        out = text_block{f.req_string("text")};
    else if (type == "thinking")
        out = thinking_block{f.req_string("thinking"), f.opt_bool("redacted")};
    else if (type == "image")
        out = image_block{f.req_string("data"), f.req_string("mimeType")};
    else if (type == "toolCall")
    {
        tool_call_block call;
        call.id = f.req_string("id");
        call.name = f.req_string("name");
        if (const auto* args = f.req_object("arguments"))
            call.arguments = *args;
        out = std::move(call);
    }
    if (f.failed())
        return f.code();
    return out;
}

result<std::vector<content_block>> decode_blocks(
    const boost::json::array& a,
    std::string_view path,
    diagnostics& diag
)
{
    std::vector<content_block> blocks;
    blocks.reserve(a.size());
    for (std::size_t i = 0; i < a.size(); ++i)
    {
        auto b = decode_block(a[i], std::string(path) + "[" + std::to_string(i) + "]", diag);
        if (!b)
            return b.error();
        blocks.push_back(std::move(*b));
    }
    return blocks;
}

}  // namespace

result<content> decode_content(const boost::json::value& v, std::string_view path, diagnostics& diag)
{
    content c;
    if (v.is_string())
    {
        c.is_string = true;
        c.text = v.get_string();
        return c;
    }
    if (!v.is_array())
    {
        diag.field = std::string(path);
        diag.message = "field '" + diag.field + "': expected string or array, got " + detail::kind_name(v.kind());
        return errc::wrong_type;
    }
    auto blocks = decode_blocks(v.get_array(), path, diag);
    if (!blocks)
        return blocks.error();
    c.blocks = std::move(*blocks);
    return c;
}

std::string content_text(const content& c)
{
    if (c.is_string)
        return c.text;
    std::string out;
    for (const auto& b : c.blocks)
        if (const auto* t = std::get_if<text_block>(&b))
            out += t->text;
    return out;
}

result<message> decode_message(const boost::json::object& o, std::string_view path, diagnostics& diag)
{
    field_reader f(o, path, diag);
    message m;
    m.role_name = f.req_string("role");
    m.role = role_from_string(m.role_name);
    if (m.role_name == "hookMessage")
        m.role_name = "custom";
    m.timestamp = f.opt_number("timestamp").value_or(0);
    if (f.failed())
        return f.code();

    const std::string content_path = f.path_of("content");
    auto read_content = [&](bool required, bool array_only) -> bool {
        const auto* v = f.opt_value("content");
        if (!v)
        {
            if (required)
                f.fail(errc::missing_field, "content", "required field is missing");
            return !required;
        }
        if (array_only && !v->is_array())
        {
            f.fail(errc::wrong_type, "content", std::string("expected array, got ") + detail::kind_name(v->kind()));
            return false;
        }
        auto c = decode_content(*v, content_path, diag);
        if (!c)
            return false;
        m.content = std::move(*c);
        return true;
    };

    switch (m.role)
    {
    case role::user:
        if (!read_content(true, false))
            return f.failed() ? f.code() : errc::wrong_type;
        break;
    case role::assistant:
    {
        if (!read_content(true, true))
            return f.failed() ? f.code() : errc::wrong_type;
        m.api = f.opt_string("api").value_or("");
        m.provider = f.opt_string("provider").value_or("");
        m.model = f.opt_string("model").value_or("");
        if (const auto* u = f.opt_object("usage"))
        {
            field_reader uf(*u, f.path_of("usage"), diag);
            struct usage us;
            us.input = uf.opt_int("input");
            us.output = uf.opt_int("output");
            us.cache_read = uf.opt_int("cacheRead");
            us.cache_write = uf.opt_int("cacheWrite");
            us.total_tokens = uf.opt_int("totalTokens");
            if (const auto* c = uf.opt_object("cost"))
            {
                field_reader cf(*c, uf.path_of("cost"), diag);
                us.cost.input = cf.opt_number("input").value_or(0);
                us.cost.output = cf.opt_number("output").value_or(0);
                us.cost.cache_read = cf.opt_number("cacheRead").value_or(0);
                us.cost.cache_write = cf.opt_number("cacheWrite").value_or(0);
                us.cost.total = cf.opt_number("total").value_or(0);
                if (cf.failed())
                    return cf.code();
            }
            if (uf.failed())
                return uf.code();
            m.usage = us;
        }
        if (auto sr = f.opt_string("stopReason"))
            m.stop_reason = stop_reason_from_string(*sr);
        m.error_message = f.opt_string("errorMessage");
        break;
    }
    case role::tool_result:
        if (!read_content(true, false))
            return f.failed() ? f.code() : errc::wrong_type;
        m.tool_call_id = f.req_string("toolCallId");
        m.tool_name = f.opt_string("toolName").value_or("");
        m.is_error = f.opt_bool("isError");
        break;
    case role::bash_execution:
        m.command = f.req_string("command");
        m.output = f.opt_string("output").value_or("");
        m.exit_code = f.opt_number("exitCode");
        m.cancelled = f.opt_bool("cancelled");
        m.truncated = f.opt_bool("truncated");
        m.full_output_path = f.opt_string("fullOutputPath");
        m.exclude_from_context = f.opt_bool("excludeFromContext");
        break;
    case role::custom:
        if (!read_content(true, false))
            return f.failed() ? f.code() : errc::wrong_type;
        m.custom_type = f.opt_string("customType").value_or("");
        m.display = f.opt_bool("display");
        break;
    case role::branch_summary:
        m.summary = f.req_string("summary");
        m.from_id = f.opt_string("fromId").value_or("");
        break;
    case role::compaction_summary:
        m.summary = f.req_string("summary");
        m.tokens_before = f.opt_number("tokensBefore").value_or(0);
        break;
    case role::other: break;
    }
    if (f.failed())
        return f.code();
    return m;
}

}  // namespace agentctx::compaction
