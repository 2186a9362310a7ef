// The line scanner: strict JSON validation plus capture of a few top-level and message fields.
#include "line_indexer.hpp"

#include "exact_json.hpp"

#include <charconv>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace agentctx::compaction::detail {

void line_fields::clear()
{
    is_object = false;
    type_kind = id_kind = parent_kind = message_kind = seen::absent;
    type.clear();
    id.clear();
    parent_id.clear();
    thinking_level.clear();
    provider.clear();
    model_id.clear();
    first_kept_entry_id.clear();
    target_id.clear();
    label.clear();
    label_kind = seen::absent;
    role.clear();
    message_provider.clear();
    message_model.clear();
    first_kept_entry_index.reset();
}

namespace {

int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

// Where a value's content goes, if anywhere.
struct target
{
    std::string* text = nullptr;
    seen* kind = nullptr;
    bool first_kept_index = false;
    bool message = false;
};

class scanner
{
public:
    // `to_newline`: the document ends at the first '\n' (which is then no whitespace) or at the
    // end of `s`, whichever comes first.
    scanner(
        std::string_view s,
        std::size_t max_depth,
        line_fields& f,
        string_skip_width strings,
        bool to_newline = false
    )
        : begin_(s.data()), p_(s.data()), end_(s.data() + s.size()), max_depth_(max_depth), f_(f),
          skip_(skipper_for(strings)), to_newline_(to_newline)
    {}

    bool document()
    {
        ws();
        if (p_ < end_ && *p_ == '{')
            f_.is_object = true;
        if (!value(0, {}, true))
            return false;
        ws();
        if (p_ != end_ && !(to_newline_ && *p_ == '\n'))
            return fail(errc::invalid_json, "unexpected data after the JSON value");
        return true;
    }

    // Where the scan stopped: after a document, its end (with the whitespace after it).
    const char* position() const { return p_; }

    errc code = errc::invalid_json;
    std::string message;

private:
    bool fail(errc c, const char* what)
    {
        code = c;
        message = std::string(c == errc::invalid_utf8 ? "text is not valid UTF-8" : "invalid JSON") +
                  " at byte " + std::to_string(p_ - begin_ + 1) + " (" + what + ")";
        return false;
    }

    void ws()
    {
        while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\r' || (*p_ == '\n' && !to_newline_)))
            ++p_;
    }

    bool value(std::size_t depth, target t, bool top = false)
    {
        // Most of a line is values nothing is captured from (message content, usage): those go
        // through a loop instead of the recursion, with the same checks in the same order.
        if (skip_ && !top && !t.text && !t.kind && !t.first_kept_index && !t.message)
            return uncaptured_value(depth);
        if (p_ >= end_)
            return fail(errc::invalid_json, "unexpected end");
        // A repeated key replaces what an earlier one captured: the last wins, as in the value
        // the line materializes to (and in JSON.parse).
        if (t.text)
            t.text->clear();
        if (t.first_kept_index)
            f_.first_kept_entry_index.reset();
        if (t.message)
        {
            f_.role.clear();
            f_.message_provider.clear();
            f_.message_model.clear();
        }
        switch (*p_)
        {
        case '{':
            if (t.kind)
                *t.kind = seen::object;
            return object(depth + 1, top, t.message);
        case '[':
            if (t.kind)
                *t.kind = seen::other;
            return array(depth + 1);
        case '"':
            if (t.kind)
                *t.kind = seen::string;
            return string(t.text);
        case 't':
            if (t.kind)
                *t.kind = seen::other;
            return literal("true");
        case 'f':
            if (t.kind)
                *t.kind = seen::other;
            return literal("false");
        case 'n':
            if (t.kind)
                *t.kind = seen::null;
            return literal("null");
        default:
            if (t.kind)
                *t.kind = seen::other;
            return number(t.first_kept_index);
        }
    }

    bool literal(const char* lit)
    {
        const std::size_t n = std::strlen(lit);
        if (static_cast<std::size_t>(end_ - p_) < n || std::memcmp(p_, lit, n) != 0)
            return fail(errc::invalid_json, "unexpected character");
        p_ += n;
        return true;
    }

