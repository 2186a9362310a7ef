// The vector string skipper of the line scanner: 64-byte blocks, escapes resolved by bitmasks.
#include "string_skip.hpp"

#include <array>
#include <cstddef>
#include <cstdint>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define AGENTCTX_STRING_SKIP_X86 1
#include <immintrin.h>
#endif

namespace agentctx::compaction::detail {

namespace {

// The positions of a 64-byte block that a backslash escapes. `carry` says whether the block's
// first byte is escaped by a backslash run that ended the previous block, and is updated for the
// next one. A run of backslashes escapes the byte after it when its length is odd; adding each
// run's start bit to the run carries past its end, which tells runs that start on even positions
// from those on odd ones (simdjson's method, on one 64-bit word).
inline std::uint64_t escaped_positions(std::uint64_t backslashes, std::uint64_t& carry) noexcept
{
    constexpr std::uint64_t even_bits = 0x5555'5555'5555'5555ULL;
    backslashes &= ~carry;  // an escaped backslash starts no escape
    const std::uint64_t follows_backslash = (backslashes << 1) | carry;
    const std::uint64_t odd_starts = backslashes & ~even_bits & ~follows_backslash;
    std::uint64_t even_start_runs = 0;
    carry = __builtin_add_overflow(odd_starts, backslashes, &even_start_runs) ? 1 : 0;
    const std::uint64_t invert = even_start_runs << 1;
    return (even_bits ^ invert) & follows_backslash;
}

constexpr std::uint64_t lowest(std::uint64_t m)
{
    return m & (0 - m);
}

constexpr std::uint64_t below_lowest(std::uint64_t m)
{
    return m ? lowest(m) - 1 : ~std::uint64_t{0};
}

// How many bytes at the end of [.., p) begin a UTF-8 sequence that continues at p (0 to 3).
inline std::ptrdiff_t open_sequence_bytes(const char* p)
{
    const auto b = [p](int back) { return static_cast<unsigned char>(p[-back]); };
    return b(1) >= 0xC0 ? 1 : b(2) >= 0xE0 ? 2 : b(3) >= 0xF0 ? 3 : 0;
}

// The bytes that may follow a backslash without needing the scalar scanner: `" \\ / b f n r t`
// ('u' does: four hex digits and surrogates follow).
constexpr std::array<bool, 256> simple_escapes = [] {
    std::array<bool, 256> t{};
    for (const unsigned char c : {'"', '\\', '/', 'b', 'f', 'n', 'r', 't'})
        t[c] = true;
    return t;
}();

using nibble_table = std::array<std::uint8_t, 16>;

// The same set as two nibble tables, for a vector of bytes at once: each high nibble that holds a
// member has a bit, set in the low-nibble entries of its members.
constexpr nibble_table escape_low = {0, 0, 1 | 4 | 8, 0, 8, 0, 4, 0, 0, 0, 0, 0, 2, 0, 4, 1};
constexpr nibble_table escape_high = {0, 0, 1, 0, 0, 2, 4, 8, 0, 0, 0, 0, 0, 0, 0, 0};
static_assert([] {
    for (unsigned c = 0; c < 256; ++c)
        if (((escape_low[c & 15] & escape_high[c >> 4]) != 0) != simple_escapes[c])
            return false;
    return true;
}());

// UTF-8 validation of a vector of bytes after the one before it (Keiser and Lemire, "Validating
// UTF-8 in less than one instruction per byte", 2021): three 16-entry tables classify each pair of
// adjacent bytes by the first byte's high and low nibble and the second byte's high nibble; a bit
// left set in all three names an error. Third and fourth bytes of long sequences are checked by
// their distance from the lead. The result is nonzero at each byte where an error shows, which is
// never after the first byte that breaks the sequence.
namespace utf8 {

constexpr std::uint8_t too_short =
    1 << 0;                                // lead or ASCII, then a lead or ASCII where a continuation must be
constexpr std::uint8_t too_long = 1 << 1;  // ASCII, then a continuation
constexpr std::uint8_t overlong_3 = 1 << 2;                       // E0, then 80-9F
constexpr std::uint8_t too_large = 1 << 3;                        // F4 then 90-BF, or F5-FF
constexpr std::uint8_t surrogate = 1 << 4;                        // ED, then A0-BF
constexpr std::uint8_t overlong_2 = 1 << 5;                       // C0 or C1
constexpr std::uint8_t too_large_1000 = 1 << 6;                   // F5-FF, then 80-8F
constexpr std::uint8_t overlong_4 = 1 << 6;                       // F0, then 80-8F
constexpr std::uint8_t two_conts = 1 << 7;                        // a continuation, then a continuation
constexpr std::uint8_t carry = too_short | too_long | two_conts;  // decided by the first byte's high nibble
constexpr std::uint8_t large = carry | too_large | too_large_1000;

// Indexed by the first byte's high nibble, its low nibble, and the second byte's high nibble.
constexpr nibble_table first_high = {
    too_long,
    too_long,
    too_long,
    too_long,
    too_long,
    too_long,
    too_long,
    too_long,
    two_conts,
    two_conts,
    two_conts,
    two_conts,
    too_short | overlong_2,
    too_short,
    too_short | overlong_3 | surrogate,
    too_short | too_large | too_large_1000 | overlong_4};
constexpr nibble_table first_low = {
    carry | overlong_3 | overlong_2 | overlong_4,
    carry | overlong_2,
    carry,
    carry,
    carry | too_large,
    large,
    large,
    large,
    large,
    large,
    large,
    large,
    large,
    large | surrogate,
    large,
    large};
constexpr nibble_table second_high = {
    too_short,
    too_short,
    too_short,
    too_short,
    too_short,
    too_short,
    too_short,
    too_short,
    too_long | overlong_2 | two_conts | overlong_3 | too_large_1000 | overlong_4,
    too_long | overlong_2 | two_conts | overlong_3 | too_large,
    too_long | overlong_2 | two_conts | surrogate | too_large,
    too_long | overlong_2 | two_conts | surrogate | too_large,
    too_short,
    too_short,
    too_short,
    too_short};

// A byte two after a lead of 3 or 4 bytes, or three after a lead of 4, must be a continuation that
// follows a continuation: exactly where two_conts is expected, so it cancels. These are subtracted
// with saturation from the bytes two and three back: only such leads stay at or above 0x80.
constexpr std::uint8_t third_byte_lead = 0xE0 - 0x80;
constexpr std::uint8_t fourth_byte_lead = 0xF0 - 0x80;

}  // namespace utf8

// What the vector code found in one 64-byte block: a bit per byte.
struct block_bits
{
    std::uint64_t quotes, backslashes, controls, simple_escapes, utf8_errors;
};

// The scalar half of a block step, shared by the vector widths. Returns true when the block
// decides the string (into `out`); false to go on with the next block.
[[gnu::always_inline]] inline bool decide(
    const char* p, const block_bits& b, std::uint64_t escaped, string_skip& out
)
{
    const std::uint64_t closing = b.quotes & ~escaped;
    const std::uint64_t before_close = below_lowest(closing);
    // The closing quote itself may end a sequence too soon.
    if (b.utf8_errors & (before_close | lowest(closing)))
    {
        out = {nullptr, false};  // the caller hands over at the block's boundary
        return true;
    }
    const std::uint64_t controls = b.controls & before_close;
    if (const std::uint64_t invalid = escaped & ~b.simple_escapes & before_close & below_lowest(controls))
    {
        out = {p + __builtin_ctzll(invalid) - 1, false};  // its backslash (p - 1 when a carry escaped byte 0)
        return true;
    }
    if (controls)
    {
        // An escaped control byte is an invalid escape: hand over its backslash.
        const int i = __builtin_ctzll(controls);
        out = {p + i - static_cast<int>((escaped >> i) & 1), false};
        return true;
    }
    if (closing)
    {
        out = {p + __builtin_ctzll(closing) + 1, true};
        return true;
    }
    return false;
}

// Where to hand over at the start of the block at `p`: not inside an escape or a UTF-8 sequence.
inline const char* block_boundary(const char* start, const char* p, std::uint64_t escape_carry)
{
    return p == start ? p : escape_carry ? p - 1 : p - open_sequence_bytes(p);
}

#if defined(AGENTCTX_STRING_SKIP_X86)

// ---- AVX2: a block is two 32-byte vectors ---------------------------------------------------

#define AGENTCTX_AVX2 __attribute__((target("avx2,bmi,bmi2")))

AGENTCTX_AVX2 inline __m256i lookup(const nibble_table& t, __m256i nibbles)
{
    return _mm256_shuffle_epi8(
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t.data()))), nibbles
    );
}

