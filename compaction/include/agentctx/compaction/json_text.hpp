// JavaScript-compatible text primitives: JSON.stringify output and UTF-16 lengths of UTF-8 text.
#pragma once

#include <boost/json/value.hpp>

#include <cstddef>
#include <string>
#include <vector>
#include <string_view>

namespace agentctx::compaction {

/// Appends `JSON.stringify(v)` to `out`: no spaces, keys in stored order, non-ASCII raw,
/// control characters as `\uXXXX` (lowercase) except `\b\f\n\r\t`, numbers as ECMAScript's
/// Number::toString (`0.5`, `1e+21`, `-0` -> `0`, non-finite -> `null`).
void stringify_to(std::string& out, const boost::json::value& v);
std::string stringify(const boost::json::value& v);

/// The keys of `o` in JavaScript enumeration order: integer-like keys (canonical array indices)
/// ascending first, then the others in insertion order (Pi 1.6 `sections`).
std::vector<std::string_view> js_key_order(const boost::json::object& o);

/// `JSON.stringify(v)` of the value as JavaScript holds it after `JSON.parse`: objects enumerate
/// integer-like keys first (js_key_order) at every depth. For text that JavaScript builds from
/// parsed values (tool-call arguments in the summarizer input); never for writing a line back.
std::string js_stringify(const boost::json::value& v);

/// ECMAScript Number::toString of a double.
void format_number_to(std::string& out, double d);

/// Appends a JSON string literal of `s` (UTF-8) with JSON.stringify escaping.
void quote_to(std::string& out, std::string_view s);

/// Length of UTF-8 text in UTF-16 code units (JavaScript's `.length`). Invalid bytes count as
/// one unit each (they would decode to U+FFFD).
std::size_t utf16_length(std::string_view utf8) noexcept;

/// JavaScript's `s.slice(0, n)` on UTF-8 text: the first `n` UTF-16 units. When the cut splits a
/// surrogate pair, the lone high surrogate cannot exist in UTF-8 and becomes U+FFFD (what a
/// JavaScript string with a lone surrogate turns into when encoded as UTF-8).
std::string utf16_prefix(std::string_view utf8, std::size_t n);

/// Pi's `sliceHead(s, n)` (1.6): the first `n` UTF-16 units, or `n - 1` when unit `n - 1` is the
/// high half of a surrogate pair whose low half is unit `n` (a pair is never split, so no U+FFFD
/// appears).
std::string utf16_slice_head(std::string_view utf8, std::size_t n);

/// True when `s` is well-formed UTF-8 (no overlongs, no surrogates, max U+10FFFF).
bool is_valid_utf8(std::string_view s) noexcept;

/// Compares two UTF-8 strings by UTF-16 code units (JavaScript's default sort order).
bool utf16_less(std::string_view a, std::string_view b) noexcept;

}  // namespace agentctx::compaction