    static bool digit(char c) { return c >= '0' && c <= '9'; }

    bool number(bool capture)
    {
        const char* start = p_;
        if (p_ < end_ && *p_ == '-')
            ++p_;
        if (p_ >= end_ || !digit(*p_))
            return fail(errc::invalid_json, "expected a value");
        if (*p_ == '0')
            ++p_;
        else
            while (p_ < end_ && digit(*p_))
                ++p_;
        if (p_ < end_ && *p_ == '.')
        {
            ++p_;
            if (p_ >= end_ || !digit(*p_))
                return fail(errc::invalid_json, "expected a digit after '.'");
            while (p_ < end_ && digit(*p_))
                ++p_;
        }
        std::size_t exponent_digits = 0;  // significant ones
        if (p_ < end_ && (*p_ == 'e' || *p_ == 'E'))
        {
            ++p_;
            if (p_ < end_ && (*p_ == '+' || *p_ == '-'))
                ++p_;
            if (p_ >= end_ || !digit(*p_))
                return fail(errc::invalid_json, "expected an exponent");
            for (; p_ < end_ && digit(*p_); ++p_)
                if (exponent_digits || *p_ != '0')
                    ++exponent_digits;
        }
        // Boost.JSON refuses exponents that (with the digits' own scale) overflow an int, where
        // JavaScript reads Infinity or 0. Refuse them here too, so the line fails at load and
        // never later when it is materialized. Only huge exponents or numbers can get there.
        if (exponent_digits >= 9 || p_ - start >= 100'000'000)
        {
            boost::system::error_code ec;
            (void)parse_exact(std::string_view(start, static_cast<std::size_t>(p_ - start)), 1, ec);
            if (ec)
                return fail(errc::invalid_json, "number exponent out of range");
        }
        if (capture)
        {
            double d = 0;
            std::from_chars(start, p_, d);
            f_.first_kept_entry_index = d >= -9e18 && d <= 9e18 ? static_cast<std::int64_t>(d) : -1;
        }
        return true;
    }

    static int hex(char c) { return hex_digit(c); }

    // The code unit of a `\uXXXX` escape at q, or 0x110000 when there is none.
    unsigned escaped_unit(const char* q) const
    {
        if (end_ - q < 6 || q[0] != '\\' || q[1] != 'u')
            return 0x110000;
        unsigned v = 0;
        for (int i = 2; i < 6; ++i)
        {
            const int h = hex(q[i]);
            if (h < 0)
                return 0x110000;
            v = v * 16 + static_cast<unsigned>(h);
        }
        return v;
    }

    bool hex4(unsigned& v)
    {
        if (end_ - p_ < 4)
            return fail(errc::invalid_json, "incomplete \\u escape");
        v = 0;
        for (int i = 0; i < 4; ++i)
        {
            const int h = hex(p_[i]);
            if (h < 0)
                return fail(errc::invalid_json, "invalid \\u escape");
            v = v * 16 + static_cast<unsigned>(h);
        }
        p_ += 4;
        return true;
    }