AGENTCTX_AVX2 inline __m256i low_nibbles(__m256i x)
{
    return _mm256_and_si256(x, _mm256_set1_epi8(0x0F));
}

AGENTCTX_AVX2 inline __m256i high_nibbles(__m256i x)
{
    return _mm256_and_si256(_mm256_srli_epi16(x, 4), _mm256_set1_epi8(0x0F));
}

// The 32 bytes of `input`, each with the one `n` places before it (from `before` at the start).
template <int n>
AGENTCTX_AVX2 inline __m256i preceding(__m256i input, __m256i before)
{
    return _mm256_alignr_epi8(input, _mm256_permute2x128_si256(before, input, 0x21), 16 - n);
}

AGENTCTX_AVX2 inline __m256i utf8_errors(__m256i input, __m256i before)
{
    const __m256i prev1 = preceding<1>(input, before);
    const __m256i special = _mm256_and_si256(
        _mm256_and_si256(
            lookup(utf8::first_high, high_nibbles(prev1)), lookup(utf8::first_low, low_nibbles(prev1))
        ),
        lookup(utf8::second_high, high_nibbles(input))
    );
    const __m256i third = _mm256_subs_epu8(
        preceding<2>(input, before), _mm256_set1_epi8(static_cast<char>(utf8::third_byte_lead))
    );
    const __m256i fourth = _mm256_subs_epu8(
        preceding<3>(input, before), _mm256_set1_epi8(static_cast<char>(utf8::fourth_byte_lead))
    );
    const __m256i must_continue =
        _mm256_and_si256(_mm256_or_si256(third, fourth), _mm256_set1_epi8(static_cast<char>(0x80)));
    return _mm256_xor_si256(must_continue, special);
}

