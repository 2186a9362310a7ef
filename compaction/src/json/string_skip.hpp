// Skips the plain part of a JSON string 64 bytes per step (AVX-512 or AVX2, chosen at run time).
#pragma once

#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace agentctx::compaction::detail {

/// Which code skips strings: none (the scalar scanner does it all), or a vector width.
enum class string_skip_width : std::uint8_t
{
    scalar,
    avx2,
    avx512,
    best,  ///< the widest this machine has
};

/// Where skip_string() stopped.
struct string_skip
{
    const char* at;  ///< just past the closing quote when `closed`, else the first byte left to the caller
    bool closed;     ///< the string's closing quote was found, and every byte before it is valid
};

/// Skips string content from `p` (inside a string, not inside an escape) for as long as it is
/// printable ASCII and simple escapes (`\" \\ \/ \b \f \n \r \t`). It stops, without judging, at
/// the first byte that needs the exact scalar scanner: a control character, a non-ASCII byte, a
/// `\u` or invalid escape (then `at` is its backslash), or the last 63 bytes before `end`. So the
/// scalar scanner's verdict and message are unchanged; this only decides faster where nothing can
/// fail. Escapes are resolved with bitmask arithmetic (a run of backslashes escapes the next byte
/// when its length is odd), so the escape-dense text of tool outputs does not leave
/// the vector loop. With `scalar`, or a width this machine does not have, it returns `{p, false}`.
string_skip skip_string(
    const char* p, const char* end, string_skip_width width = string_skip_width::best
) noexcept;

/// The vector loop of skip_string() for `width`, without its first step for short strings (see
/// short_string_end()); null for `scalar` or a width this machine lacks. For a caller that skips
/// millions of strings and has checked the short case itself.
using string_skipper = string_skip (*)(const char* p, const char* end) noexcept;
string_skipper skipper_for(string_skip_width width) noexcept;

/// Most strings are keys and short values that end within 16 bytes: one SSE2 step decides them.
/// Just past the closing quote when the first byte of p[0..16) that needs attention (a quote,
/// backslash, control or non-ASCII byte) is a closing quote; null otherwise, or off x86-64.
inline const char* short_string_end(const char* p, const char* end) noexcept
{
#if defined(__SSE2__)
    if (end - p < 16)
        return nullptr;
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i space = _mm_set1_epi8(0x20);  // signed: non-ASCII is below it too
    const auto quotes = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(x, _mm_set1_epi8('"'))));
    const auto other = static_cast<unsigned>(
        _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('\\')), _mm_cmpgt_epi8(space, x)))
    );
    if (quotes == 0 || (other & ((quotes & (0 - quotes)) - 1)) != 0)
        return nullptr;
    return p + __builtin_ctz(quotes) + 1;
#else
    (void)p;
    (void)end;
    return nullptr;
#endif
}

/// Whether this machine has `width` (AVX2; AVX-512 means BW and VBMI). `best` is the widest it
/// has, `scalar` when it has none (or is not x86-64).
bool has_string_skip_width(string_skip_width width) noexcept;
string_skip_width best_string_skip_width() noexcept;

}  // namespace agentctx::compaction::detail