    static void append_utf8(std::string& out, char32_t cp)
    {
        if (cp < 0x80)
            out += static_cast<char>(cp);
        else if (cp < 0x800)
        {
            out += static_cast<char>(0xC0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        }
        else if (cp < 0x10000)
        {
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        }
        else
        {
            out += static_cast<char>(0xF0 | (cp >> 18));
            out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        }
    }

    // Validates one multi-byte UTF-8 sequence at p_ (p_[0] >= 0x80).
    bool utf8()
    {
        const auto b0 = static_cast<unsigned char>(*p_);
        std::size_t len;
        char32_t cp, min;
        if ((b0 & 0xE0) == 0xC0)
            len = 2, cp = b0 & 0x1F, min = 0x80;
        else if ((b0 & 0xF0) == 0xE0)
            len = 3, cp = b0 & 0x0F, min = 0x800;
        else if ((b0 & 0xF8) == 0xF0)
            len = 4, cp = b0 & 0x07, min = 0x10000;
        else
            return fail(errc::invalid_utf8, "invalid lead byte");
        if (static_cast<std::size_t>(end_ - p_) < len)
            return fail(errc::invalid_utf8, "truncated sequence");
        for (std::size_t k = 1; k < len; ++k)
        {
            const auto b = static_cast<unsigned char>(p_[k]);
            if ((b & 0xC0) != 0x80)
                return fail(errc::invalid_utf8, "invalid continuation byte");
            cp = (cp << 6) | (b & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return fail(errc::invalid_utf8, "overlong, surrogate or out-of-range sequence");
        p_ += len;
        return true;
    }

    // Length of the run of bytes that need no attention: not '"', '\\', a control or non-ASCII.
    std::size_t plain_run() const
    {
        const char* q = p_;
#if defined(__SSE2__)
        const __m128i quote = _mm_set1_epi8('"');
        const __m128i backslash = _mm_set1_epi8('\\');
        const __m128i space = _mm_set1_epi8(0x20);
        // Signed compare: bytes >= 0x80 are negative, so "< 0x20" also catches non-ASCII.
        const auto special = [&](const char* at) {
            const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(at));
            return static_cast<std::uint64_t>(static_cast<unsigned>(_mm_movemask_epi8(_mm_or_si128(
                _mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, backslash)), _mm_cmplt_epi8(x, space)
            ))));
        };
        // Most strings (keys, short values) end within 16 bytes; past that, a run is likely long
        // (tool output) and goes 64 bytes per step: one branch per four vectors.
        if (end_ - q >= 16)
        {
            if (const std::uint64_t mask = special(q))
                return static_cast<std::size_t>(__builtin_ctzll(mask));
            q += 16;
        }
        while (end_ - q >= 64)
        {
            const std::uint64_t mask =
                special(q) | special(q + 16) << 16 | special(q + 32) << 32 | special(q + 48) << 48;
            if (mask)
                return static_cast<std::size_t>(q - p_) + static_cast<std::size_t>(__builtin_ctzll(mask));
            q += 64;
        }
        while (end_ - q >= 16)
        {
            if (const std::uint64_t mask = special(q))
                return static_cast<std::size_t>(q - p_) + static_cast<std::size_t>(__builtin_ctzll(mask));
            q += 16;
        }
#endif
        while (q < end_)
        {
            const auto c = static_cast<unsigned char>(*q);
            if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80)
                break;
            ++q;
        }
        return static_cast<std::size_t>(q - p_);
    }

    // Skips what needs no attention of a string that is not captured (most bytes of a line:
    // tool outputs); true when that reached its closing quote.
    bool skipped_to_close(const std::string* out)
    {
        if (out || !skip_)
            return false;
        if (const char* closed = short_string_end(p_, end_))
        {
            p_ = closed;
            return true;
        }
        const string_skip s = skip_(p_, end_);
        p_ = s.at;
        return s.closed;
    }

    bool string(std::string* out)
    {
        ++p_;  // opening quote
        for (;;)
        {
            if (skipped_to_close(out))
                return true;
            const std::size_t run = plain_run();
            if (out)
                out->append(p_, run);
            p_ += run;
            if (p_ >= end_)
                return fail(errc::invalid_json, "unterminated string");
            const auto c = static_cast<unsigned char>(*p_);
            if (c == '"')
            {
                ++p_;
                return true;
            }
            if (c < 0x20)
                return fail(errc::invalid_json, "control character in string");
            if (!(c >= 0x80 ? utf8_sequence(out) : escape(out)))
                return false;
        }
    }

    // One multi-byte UTF-8 character of a string, validated. This and escape() stay out of
    // string()'s loop: they are rare, and inlined they cost the loop more than their calls do.
    [[gnu::noinline]] bool utf8_sequence(std::string* out)
    {
        const char* s = p_;
        if (!utf8())
            return false;
        if (out)
            out->append(s, p_);
        return true;
    }

    // The character a one-letter escape stands for; 0 for a letter that is not an escape.
    static char unescaped(char e)
    {
        switch (e)
        {
        case '"':
            return '"';
        case '\\':
            return '\\';
        case '/':
            return '/';
        case 'b':
            return '\b';
        case 'f':
            return '\f';
        case 'n':
            return '\n';
        case 'r':
            return '\r';
        case 't':
            return '\t';
        default:
            return 0;
        }
    }