AGENTCTX_AVX2 inline std::uint64_t join(int lo, int hi)
{
    return static_cast<std::uint64_t>(static_cast<std::uint32_t>(lo)) |
           static_cast<std::uint64_t>(static_cast<std::uint32_t>(hi)) << 32;
}

AGENTCTX_AVX2 inline std::uint64_t equal_bits(__m256i lo, __m256i hi, char c)
{
    const __m256i v = _mm256_set1_epi8(c);
    return join(
        _mm256_movemask_epi8(_mm256_cmpeq_epi8(lo, v)), _mm256_movemask_epi8(_mm256_cmpeq_epi8(hi, v))
    );
}

AGENTCTX_AVX2 inline std::uint64_t nonzero_bits(__m256i lo, __m256i hi)
{
    const __m256i zero = _mm256_setzero_si256();
    return ~join(
        _mm256_movemask_epi8(_mm256_cmpeq_epi8(lo, zero)), _mm256_movemask_epi8(_mm256_cmpeq_epi8(hi, zero))
    );
}

AGENTCTX_AVX2 inline std::uint64_t control_bits(__m256i lo, __m256i hi)
{
    const __m256i max = _mm256_set1_epi8(0x1F);
    return join(
        _mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_min_epu8(lo, max), lo)),
        _mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_min_epu8(hi, max), hi))
    );
}

AGENTCTX_AVX2 inline __m256i simple_escape_bytes(__m256i x)
{
    return _mm256_and_si256(lookup(escape_low, low_nibbles(x)), lookup(escape_high, high_nibbles(x)));
}

