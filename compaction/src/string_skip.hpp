// Skips the plain part of a JSON string 64 bytes per step (AVX-512 or AVX2, chosen at run time).
#pragma once

#include <cstdint>

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
string_skip skip_string(const char* p, const char* end, string_skip_width width = string_skip_width::best) noexcept;

/// Whether this machine has `width` (AVX2; AVX-512 means BW and VBMI). `best` is the widest it
/// has, `scalar` when it has none (or is not x86-64).
bool has_string_skip_width(string_skip_width width) noexcept;
string_skip_width best_string_skip_width() noexcept;

}  // namespace agentctx::compaction::detail
