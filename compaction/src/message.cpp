// Strict decoding of agent messages and content blocks.
#include <agentctx/compaction/message.hpp>

#include "json/field_reader.hpp"

#include <algorithm>

namespace agentctx::compaction {

using detail::field_reader;

std::string_view to_string(role r) noexcept
{
    switch (r)
    {
    case role::user:
        return "user";
    case role::assistant:
        return "assistant";
    case role::tool_result:
        return "toolResult";
    case role::bash_execution:
        return "bashExecution";
    case role::custom:
        return "custom";
    case role::branch_summary:
        return "branchSummary";
    case role::compaction_summary:
        return "compactionSummary";
    case role::system:
        return "system";
    case role::other:
        return "other";
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
    // hookMessage is the v2 name; migration renames it to custom. In a v3 file Pi keeps
    // it as an unknown role: no tokens, never a cut point, not sent.
    if (s == "custom")
        return role::custom;
    if (s == "branchSummary")
        return role::branch_summary;
    if (s == "compactionSummary")
        return role::compaction_summary;
    if (s == "system")
        return role::system;
    return role::other;
}

std::string peer_name(const boost::json::value& details)
{
    const auto* d = details.if_object();
    const auto* a = d ? d->if_contains("agentctx") : nullptr;
    const auto* p = a && a->is_object() ? a->get_object().if_contains("peer") : nullptr;
    if (!p || !p->is_string())
        return {};
    // A name only: no bracket, quote or line break can close or forge the label around it.
    std::string out;
    for (const char c : p->get_string())
    {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7f || c == '[' || c == ']' || c == '"' || c == '<' || c == '>')
            continue;
        if (out.size() >= 64 && (u & 0xC0) != 0x80)
            break;  // at most 64 bytes, never inside a UTF-8 sequence
        out += c;
    }
    return out;
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
    const boost::json::array& a, std::string_view path, diagnostics& diag
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

// `sections`: name -> string | null, read in JavaScript key order.
bool decode_sections(field_reader& f, message& m)
{
    const auto* s = f.opt_object("sections");
    if (!s)
        return !f.failed();
    m.has_sections = true;
    for (const auto key : js_key_order(*s))
    {
        const auto& v = s->at(key);
        if (v.is_null())
            m.sections.push_back({std::string(key), std::nullopt});
        else if (v.is_string())
            m.sections.push_back({std::string(key), std::string(v.get_string())});
        else
        {
            f.fail(
                errc::wrong_type,
                "sections." + std::string(key),
                std::string("expected string or null, got ") + detail::kind_name(v.kind())
            );
            return false;
        }
    }
    return true;
}

// `toolsAdded: Tool[]` (kept as written) and `toolsRemoved: {name}[]`.
bool decode_tools(field_reader& f, message& m)
{
    auto named = [&](const boost::json::value& v, const std::string& key, std::size_t i
                 ) -> const boost::json::object* {
        const auto* o = v.if_object();
        const auto* name = o ? o->if_contains("name") : nullptr;
        if (!name || !name->is_string())
        {
            f.fail(
                errc::wrong_type, key + "[" + std::to_string(i) + "]", "expected an object with a string name"
            );
            return nullptr;
        }
        return o;
    };
    if (f.opt_value("toolsAdded"))
    {
        const auto* a = f.req_array("toolsAdded");
        if (!a)
            return false;
        m.tools_added.emplace();
        for (std::size_t i = 0; i < a->size(); ++i)
        {
            const auto* o = named((*a)[i], "toolsAdded", i);
            if (!o)
                return false;
            m.tools_added->push_back(*o);
        }
    }
    if (f.opt_value("toolsRemoved"))
    {
        const auto* a = f.req_array("toolsRemoved");
        if (!a)
            return false;
        for (std::size_t i = 0; i < a->size(); ++i)
        {
            const auto* o = named((*a)[i], "toolsRemoved", i);
            if (!o)
                return false;
            m.tools_removed.emplace_back(o->at("name").get_string());
        }
    }
    return !f.failed();
}

// `nestedCalls: {calls: [{name, arguments?}...]}` of a tool result; other record fields pass through.
errc decode_nested_calls(field_reader& f, message& m)
{
    const auto* n = f.opt_object("nestedCalls");
    if (!n)
        return f.code();
    field_reader nf(*n, f.path_of("nestedCalls"), f.diag());
    const auto* calls = nf.opt_value("calls") ? nf.req_array("calls") : nullptr;
    for (std::size_t i = 0; calls && !nf.failed() && i < calls->size(); ++i)
    {
        const std::string key = "calls[" + std::to_string(i) + "]";
        const auto* o = (*calls)[i].if_object();
        if (!o)
        {
            nf.fail(errc::wrong_type, key, "expected object");
            break;
        }
        field_reader cf(*o, nf.path_of(key), f.diag());
        nested_call c;
        c.name = cf.opt_string("name").value_or("");
        if (const auto* args = cf.opt_value("arguments"); args && args->is_object())
            c.arguments = args->get_object();
        if (cf.failed())
            return cf.code();
        m.nested_calls.push_back(std::move(c));
    }
    return nf.code();
}

}  // namespace

result<struct usage> decode_usage(const boost::json::object& u, std::string_view path, diagnostics& diag)
{
    field_reader uf(u, path, diag);
    struct usage us;
    us.input = uf.opt_int("input");
    us.output = uf.opt_int("output");
    us.cache_read = uf.opt_int("cacheRead");
    us.cache_write = uf.opt_int("cacheWrite");
    if (uf.opt_value("cacheWrite1h"))
        us.cache_write_1h = uf.opt_int("cacheWrite1h");
    if (uf.opt_value("reasoning"))
        us.reasoning = uf.opt_int("reasoning");
    us.total_tokens = uf.opt_int("totalTokens");
    if (const auto* c = uf.opt_object("cost"))
    {
        field_reader cf(*c, uf.path_of("cost"), diag);
        us.cost.input = cf.opt_number("input").value_or(0);
        us.cost.output = cf.opt_number("output").value_or(0);
        us.cost.cache_read = cf.opt_number("cacheRead").value_or(0);
        us.cost.cache_write = cf.opt_number("cacheWrite").value_or(0);
        us.cost.total = cf.opt_number("total").value_or(0);
        us.total_from_provider = cf.opt_bool("totalFromProvider");
        if (cf.failed())
            return cf.code();
    }
    if (uf.failed())
        return uf.code();
    return us;
}

namespace {}  // namespace

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
        diag.message =
            "field '" + diag.field + "': expected string or array, got " + detail::kind_name(v.kind());
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

namespace {

// Pi 1.6 normalizes null or missing content of user/assistant/toolResult to [] and of system to
// "" at projection time; legacy custom messages stay strict (`null_ok` false).
bool read_content(
    field_reader& f, message& m, diagnostics& diag, bool required, bool array_only, bool null_ok = true
)
{
    const auto* v = f.opt_value("content");
    if (null_ok && (!v || v->is_null()))
    {
        m.content = {};
        m.content.is_string = m.role == role::system;
        return true;
    }
    if (!v)
    {
        if (required)
            f.fail(errc::missing_field, "content", "required field is missing");
        return !required;
    }
    if (array_only && !v->is_array())
    {
        f.fail(
            errc::wrong_type, "content", std::string("expected array, got ") + detail::kind_name(v->kind())
        );
        return false;
    }
    auto c = decode_content(*v, f.path_of("content"), diag);
    if (!c)
        return false;
    m.content = std::move(*c);
    return true;
}

boost::system::error_code decode_assistant(field_reader& f, message& m, diagnostics& diag)
{
    if (!read_content(f, m, diag, true, true))
        return f.failed() ? f.code() : errc::wrong_type;
    m.api = f.opt_string("api").value_or("");
    m.provider = f.opt_string("provider").value_or("");
    m.model = f.opt_string("model").value_or("");
    const auto* usage_value = f.opt_value("usage");
    if (const auto* u =
            usage_value && !usage_value->is_null() ? f.opt_object("usage") : nullptr)  // null: none
    {
        auto us = decode_usage(*u, f.path_of("usage"), diag);
        if (!us)
            return us.error();
        m.usage = *us;
    }
    if (auto sr = f.opt_string("stopReason"))
        m.stop_reason = stop_reason_from_string(*sr);
    m.error_message = f.opt_string("errorMessage");
    m.thinking_level = f.opt_string("thinkingLevel");
    return {};
}

boost::system::error_code decode_tool_result(field_reader& f, message& m, diagnostics& diag)
{
    if (!read_content(f, m, diag, true, false))
        return f.failed() ? f.code() : errc::wrong_type;
    m.tool_call_id = f.req_string("toolCallId");
    m.tool_name = f.opt_string("toolName").value_or("");
    m.is_error = f.opt_bool("isError");
    return decode_nested_calls(f, m);
}

void decode_bash_execution(field_reader& f, message& m)
{
    m.command = f.req_string("command");
    m.output = f.opt_string("output").value_or("");
    m.exit_code = f.opt_number("exitCode");
    m.cancelled = f.opt_bool("cancelled");
    m.truncated = f.opt_bool("truncated");
    m.full_output_path = f.opt_string("fullOutputPath");
    m.exclude_from_context = f.opt_bool("excludeFromContext");
}

// The fields of one role; no error when they decoded (the reader may still hold a failure).
boost::system::error_code decode_role_fields(field_reader& f, message& m, diagnostics& diag)
{
    const auto content_failed = [&]() -> boost::system::error_code {
        return f.failed() ? f.code() : errc::wrong_type;
    };
    switch (m.role)
    {
    case role::user:
        return read_content(f, m, diag, true, false) ? boost::system::error_code{} : content_failed();
    case role::assistant:
        return decode_assistant(f, m, diag);
    case role::tool_result:
        return decode_tool_result(f, m, diag);
    case role::bash_execution:
        decode_bash_execution(f, m);
        return {};
    case role::system:
        return read_content(f, m, diag, false, false) && decode_sections(f, m) && decode_tools(f, m)
                   ? boost::system::error_code{}
                   : content_failed();
    case role::custom:
        if (!read_content(f, m, diag, true, false, false))
            return content_failed();
        m.custom_type = f.opt_string("customType").value_or("");
        m.display = f.opt_bool("display");
        return {};
    case role::branch_summary:
        m.summary = f.req_string("summary");
        m.from_id = f.opt_string("fromId").value_or("");
        return {};
    case role::compaction_summary:
        m.summary = f.req_string("summary");
        m.tokens_before = f.opt_number("tokensBefore").value_or(0);
        return {};
    case role::other:
        return {};
    }
    return {};
}

}  // namespace

result<message> decode_message(const boost::json::object& o, std::string_view path, diagnostics& diag)
{
    field_reader f(o, path, diag);
    message m;
    m.role_name = f.req_string("role");
    m.role = role_from_string(m.role_name);
    m.timestamp = f.opt_number("timestamp").value_or(0);
    if (f.failed())
        return f.code();
    if (const auto e = decode_role_fields(f, m, diag))
        return e;
    if (f.failed())
        return f.code();
    return m;
}

}  // namespace agentctx::compaction