AGENTCTX_AVX2 string_skip skip_avx2(const char* p, const char* end) noexcept
{
    string_skip out;
    const char* const start = p;
    std::uint64_t carry = 0;  // the previous block's last backslash escapes this block's first byte
    __m256i before = _mm256_setzero_si256();  // the previous 32 bytes, for UTF-8 sequences across blocks
    bool open_sequence = false;               // the previous block ends inside a UTF-8 sequence
    for (; end - p >= 64; p += 64)
    {
        const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
        const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32));
        const bool check_utf8 = open_sequence || _mm256_movemask_epi8(_mm256_or_si256(lo, hi)) != 0;
        const block_bits b{
            equal_bits(lo, hi, '"'),
            equal_bits(lo, hi, '\\'),
            control_bits(lo, hi),
            nonzero_bits(simple_escape_bytes(lo), simple_escape_bytes(hi)),
            check_utf8 ? nonzero_bits(utf8_errors(lo, before), utf8_errors(hi, lo)) : 0};
        const std::uint64_t carry_in = carry;
        if (decide(p, b, escaped_positions(b.backslashes, carry), out))
            return out.at ? out : string_skip{block_boundary(start, p, carry_in), false};
        open_sequence = check_utf8 && open_sequence_bytes(p + 64) != 0;
        before = hi;
    }
    return {block_boundary(start, p, carry), false};
}

#undef AGENTCTX_AVX2

// ---- AVX-512 (BW and VBMI): a block is one vector, its bitmasks come from mask registers ------

#define AGENTCTX_AVX512 __attribute__((target("avx512f,avx512bw,avx512vbmi,bmi,bmi2")))

// Every constant vector of the loop, made once per string (GCC rebuilt them in every block).
struct avx512_constants
{
    __m512i nibble_mask, quote, backslash, space, third_lead, fourth_lead, high_bit;
    __m512i escape_low, escape_high, first_high, first_low, second_high;
    __m512i back1, back2, back3;  // byte i takes index 64 - n + i of `before` then the block
};

AGENTCTX_AVX512 inline __m512i broadcast_table(const nibble_table& t)
{
    // (maskz: the unmasked form reads an undefined vector, which GCC 12 reports as uninitialized)
    return _mm512_maskz_broadcast_i32x4(0xFFFF, _mm_loadu_si128(reinterpret_cast<const __m128i*>(t.data())));
}

