// Parsing untrusted request bodies: one JSON object, bounded depth, duplicate keys refused.
#pragma once

#include <agentctx/compaction/client_values.hpp>

#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value_stack.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace agentctx::server {

namespace detail {

// A basic_parser handler that builds the value (as Boost.JSON's own parser does, on a
// value_stack) and fails on the first repeated key of an object, in the same single pass.
// Boost.JSON 1.81 has no option for this (its parser keeps the last duplicate, as JSON.parse).
class object_builder
{
public:
    static constexpr std::size_t max_object_size = boost::json::object::max_size();
    static constexpr std::size_t max_array_size = boost::json::array::max_size();
    static constexpr std::size_t max_key_size = boost::json::string::max_size();
    static constexpr std::size_t max_string_size = boost::json::string::max_size();

    bool duplicate = false;
    boost::json::value_stack stack;

    bool on_document_begin(boost::system::error_code&)
    {
        stack.reset();
        return true;
    }
    bool on_document_end(boost::system::error_code&) { return true; }
    bool on_object_begin(boost::system::error_code&)
    {
        keys_.emplace_back();
        return true;
    }
    bool on_object_end(std::size_t n, boost::system::error_code&)
    {
        keys_.pop_back();
        stack.push_object(n);
        return true;
    }
    bool on_array_begin(boost::system::error_code&) { return true; }
    bool on_array_end(std::size_t n, boost::system::error_code&)
    {
        stack.push_array(n);
        return true;
    }
    bool on_key_part(boost::json::string_view s, std::size_t, boost::system::error_code&)
    {
        key_.append(s.data(), s.size());
        stack.push_chars(s);
        return true;
    }
    bool on_key(boost::json::string_view s, std::size_t, boost::system::error_code& ec)
    {
        key_.append(s.data(), s.size());
        const bool fresh = keys_.back().insert(std::move(key_)).second;
        key_.clear();
        if (!fresh)
        {
            duplicate = true;
            ec = boost::json::error::syntax;
            return false;
        }
        stack.push_key(s);
        return true;
    }
    bool on_string_part(boost::json::string_view s, std::size_t, boost::system::error_code&)
    {
        stack.push_chars(s);
        return true;
    }
    bool on_string(boost::json::string_view s, std::size_t, boost::system::error_code&)
    {
        stack.push_string(s);
        return true;
    }
    bool on_number_part(boost::json::string_view, boost::system::error_code&) { return true; }
    bool on_int64(std::int64_t i, boost::json::string_view, boost::system::error_code&)
    {
        stack.push_int64(i);
        return true;
    }
    bool on_uint64(std::uint64_t u, boost::json::string_view, boost::system::error_code&)
    {
        stack.push_uint64(u);
        return true;
    }
    bool on_double(double d, boost::json::string_view, boost::system::error_code&)
    {
        stack.push_double(d);
        return true;
    }
    bool on_bool(bool b, boost::system::error_code&)
    {
        stack.push_bool(b);
        return true;
    }
    bool on_null(boost::system::error_code&)
    {
        stack.push_null();
        return true;
    }
    bool on_comment_part(boost::json::string_view, boost::system::error_code&) { return true; }
    bool on_comment(boost::json::string_view, boost::system::error_code&) { return true; }

private:
    std::vector<std::unordered_set<std::string>> keys_;
    std::string key_;
};

// One parse of `body` (parse_request_object without the lone-surrogate reading).
inline std::optional<boost::json::object> parse_object_once(
    std::string_view body, std::size_t max_depth, std::string& why
)
{
    boost::json::parse_options opts;
    opts.max_depth = max_depth;
    boost::system::error_code ec;
    boost::json::basic_parser<detail::object_builder> p(opts);
    const std::size_t n = p.write_some(false, body.data(), body.size(), ec);
    if (!ec && n != body.size())
        ec = boost::json::error::extra_data;
    if (p.handler().duplicate)
    {
        why = "the request body repeats a key in one object";
        return std::nullopt;
    }
    if (ec)
    {
        why = ec == boost::json::error::too_deep
                  ? "the request body nests deeper than " + std::to_string(max_depth) + " levels"
                  : "the request body is not valid JSON";
        return std::nullopt;
    }
    auto v = p.handler().stack.release();
    if (!v.is_object())
    {
        why = "the request body is not a JSON object";
        return std::nullopt;
    }
    return std::move(v.get_object());
}

}  // namespace detail

/// Parses a request body that must be one JSON object nesting at most `max_depth` levels (the
/// session file limit, so an accepted entry always loads again) with no key repeated in any
/// object, in one pass. A lone surrogate escape (`"\ud800"`, a cut emoji as JSON.stringify and
/// json.dumps write it) reads as U+FFFD, as the session file reads it. On failure returns nullopt
/// and says why in `why`.
inline std::optional<boost::json::object> parse_request_object(
    std::string_view body, std::size_t max_depth, std::string& why
)
{
    auto parsed = detail::parse_object_once(body, max_depth, why);
    if (parsed || !why.starts_with("the request body is not valid JSON"))
        return parsed;
    const auto fixed = compaction::lone_surrogates_replaced(body);
    if (!fixed)
        return parsed;
    why.clear();
    return detail::parse_object_once(*fixed, max_depth, why);
}

}  // namespace agentctx::server
