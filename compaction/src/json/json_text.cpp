// JSON.stringify-compatible serialization and UTF-16 length arithmetic over UTF-8 text.
#include <agentctx/compaction/json_text.hpp>

#include <algorithm>
#include <optional>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/string.hpp>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>

namespace agentctx::compaction {

namespace {

// Decodes one code point at `i`; returns its byte length (1 for an invalid byte, cp = U+FFFD).
std::size_t decode_utf8(std::string_view s, std::size_t i, char32_t& cp) noexcept
{
    const auto b0 = static_cast<unsigned char>(s[i]);
    if (b0 < 0x80)
    {
        cp = b0;
        return 1;
    }
    std::size_t len = 0;
    char32_t min = 0;
    if ((b0 & 0xE0) == 0xC0)
    {
        len = 2;
        cp = b0 & 0x1F;
        min = 0x80;
    }
    else if ((b0 & 0xF0) == 0xE0)
    {
        len = 3;
        cp = b0 & 0x0F;
        min = 0x800;
    }
    else if ((b0 & 0xF8) == 0xF0)
    {
        len = 4;
        cp = b0 & 0x07;
        min = 0x10000;
    }
    else
    {
        cp = 0xFFFD;
        return 1;
    }
    if (i + len > s.size())
    {
        cp = 0xFFFD;
        return 1;
    }
    for (std::size_t k = 1; k < len; ++k)
    {
        const auto b = static_cast<unsigned char>(s[i + k]);
        if ((b & 0xC0) != 0x80)
        {
            cp = 0xFFFD;
            return 1;
        }
        cp = (cp << 6) | (b & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    {
        cp = 0xFFFD;
        return 1;
    }
    return len;
}

void append_hex4(std::string& out, unsigned v)
{
    static constexpr char digits[] = "0123456789abcdef";
    out += "\\u";
    out += digits[(v >> 12) & 0xF];
    out += digits[(v >> 8) & 0xF];
    out += digits[(v >> 4) & 0xF];
    out += digits[v & 0xF];
}

}  // namespace

bool is_valid_utf8(std::string_view s) noexcept
{
    for (std::size_t i = 0; i < s.size();)
    {
        const auto b = static_cast<unsigned char>(s[i]);
        if (b < 0x80)
        {
            ++i;
            continue;
        }
        char32_t cp = 0;
        const std::size_t n = decode_utf8(s, i, cp);
        if (n == 1)
            return false;  // every valid multi-byte sequence is longer than one byte
        i += n;
    }
    return true;
}

std::size_t utf16_length(std::string_view s) noexcept
{
    std::size_t units = 0;
    for (std::size_t i = 0; i < s.size();)
    {
        const auto b = static_cast<unsigned char>(s[i]);
        if (b < 0x80)
        {
            ++units;
            ++i;
            continue;
        }
        char32_t cp = 0;
        i += decode_utf8(s, i, cp);
        units += cp >= 0x10000 ? 2 : 1;
    }
    return units;
}

namespace {

// Bytes of the longest prefix of `s` within `n` UTF-16 units; `split`: a surrogate pair straddles n.
std::size_t utf16_head_bytes(std::string_view s, std::size_t n, bool& split)
{
    std::size_t units = 0;
    std::size_t i = 0;
    split = false;
    while (i < s.size() && units < n)
    {
        char32_t cp = 0;
        const std::size_t len = decode_utf8(s, i, cp);
        const std::size_t w = cp >= 0x10000 ? 2 : 1;
        if (units + w > n)
        {
            split = true;
            break;
        }
        units += w;
        i += len;
    }
    return i;
}

}  // namespace

std::string utf16_prefix(std::string_view s, std::size_t n)
{
    bool split = false;
    std::string out(s.substr(0, utf16_head_bytes(s, n, split)));
    if (split)
        out += "\xEF\xBF\xBD";  // JavaScript keeps a lone high surrogate; UTF-8 carries it as U+FFFD
    return out;
}

std::string utf16_slice_head(std::string_view s, std::size_t n)
{
    bool split = false;  // Pi's sliceHead: a pair straddling the cut is left out (n - 1 units)
    return std::string(s.substr(0, utf16_head_bytes(s, n, split)));
}

bool utf16_less(std::string_view a, std::string_view b) noexcept
{
    // UTF-16 order differs from code point order only for supplementary characters, which sort
    // as their high surrogate (0xD800..0xDBFF), i.e. below U+E000..U+FFFF.
    auto key = [](char32_t cp) -> std::uint32_t {
        if (cp < 0x10000)
            return cp << 10;
        const char32_t v = cp - 0x10000;
        return ((0xD800 + (v >> 10)) << 10) | (v & 0x3FF);
    };
    std::size_t i = 0, j = 0;
    while (i < a.size() && j < b.size())
    {
        char32_t ca = 0, cb = 0;
        i += decode_utf8(a, i, ca);
        j += decode_utf8(b, j, cb);
        if (ca != cb)
            return key(ca) < key(cb);
    }
    return i >= a.size() && j < b.size();
}

void quote_to(std::string& out, std::string_view s)
{
    out += '"';
    std::size_t run = 0;  // start of the pending run of characters copied verbatim
    for (std::size_t i = 0; i < s.size(); ++i)
    {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        out.append(s.data() + run, i - run);
        run = i + 1;
        switch (c)
        {
        case '"':
            out += "\\\"";
            break;
        case '\\':
            out += "\\\\";
            break;
        case '\b':
            out += "\\b";
            break;
        case '\f':
            out += "\\f";
            break;
        case '\n':
            out += "\\n";
            break;
        case '\r':
            out += "\\r";
            break;
        case '\t':
            out += "\\t";
            break;
        default:
            append_hex4(out, c);
            break;
        }
    }
    out.append(s.data() + run, s.size() - run);
    out += '"';
}

void format_number_to(std::string& out, double d)
{
    if (!std::isfinite(d))
    {
        out += "null";
        return;
    }
    if (d == 0)
    {
        out += '0';  // covers -0
        return;
    }
    if (d < 0)
    {
        out += '-';
        d = -d;
    }
    // Shortest round-trip digits, as ECMAScript requires, then its layout rules.
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
    const std::string_view sci(buf, static_cast<std::size_t>(r.ptr - buf));
    const auto epos = sci.find('e');
    std::string digits;
    digits += sci[0];
    if (epos > 1)
        digits.append(sci.substr(2, epos - 2));
    int exp10 = 0;
    std::from_chars(sci.data() + epos + (sci[epos + 1] == '+' ? 2 : 1), sci.data() + sci.size(), exp10);
    const int k = static_cast<int>(digits.size());
    const int n = exp10 + 1;
    if (k <= n && n <= 21)
    {
        out += digits;
        out.append(static_cast<std::size_t>(n - k), '0');
    }
    else if (0 < n && n <= 21)
    {
        out.append(digits, 0, static_cast<std::size_t>(n));
        out += '.';
        out.append(digits, static_cast<std::size_t>(n));
    }
    else if (-6 < n && n <= 0)
    {
        out += "0.";
        out.append(static_cast<std::size_t>(-n), '0');
        out += digits;
    }
    else
    {
        out += digits[0];
        if (k > 1)
        {
            out += '.';
            out.append(digits, 1);
        }
        out += 'e';
        out += n - 1 >= 0 ? '+' : '-';
        out += std::to_string(std::abs(n - 1));
    }
}

namespace {

// JSON.stringify; `js_order`: objects enumerate integer-like keys first, as JavaScript holds them.
void stringify_impl(std::string& out, const boost::json::value& v, bool js_order)
{
    switch (v.kind())
    {
    case boost::json::kind::null:
        out += "null";
        break;
    case boost::json::kind::bool_:
        out += v.get_bool() ? "true" : "false";
        break;
    case boost::json::kind::int64:
        out += std::to_string(v.get_int64());
        break;
    case boost::json::kind::uint64:
        out += std::to_string(v.get_uint64());
        break;
    case boost::json::kind::double_:
        format_number_to(out, v.get_double());
        break;
    case boost::json::kind::string:
        quote_to(out, v.get_string());
        break;
    case boost::json::kind::array:
    {
        out += '[';
        bool first = true;
        for (const auto& e : v.get_array())
        {
            if (!first)
                out += ',';
            first = false;
            stringify_impl(out, e, js_order);
        }
        out += ']';
        break;
    }
    case boost::json::kind::object:
    {
        out += '{';
        bool first = true;
        auto member = [&](std::string_view key, const boost::json::value& value) {
            if (!first)
                out += ',';
            first = false;
            quote_to(out, key);
            out += ':';
            stringify_impl(out, value, js_order);
        };
        const auto& o = v.get_object();
        if (js_order)
            for (const auto key : js_key_order(o))
                member(key, o.at(key));
        else
            for (const auto& kv : o)
                member(kv.key(), kv.value());
        out += '}';
        break;
    }
    }
}

}  // namespace

void stringify_to(std::string& out, const boost::json::value& v)
{
    stringify_impl(out, v, false);
}

std::string stringify(const boost::json::value& v)
{
    std::string out;
    stringify_to(out, v);
    return out;
}

std::vector<std::string_view> js_key_order(const boost::json::object& o)
{
    // A canonical array index: "0" or [1-9][0-9]* below 2^32 - 1.
    auto index_of = [](std::string_view k) -> std::optional<std::uint64_t> {
        if (k.empty() || k.size() > 10 || (k.size() > 1 && k[0] == '0'))
            return std::nullopt;
        std::uint64_t v = 0;
        for (char c : k)
        {
            if (c < '0' || c > '9')
                return std::nullopt;
            v = v * 10 + static_cast<std::uint64_t>(c - '0');
        }
        if (v >= 4294967295ull)
            return std::nullopt;
        return v;
    };
    std::vector<std::pair<std::uint64_t, std::string_view>> ints;
    std::vector<std::string_view> out;
    for (const auto& kv : o)
    {
        if (auto i = index_of(kv.key()))
            ints.emplace_back(*i, kv.key());
        else
            out.push_back(kv.key());
    }
    std::sort(ints.begin(), ints.end());
    std::vector<std::string_view> ordered;
    ordered.reserve(o.size());
    for (const auto& [i, k] : ints)
        ordered.push_back(k);
    ordered.insert(ordered.end(), out.begin(), out.end());
    return ordered;
}

std::string js_stringify(const boost::json::value& v)
{
    std::string out;
    stringify_impl(out, v, true);
    return out;
}

}  // namespace agentctx::compaction
