// Test helper: checks an HTTP response against an OpenAPI 3.1 document (the subset of JSON Schema it uses).
#pragma once

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

namespace agentctx::test {

/// Validates responses against the operations of one OpenAPI document. Supported schema keywords:
/// `type` (a name or a list), `properties`, `required`, `additionalProperties` (bool or schema),
/// `items`, `enum`, `const`, `oneOf`, `anyOf`, `minimum`, `$ref` to `#/components/...`.
class openapi_check
{
public:
    explicit openapi_check(const boost::json::value& doc) : doc_(doc) {}

    /// "" when the response matches the document; otherwise what differs, with the JSON path.
    std::string check(
        std::string_view method,
        std::string_view target,
        int status,
        std::string_view content_type,
        std::string_view body
    ) const
    {
        const auto* op = operation(method, path_of(target));
        if (!op)
            return std::string(method) + " " + std::string(path_of(target)) + ": not in the document";
        const auto& responses = op->at("responses").as_object();
        const auto* resp = responses.if_contains(std::to_string(status));
        if (!resp)
            resp = responses.if_contains("default");
        if (!resp)
            return std::string(method) + " " + std::string(target) + ": status " + std::to_string(status) +
                   " not documented";
        const auto& r = resolve(*resp).as_object();
        const auto* content = r.if_contains("content");
        if (!content)
            return body.empty() ? ""
                                : "status " + std::to_string(status) + ": a body where the document has none";
        const std::string type(content_type.substr(0, content_type.find(';')));
        const auto* media = content->as_object().if_contains(type);
        if (!media)
            return "status " + std::to_string(status) + ": content type '" + type + "' not documented";
        const auto* schema = media->as_object().if_contains("schema");
        if (!schema || type != "application/json")
            return "";
        boost::system::error_code ec;
        const auto value = boost::json::parse(body, ec);
        if (ec)
            return "status " + std::to_string(status) + ": the body is not JSON";
        return validate(*schema, value, "$");
    }

    /// "" when `value` matches `schema`; otherwise the first difference with its JSON path.
    std::string validate(
        const boost::json::value& schema_ref, const boost::json::value& value, const std::string& at
    ) const
    {
        const auto& schema = resolve(schema_ref);
        if (!schema.is_object())
            return "";
        const auto& s = schema.as_object();
        if (const auto* t = s.if_contains("type"); t && !type_matches(*t, value))
            return at + ": expected type " + boost::json::serialize(*t) + ", got " +
                   boost::json::serialize(value);
        if (const auto* e = s.if_contains("enum");
            e && std::find(e->as_array().begin(), e->as_array().end(), value) == e->as_array().end())
            return at + ": " + boost::json::serialize(value) + " is not one of " + boost::json::serialize(*e);
        if (const auto* c = s.if_contains("const"); c && *c != value)
            return at + ": expected " + boost::json::serialize(*c);
        if (const auto* m = s.if_contains("minimum");
            m && value.is_number() && value.to_number<double>() < m->to_number<double>())
            return at + ": below the minimum " + boost::json::serialize(*m);
        if (auto why = check_alternatives(s, value, at); !why.empty())
            return why;
        if (value.is_object())
            return check_object(s, value.as_object(), at);
        if (value.is_array())
            if (const auto* items = s.if_contains("items"))
                for (std::size_t i = 0; i < value.as_array().size(); ++i)
                    if (auto why = validate(*items, value.as_array()[i], at + "[" + std::to_string(i) + "]");
                        !why.empty())
                        return why;
        return "";
    }

private:
    static std::string_view path_of(std::string_view target) { return target.substr(0, target.find('?')); }

