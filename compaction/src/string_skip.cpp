// The vector string skipper of the line scanner: 64-byte blocks, escapes resolved by bitmasks.
#include "string_skip.hpp"

#include <array>
#include <cstdint>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define AGENTCTX_STRING_SKIP_AVX2 1
#include <immintrin.h>
#endif

namespace agentctx::compaction::detail {

namespace {

// The positions of a 64-byte block that a backslash escapes. `carry` says whether the block's
// first byte is escaped by a backslash run that ended the previous block, and is updated for the
// next one. A run of backslashes escapes the byte after it when its length is odd; adding each
// run's start bit to the run carries past its end, which tells runs that start on even positions
// from those on odd ones (simdjson's method, on one 64-bit word).
std::uint64_t escaped_positions(std::uint64_t backslashes, std::uint64_t& carry) noexcept
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

#if defined(AGENTCTX_STRING_SKIP_AVX2)

// UTF-8 validation of 32 bytes after the 32 before them (Keiser and Lemire, "Validating UTF-8 in
// less than one instruction per byte", 2021): three 16-entry tables classify each pair of
// adjacent bytes by the first byte's high and low nibble and the second byte's high nibble; a
// bit left set in all three names an error. Third and fourth bytes of long sequences are checked
// by their distance from the lead. The result is nonzero at each byte where an error shows,
// which is never after the first byte that breaks the sequence.
namespace utf8 {

constexpr std::uint8_t too_short = 1 << 0;   // lead or ASCII, then a lead or ASCII where a continuation must be
constexpr std::uint8_t too_long = 1 << 1;    // ASCII, then a continuation
constexpr std::uint8_t overlong_3 = 1 << 2;  // E0, then 80-9F
constexpr std::uint8_t too_large = 1 << 3;   // F4 then 90-BF, or F5-FF
constexpr std::uint8_t surrogate = 1 << 4;   // ED, then A0-BF
constexpr std::uint8_t overlong_2 = 1 << 5;  // C0 or C1
constexpr std::uint8_t too_large_1000 = 1 << 6;  // F5-FF, then 80-8F
constexpr std::uint8_t overlong_4 = 1 << 6;      // F0, then 80-8F
constexpr std::uint8_t two_conts = 1 << 7;       // a continuation, then a continuation
constexpr std::uint8_t carry = too_short | too_long | two_conts;  // decided by the first byte's high nibble

using table = std::array<std::uint8_t, 16>;

// Indexed by the first byte's high nibble, its low nibble, and the second byte's high nibble.
constexpr table first_high = {too_long, too_long, too_long, too_long, too_long, too_long, too_long, too_long,
                              two_conts, two_conts, two_conts, two_conts, too_short | overlong_2, too_short,
                              too_short | overlong_3 | surrogate, too_short | too_large | too_large_1000 | overlong_4};
constexpr std::uint8_t large = carry | too_large | too_large_1000;
constexpr table first_low = {carry | overlong_3 | overlong_2 | overlong_4, carry | overlong_2, carry, carry,
                             carry | too_large, large, large, large, large, large, large, large, large,
                             large | surrogate, large, large};
constexpr table second_high = {too_short, too_short, too_short, too_short, too_short, too_short, too_short, too_short,
                               too_long | overlong_2 | two_conts | overlong_3 | too_large_1000 | overlong_4,
                               too_long | overlong_2 | two_conts | overlong_3 | too_large,
                               too_long | overlong_2 | two_conts | surrogate | too_large,
                               too_long | overlong_2 | two_conts | surrogate | too_large,
                               too_short, too_short, too_short, too_short};

__attribute__((target("avx2"))) inline __m256i lookup(const table& t, __m256i nibbles)
{
    return _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t.data()))), nibbles);
}

__attribute__((target("avx2"))) inline __m256i high_nibbles(__m256i x)
{
    return _mm256_and_si256(_mm256_srli_epi16(x, 4), _mm256_set1_epi8(0x0F));
}

// The 32 bytes of `input`, each with the one `n` places before it (from `before` at the start).
template <int n>
__attribute__((target("avx2"))) inline __m256i preceding(__m256i input, __m256i before)
{
    return _mm256_alignr_epi8(input, _mm256_permute2x128_si256(before, input, 0x21), 16 - n);
}