template <int n>
AGENTCTX_AVX512 inline __m512i back_index()
{
    alignas(64) static constexpr auto index = [] {
        std::array<std::uint8_t, 64> t{};
        for (int i = 0; i < 64; ++i)
            t[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(64 - n + i);
        return t;
    }();
    return _mm512_load_si512(index.data());
}

AGENTCTX_AVX512 inline avx512_constants make_avx512_constants()
{
    return {
        _mm512_set1_epi8(0x0F),
        _mm512_set1_epi8('"'),
        _mm512_set1_epi8('\\'),
        _mm512_set1_epi8(0x20),
        _mm512_set1_epi8(static_cast<char>(utf8::third_byte_lead)),
        _mm512_set1_epi8(static_cast<char>(utf8::fourth_byte_lead)),
        _mm512_set1_epi8(static_cast<char>(0x80)),
        broadcast_table(escape_low),
        broadcast_table(escape_high),
        broadcast_table(utf8::first_high),
        broadcast_table(utf8::first_low),
        broadcast_table(utf8::second_high),
        back_index<1>(),
        back_index<2>(),
        back_index<3>()};
}

// `x_high`: the block's high nibbles (also used for the escapes).
AGENTCTX_AVX512 inline std::uint64_t utf8_errors512(
    const avx512_constants& k, __m512i x, __m512i x_high, __m512i before
)
{
    const __m512i prev1 = _mm512_permutex2var_epi8(before, k.back1, x);
    const __m512i prev1_high = _mm512_and_si512(_mm512_srli_epi16(prev1, 4), k.nibble_mask);
    const __m512i special = _mm512_and_si512(
        _mm512_and_si512(
            _mm512_shuffle_epi8(k.first_high, prev1_high),
            _mm512_shuffle_epi8(k.first_low, _mm512_and_si512(prev1, k.nibble_mask))
        ),
        _mm512_shuffle_epi8(k.second_high, x_high)
    );
    const __m512i third = _mm512_subs_epu8(_mm512_permutex2var_epi8(before, k.back2, x), k.third_lead);
    const __m512i fourth = _mm512_subs_epu8(_mm512_permutex2var_epi8(before, k.back3, x), k.fourth_lead);
    const __m512i must_continue = _mm512_and_si512(_mm512_or_si512(third, fourth), k.high_bit);
    const __m512i errors = _mm512_xor_si512(must_continue, special);
    return _mm512_test_epi8_mask(errors, errors);
}

AGENTCTX_AVX512 string_skip skip_avx512(const char* p, const char* end) noexcept
{
    const avx512_constants k = make_avx512_constants();
    string_skip out;
    const char* const start = p;
    std::uint64_t carry = 0;  // the previous block's last backslash escapes this block's first byte
    __m512i before = _mm512_setzero_si512();  // the previous block, for UTF-8 sequences across blocks
    bool open_sequence = false;               // the previous block ends inside a UTF-8 sequence
    for (; end - p >= 64; p += 64)
    {
        const __m512i x = _mm512_loadu_si512(p);
        const __m512i x_high = _mm512_and_si512(_mm512_srli_epi16(x, 4), k.nibble_mask);
        const bool check_utf8 = open_sequence || _mm512_movepi8_mask(x) != 0;
        const __m512i simple = _mm512_and_si512(
            _mm512_shuffle_epi8(k.escape_low, _mm512_and_si512(x, k.nibble_mask)),
            _mm512_shuffle_epi8(k.escape_high, x_high)
        );
        const block_bits b{
            _mm512_cmpeq_epi8_mask(x, k.quote),
            _mm512_cmpeq_epi8_mask(x, k.backslash),
            _mm512_cmplt_epu8_mask(x, k.space),
            _mm512_test_epi8_mask(simple, simple),
            check_utf8 ? utf8_errors512(k, x, x_high, before) : 0};
        const std::uint64_t carry_in = carry;
        if (decide(p, b, escaped_positions(b.backslashes, carry), out))
            return out.at ? out : string_skip{block_boundary(start, p, carry_in), false};
        open_sequence = check_utf8 && open_sequence_bytes(p + 64) != 0;
        before = x;
    }
    return {block_boundary(start, p, carry), false};
}

#undef AGENTCTX_AVX512

string_skip_width machine_width() noexcept
{
    static const string_skip_width w = [] {
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vbmi") &&
            __builtin_cpu_supports("bmi2"))
            return string_skip_width::avx512;
        if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2"))
            return string_skip_width::avx2;
        return string_skip_width::scalar;
    }();
    return w;
}

#endif

}  // namespace

string_skip_width best_string_skip_width() noexcept
{
#if defined(AGENTCTX_STRING_SKIP_X86)
    return machine_width();
#else
    return string_skip_width::scalar;
#endif
}

bool has_string_skip_width(string_skip_width width) noexcept
{
    const string_skip_width best = best_string_skip_width();
    switch (width)
    {
    case string_skip_width::scalar:
    case string_skip_width::best:
        return true;
    case string_skip_width::avx2:
        return best == string_skip_width::avx2 || best == string_skip_width::avx512;
    case string_skip_width::avx512:
        return best == string_skip_width::avx512;
    }
    return false;
}

string_skipper skipper_for(string_skip_width width) noexcept
{
    if (width == string_skip_width::best)
        width = best_string_skip_width();
    if (!has_string_skip_width(width))
        return nullptr;
#if defined(AGENTCTX_STRING_SKIP_X86)
    switch (width)
    {
    case string_skip_width::avx512:
        return &skip_avx512;
    case string_skip_width::avx2:
        return &skip_avx2;
    default:
        break;
    }
#endif
    return nullptr;
}

string_skip skip_string(const char* p, const char* end, string_skip_width width) noexcept
{
    const string_skipper skip = skipper_for(width);
    if (!skip)
        return {p, false};
    if (const char* closed = short_string_end(p, end))
        return {closed, true};
    return skip(p, end);
}

}  // namespace agentctx::compaction::detail