    // A backslash escape of a string, at its backslash.
    [[gnu::noinline]] bool escape(std::string* out)
    {
        ++p_;
        if (p_ >= end_)
            return fail(errc::invalid_json, "unterminated escape");
        const char e = *p_++;
        if (e == 'u')
            return unicode_escape(out);
        const char plain = unescaped(e);
        if (!plain)
            return fail(errc::invalid_json, "invalid escape");
        if (out)
            *out += plain;
        return true;
    }

    // A \u escape after its `u`: a surrogate pair joins with the escape after it.
    bool unicode_escape(std::string* out)
    {
        unsigned u = 0;
        if (!hex4(u))
            return false;
        char32_t cp = u;
        if (u >= 0xDC00 && u <= 0xDFFF)
            cp = 0xFFFD;  // a lone trailing surrogate (see replace_lone_surrogates)
        else if (u >= 0xD800 && u <= 0xDBFF)
        {
            const unsigned lo = escaped_unit(p_);
            if (lo >= 0xDC00 && lo <= 0xDFFF)
            {
                p_ += 6;
                cp = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
            }
            else
                cp = 0xFFFD;  // a lone leading surrogate: the next escape is read on its own
        }
        if (out)
            append_utf8(*out, cp);
        return true;
    }

    // Keys are told apart by length first: each comparison is then one of a known size, which
    // the compiler inlines (comparing with a std::string called memcmp for every key).
    target top_target(std::string_view key)
    {
        switch (key.size())
        {
        case 2:
            return key == "id" ? target{&f_.id, &f_.id_kind} : target{};
        case 4:
            return key == "type" ? target{&f_.type, &f_.type_kind} : target{};
        case 5:
            return key == "label" ? target{&f_.label, &f_.label_kind} : target{};
        case 7:
            if (key == "message")
                return {nullptr, &f_.message_kind, false, true};
            return key == "modelId" ? target{&f_.model_id} : target{};
        case 8:
            if (key == "parentId")
                return {&f_.parent_id, &f_.parent_kind};
            if (key == "provider")
                return {&f_.provider};
            return key == "targetId" ? target{&f_.target_id} : target{};
        case 13:
            return key == "thinkingLevel" ? target{&f_.thinking_level} : target{};
        case 16:
            return key == "firstKeptEntryId" ? target{&f_.first_kept_entry_id} : target{};
        case 19:
            return key == "firstKeptEntryIndex" ? target{nullptr, nullptr, true} : target{};
        default:
            return {};
        }
    }

    target message_target(std::string_view key)
    {
        if (key == "role")
            return {&f_.role};
        if (key == "provider")
            return {&f_.message_provider};
        if (key == "model")
            return {&f_.message_model};
        return {};
    }

    // value(depth, {}) without recursion: open containers are a stack of bits (1 = object). The
    // checks, their order, the positions and messages are object()'s, array()'s and value()'s.
    bool uncaptured_value(std::size_t depth)
    {
        std::uint64_t open = 0;  // bit i: the container opened i levels deep here is an object
        std::size_t level = 0;
        for (;;)
        {
            // A value.
            if (p_ >= end_)
                return fail(errc::invalid_json, "unexpected end");
            const char c = *p_;
            if ((c == '{' || c == '[') && level == 64)
            {
                // Deeper than the bits reach (only with a max_depth over 64): the recursion.
                if (!(c == '{' ? object(depth + level + 1, false, false) : array(depth + level + 1)))
                    return false;
            }
            else if (c == '{' || c == '[')
            {
                if (depth + level + 1 > max_depth_)
                    return fail(errc::nesting_too_deep, "nesting deeper than the configured limit");
                ++p_;
                ws();
                const bool is_object = c == '{';
                open = (open & ~(std::uint64_t{1} << level)) | (std::uint64_t{is_object} << level);
                ++level;
                if (p_ < end_ && *p_ == (is_object ? '}' : ']'))
                {
                    ++p_;
                    --level;
                }
                else
                {
                    if (is_object && !member_key())
                        return false;
                    continue;
                }
            }
            else if (!scalar(c))
                return false;
            // After a value: the separator or the end of the containers it closes.
            for (;;)
            {
                if (level == 0)
                    return true;
                const bool in_object = (open >> (level - 1)) & 1;
                const next n = in_object ? after_item('}', "expected ',' or '}'")
                                         : after_item(']', "expected ',' or ']'");
                if (n == next::failed)
                    return false;
                if (n == next::closed)
                {
                    --level;
                    continue;
                }
                if (in_object && !member_key())
                    return false;
                break;
            }
        }
    }