__attribute__((target("avx2"))) inline __m256i errors(__m256i input, __m256i before)
{
    const __m256i prev1 = preceding<1>(input, before);
    const __m256i byte_1_high = lookup(first_high, high_nibbles(prev1));
    const __m256i byte_1_low = lookup(first_low, _mm256_and_si256(prev1, _mm256_set1_epi8(0x0F)));
    const __m256i byte_2_high = lookup(second_high, high_nibbles(input));
    const __m256i special = _mm256_and_si256(_mm256_and_si256(byte_1_high, byte_1_low), byte_2_high);
    // A byte two after a lead of 3 or 4 bytes, or three after a lead of 4, must be a continuation
    // that follows a continuation: exactly where two_conts is expected, so it cancels.
    const __m256i third = _mm256_subs_epu8(preceding<2>(input, before), _mm256_set1_epi8(static_cast<char>(0xE0 - 0x80)));
    const __m256i fourth = _mm256_subs_epu8(preceding<3>(input, before), _mm256_set1_epi8(static_cast<char>(0xF0 - 0x80)));
    const __m256i must_continue = _mm256_and_si256(_mm256_or_si256(third, fourth), _mm256_set1_epi8(static_cast<char>(0x80)));
    return _mm256_xor_si256(must_continue, special);
}

}  // namespace utf8

__attribute__((target("avx2"))) inline std::uint64_t join(int lo, int hi)
{
    return static_cast<std::uint64_t>(static_cast<std::uint32_t>(lo)) | static_cast<std::uint64_t>(static_cast<std::uint32_t>(hi)) << 32;
}

__attribute__((target("avx2"))) inline std::uint64_t equal_bits(__m256i lo, __m256i hi, char c)
{
    const __m256i v = _mm256_set1_epi8(c);
    return join(_mm256_movemask_epi8(_mm256_cmpeq_epi8(lo, v)), _mm256_movemask_epi8(_mm256_cmpeq_epi8(hi, v)));
}

__attribute__((target("avx2"))) inline std::uint64_t control_bits(__m256i lo, __m256i hi)
{
    const __m256i max = _mm256_set1_epi8(0x1F);
    return join(_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_min_epu8(lo, max), lo)),
                _mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_min_epu8(hi, max), hi)));
}

__attribute__((target("avx2"))) inline std::uint64_t nonzero_bits(__m256i lo, __m256i hi)
{
    const __m256i zero = _mm256_setzero_si256();
    return ~join(_mm256_movemask_epi8(_mm256_cmpeq_epi8(lo, zero)), _mm256_movemask_epi8(_mm256_cmpeq_epi8(hi, zero)));
}

// The bytes that may follow a backslash without needing the scalar scanner: `" \\ / b f n r t`
// ('u' does: four hex digits and surrogates follow).
constexpr std::array<bool, 256> simple_escapes = [] {
    std::array<bool, 256> t{};
    for (const unsigned char c : {'"', '\\', '/', 'b', 'f', 'n', 'r', 't'})
        t[c] = true;
    return t;
}();

// The same set as two nibble tables, for 32 bytes at once: each high nibble that holds a member
// has a bit, set in the low-nibble entries of its members.
constexpr std::array<std::uint8_t, 16> escape_low = {0, 0, 1 | 4 | 8, 0, 8, 0, 4, 0, 0, 0, 0, 0, 2, 0, 4, 1};
constexpr std::array<std::uint8_t, 16> escape_high = {0, 0, 1, 0, 0, 2, 4, 8, 0, 0, 0, 0, 0, 0, 0, 0};
static_assert([] {
    for (unsigned c = 0; c < 256; ++c)
        if (((escape_low[c & 15] & escape_high[c >> 4]) != 0) != simple_escapes[c])
            return false;
    return true;
}());

__attribute__((target("avx2"))) inline __m256i nibble_lookup(const std::array<std::uint8_t, 16>& t, __m256i nibbles)
{
    return _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t.data()))), nibbles);
}

__attribute__((target("avx2"))) inline __m256i simple_escape_bytes(__m256i x)
{
    const __m256i low = nibble_lookup(escape_low, _mm256_and_si256(x, _mm256_set1_epi8(0x0F)));
    const __m256i high = nibble_lookup(escape_high, _mm256_and_si256(_mm256_srli_epi16(x, 4), _mm256_set1_epi8(0x0F)));
    return _mm256_and_si256(low, high);
}

