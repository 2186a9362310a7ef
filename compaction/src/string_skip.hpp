// Skips the plain part of a JSON string 64 bytes per step (AVX2 bitmasks, chosen at run time).
#pragma once

namespace agentctx::compaction::detail {

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
/// fail. Escapes are resolved with carry-less bitmask arithmetic (a run of backslashes escapes the
/// next byte when its length is odd), so the escape-dense text of tool outputs does not leave
/// the vector loop. Without AVX2 (or off x86-64) it returns `{p, false}`.
string_skip skip_string(const char* p, const char* end) noexcept;

/// Whether skip_string() uses vectors on this machine (AVX2); tests and benchmarks report it.
bool string_skip_vectorized() noexcept;

}  // namespace agentctx::compaction::detail