    // A member's key (into `key`, when it is captured) and colon, up to its value.
    bool member_key(std::string* key = nullptr)
    {
        if (p_ >= end_ || *p_ != '"')
            return fail(errc::invalid_json, "expected a key");
        if (!string(key))
            return false;
        ws();
        if (p_ >= end_ || *p_ != ':')
            return fail(errc::invalid_json, "expected ':'");
        ++p_;
        ws();
        return true;
    }

    // A string, literal or number (value()'s cases for them, capturing nothing).
    bool scalar(char c)
    {
        switch (c)
        {
        case '"':
            return string(nullptr);
        case 't':
            return literal("true");
        case 'f':
            return literal("false");
        case 'n':
            return literal("null");
        default:
            return number(false);
        }
    }

    // What follows a container's opening or one of its items.
    enum class next
    {
        item,    // an item to read
        closed,  // the container ended
        failed,
    };

    // A container's opening bracket at `depth`, and whether it closes at once.
    next open_container(std::size_t depth, char close)
    {
        if (depth > max_depth_)
        {
            fail(errc::nesting_too_deep, "nesting deeper than the configured limit");
            return next::failed;
        }
        ++p_;
        ws();
        if (p_ < end_ && *p_ == close)
        {
            ++p_;
            return next::closed;
        }
        return next::item;
    }

    // After an item: a comma (and the whitespace after it), or the closing bracket.
    next after_item(char close, const char* expected)
    {
        ws();
        if (p_ < end_ && *p_ == ',')
        {
            ++p_;
            ws();
            return next::item;
        }
        if (p_ < end_ && *p_ == close)
        {
            ++p_;
            return next::closed;
        }
        fail(errc::invalid_json, expected);
        return next::failed;
    }

    bool object(std::size_t depth, bool top, bool message)
    {
        if (const next n = open_container(depth, '}'); n != next::item)
            return n == next::closed;
        const bool keys_matter = top || message;
        std::string key;
        for (;;)
        {
            key.clear();
            if (!member_key(keys_matter ? &key : nullptr))
                return false;
            const target t = top ? top_target(key) : message ? message_target(key) : target{};
            if (!value(depth, t))
                return false;
            if (const next n = after_item('}', "expected ',' or '}'"); n != next::item)
                return n == next::closed;
        }
    }

    bool array(std::size_t depth)
    {
        if (const next n = open_container(depth, ']'); n != next::item)
            return n == next::closed;
        for (;;)
        {
            if (!value(depth, {}))
                return false;
            if (const next n = after_item(']', "expected ',' or ']'"); n != next::item)
                return n == next::closed;
        }
    }

    const char* begin_;
    const char* p_;
    const char* end_;
    std::size_t max_depth_;
    line_fields& f_;
    string_skipper skip_;  // null: the scalar scanner does it all
    bool to_newline_;
};

}  // namespace

errc line_indexer::scan_line(
    std::string_view text, std::size_t max_depth, line_fields& out, std::string& message, std::size_t& length
)
{
    // Nothing but whitespace consumes a '\n' (in a string it is a control character, and no
    // number, literal or escape holds one), and that stops at it here: a document that ends at
    // the first '\n' is exactly a valid line, with the same fields captured.
    out.clear();
    scanner s(text, max_depth, out, string_skip_width::best, true);
    if (s.document())
    {
        length = static_cast<std::size_t>(s.position() - text.data());
        return errc{};
    }
    const void* nl = std::memchr(text.data(), '\n', text.size());
    length = nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - text.data()) : text.size();
    return scan(text.substr(0, length), max_depth, out, message);  // the message of the line alone
}