__attribute__((target("avx2"))) inline std::uint64_t simple_escape_bits(__m256i lo, __m256i hi)
{
    const __m256i zero = _mm256_setzero_si256();
    return ~join(_mm256_movemask_epi8(_mm256_cmpeq_epi8(simple_escape_bytes(lo), zero)),
                 _mm256_movemask_epi8(_mm256_cmpeq_epi8(simple_escape_bytes(hi), zero)));
}

constexpr std::uint64_t below_lowest(std::uint64_t m)
{
    return m ? (m & (0 - m)) - 1 : ~std::uint64_t{0};
}

// How many bytes at the end of [.., p) begin a UTF-8 sequence that continues at p (0 to 3).
std::ptrdiff_t open_sequence_bytes(const char* p)
{
    const auto b = [p](int back) { return static_cast<unsigned char>(p[-back]); };
    return b(1) >= 0xC0 ? 1 : b(2) >= 0xE0 ? 2 : b(3) >= 0xF0 ? 3 : 0;
}

__attribute__((target("avx2,bmi,bmi2"))) string_skip skip_avx2(const char* p, const char* end) noexcept
{
    const char* const start = p;
    std::uint64_t carry = 0;  // the previous block's last backslash escapes this block's first byte
    __m256i before = _mm256_setzero_si256();  // the previous 32 bytes, for UTF-8 sequences across blocks
    bool open_sequence = false;               // the previous block ends inside a UTF-8 sequence
    // A safe place to hand over at: not inside an escape or a UTF-8 sequence.
    const auto boundary = [&](const char* at, std::uint64_t escape_carry) {
        return at == start ? at : escape_carry ? at - 1 : at - open_sequence_bytes(at);
    };
    // Most strings are keys and short values that end within 16 bytes: one step decides them.
    if (end - p >= 16)
    {
        const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
        const __m128i space = _mm_set1_epi8(0x20);  // signed: non-ASCII is below it too
        const int quotes = _mm_movemask_epi8(_mm_cmpeq_epi8(x, _mm_set1_epi8('"')));
        const int other = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('\\')), _mm_cmpgt_epi8(space, x)));
        if (quotes && (other & ((quotes & -quotes) - 1)) == 0)
            return {p + __builtin_ctz(static_cast<unsigned>(quotes)) + 1, true};
    }
    while (end - p >= 64)
    {
        const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
        const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32));
        const std::uint64_t carry_in = carry;
        const std::uint64_t escaped = escaped_positions(equal_bits(lo, hi, '\\'), carry);
        const std::uint64_t closing = equal_bits(lo, hi, '"') & ~escaped;
        const std::uint64_t before_close = below_lowest(closing);
        if (open_sequence || _mm256_movemask_epi8(_mm256_or_si256(lo, hi)) != 0)
        {
            const std::uint64_t bad = nonzero_bits(utf8::errors(lo, before), utf8::errors(hi, lo));
            if (bad & (before_close | (closing & (0 - closing))))  // the closing quote may end a sequence too soon
                return {boundary(p, carry_in), false};
            open_sequence = open_sequence_bytes(p + 64) != 0;
        }
        const std::uint64_t controls = control_bits(lo, hi) & before_close;
        if (const std::uint64_t invalid = escaped & ~simple_escape_bits(lo, hi) & before_close & below_lowest(controls))
            return {p + __builtin_ctzll(invalid) - 1, false};  // its backslash (p - 1 when a carry escaped byte 0)
        if (controls)
        {
            // An escaped control byte is an invalid escape: hand over its backslash.
            const int i = __builtin_ctzll(controls);
            return {p + i - static_cast<int>((escaped >> i) & 1), false};
        }
        if (closing)
            return {p + __builtin_ctzll(closing) + 1, true};
        before = hi;
        p += 64;
    }
    return {boundary(p, carry), false};
}

bool has_avx2() noexcept
{
    static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2");
    return yes;
}

#endif

}  // namespace

string_skip skip_string(const char* p, const char* end) noexcept
{
#if defined(AGENTCTX_STRING_SKIP_AVX2)
    if (has_avx2())
        return skip_avx2(p, end);
#else
    (void)end;
#endif
    return {p, false};
}

bool string_skip_vectorized() noexcept
{
#if defined(AGENTCTX_STRING_SKIP_AVX2)
    return has_avx2();
#else
    return false;
#endif
}

}  // namespace agentctx::compaction::detail