    // Matches "/v1/sessions/abc/context" with "/v1/sessions/{id}/context".
    static bool path_matches(std::string_view tmpl, std::string_view path)
    {
        while (!tmpl.empty() && !path.empty())
        {
            const auto te = tmpl.find('/', 1), pe = path.find('/', 1);
            const auto ts = tmpl.substr(0, te), ps = path.substr(0, pe);
            if (!(ts.size() > 2 && ts[1] == '{') && ts != ps)
                return false;
            tmpl = te == std::string_view::npos ? std::string_view{} : tmpl.substr(te);
            path = pe == std::string_view::npos ? std::string_view{} : path.substr(pe);
        }
        return tmpl.empty() && path.empty();
    }

    const boost::json::object* operation(std::string_view method, std::string_view path) const
    {
        std::string m(method);
        std::transform(m.begin(), m.end(), m.begin(), [](unsigned char c) {
            return static_cast<char>(std::tolower(c));
        });
        for (const auto& [tmpl, item] : doc_.at("paths").as_object())
            if (path_matches(tmpl, path))
                if (const auto* op = item.as_object().if_contains(m))
                    return &op->as_object();
        return nullptr;
    }

    const boost::json::value& resolve(const boost::json::value& v) const
    {
        if (!v.is_object())
            return v;
        const auto* ref = v.as_object().if_contains("$ref");
        if (!ref)
            return v;
        std::string_view p = ref->as_string();  // "#/components/schemas/X"
        const boost::json::value* at = &doc_;
        p.remove_prefix(2);
        while (!p.empty())
        {
            const auto slash = p.find('/');
            at = &at->as_object().at(p.substr(0, slash));
            p = slash == std::string_view::npos ? std::string_view{} : p.substr(slash + 1);
        }
        return resolve(*at);
    }

    static bool one_type(std::string_view t, const boost::json::value& v)
    {
        if (t == "object")
            return v.is_object();
        if (t == "array")
            return v.is_array();
        if (t == "string")
            return v.is_string();
        if (t == "boolean")
            return v.is_bool();
        if (t == "null")
            return v.is_null();
        if (t == "integer")
            return v.is_int64() || v.is_uint64();
        if (t == "number")
            return v.is_number();
        return false;
    }

    static bool type_matches(const boost::json::value& t, const boost::json::value& v)
    {
        if (t.is_string())
            return one_type(t.as_string(), v);
        return std::any_of(t.as_array().begin(), t.as_array().end(), [&](const boost::json::value& x) {
            return one_type(x.as_string(), v);
        });
    }

    std::string check_alternatives(
        const boost::json::object& s, const boost::json::value& value, const std::string& at
    ) const
    {
        for (const char* key : {"oneOf", "anyOf"})
        {
            const auto* alts = s.if_contains(key);
            if (!alts)
                continue;
            std::size_t matched = 0;
            std::string last;
            for (const auto& alt : alts->as_array())
                if (auto why = validate(alt, value, at); why.empty())
                    ++matched;
                else
                    last = why;
            if (matched == 0)
                return at + ": matches none of " + key + " (" + last + ")";
            if (std::string_view(key) == "oneOf" && matched > 1)
                return at + ": matches more than one of oneOf";
        }
        return "";
    }

    std::string check_object(
        const boost::json::object& s, const boost::json::object& o, const std::string& at
    ) const
    {
        const auto* props = s.if_contains("properties");
        if (const auto* req = s.if_contains("required"))
            for (const auto& k : req->as_array())
                if (!o.contains(k.as_string()))
                    return at + ": missing required '" + std::string(k.as_string()) + "'";
        const auto* extra = s.if_contains("additionalProperties");
        for (const auto& [k, v] : o)
        {
            const auto* p = props ? props->as_object().if_contains(k) : nullptr;
            const std::string sub = at + "." + std::string(k);
            if (p)
            {
                if (auto why = validate(*p, v, sub); !why.empty())
                    return why;
            }
            else if (extra && extra->is_bool() && !extra->as_bool())
                return sub + ": not in the document";
            else if (extra && extra->is_object())
                if (auto why = validate(*extra, v, sub); !why.empty())
                    return why;
        }
        return "";
    }

    boost::json::value doc_;
};

}  // namespace agentctx::test