result<line_fields*> line_indexer::index(std::string_view line, diagnostics& diag)
{
    if (const errc code = scan(line, max_depth_, fields_, diag.message); code != errc{})
        return code;
    return &fields_;
}

errc line_indexer::scan(
    std::string_view line,
    std::size_t max_depth,
    line_fields& out,
    std::string& message,
    string_skip_width strings
)
{
    out.clear();
    scanner s(line, max_depth, out, strings);
    if (!s.document())
    {
        message = std::move(s.message);
        return s.code;
    }
    return errc{};
}

}  // namespace agentctx::compaction::detail

namespace agentctx::compaction::detail {

namespace {

// The code unit of a `\uXXXX` escape at text[i], or 0x110000 when there is none.
unsigned unit_at(std::string_view text, std::size_t i)
{
    if (text.size() - i < 6 || text[i] != '\\' || text[i + 1] != 'u')
        return 0x110000;
    unsigned v = 0;
    for (std::size_t k = i + 2; k < i + 6; ++k)
    {
        const int h = hex_digit(text[k]);
        if (h < 0)
            return 0x110000;
        v = v * 16 + static_cast<unsigned>(h);
    }
    return v;
}

// Decodes one UTF-8 sequence at s[i] (validity already matters only for whitespace tests).
char32_t decode_at(std::string_view s, std::size_t& i)
{
    const auto b0 = static_cast<unsigned char>(s[i]);
    std::size_t len = b0 < 0x80             ? 1
                      : (b0 & 0xE0) == 0xC0 ? 2
                      : (b0 & 0xF0) == 0xE0 ? 3
                      : (b0 & 0xF8) == 0xF0 ? 4
                                            : 0;
    if (len == 0 || s.size() - i < len)
    {
        ++i;
        return 0x110000;
    }
    char32_t cp = len == 1 ? b0 : b0 & (0x7F >> len);
    for (std::size_t k = 1; k < len; ++k)
    {
        const auto b = static_cast<unsigned char>(s[i + k]);
        if ((b & 0xC0) != 0x80)
        {
            ++i;
            return 0x110000;
        }
        cp = (cp << 6) | (b & 0x3F);
    }
    i += len;
    return cp;
}

bool js_space(char32_t c)
{
    switch (c)
    {
    case 0x09:
    case 0x0A:
    case 0x0B:
    case 0x0C:
    case 0x0D:
    case 0x20:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
    case 0xFEFF:
        return true;
    default:
        return c >= 0x2000 && c <= 0x200A;
    }
}

}  // namespace

std::optional<std::string> replace_lone_surrogates(std::string_view text)
{
    std::optional<std::string> out;
    for (std::size_t i = 0; i < text.size();)
    {
        if (text[i] != '\\')
        {
            ++i;
            continue;
        }
        const unsigned u = unit_at(text, i);
        if (u > 0xFFFF)
        {
            i += 2;  // some other escape (or an invalid one, left for the parser to report)
            continue;
        }
        if (u >= 0xD800 && u <= 0xDBFF)
        {
            const unsigned lo = unit_at(text, i + 6);
            if (lo >= 0xDC00 && lo <= 0xDFFF)
            {
                i += 12;  // a proper pair
                continue;
            }
        }
        else if (u < 0xDC00 || u > 0xDFFF)
        {
            i += 6;
            continue;
        }
        if (!out)
            out.emplace(text);
        out->replace(i + 2, 4, "fffd");
        i += 6;
    }
    return out;
}

blank_kind classify_blank(std::string_view line)
{
    bool ascii = true;
    for (std::size_t i = 0; i < line.size();)
    {
        const char32_t c = decode_at(line, i);
        if (!js_space(c))
            return blank_kind::not_blank;
        ascii = ascii && (c == ' ' || c == '\t' || c == '\r');
    }
    return ascii ? blank_kind::json_blank : blank_kind::js_blank;
}

}  // namespace agentctx::compaction::detail
