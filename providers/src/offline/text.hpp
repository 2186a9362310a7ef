// Text rules for the offline summarizer: sentences, keyword tests, word-safe clipping, secret masking.
#pragma once

#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace agentctx::providers::offline {

/// Collapses every run of whitespace to one space and trims both ends.
std::string one_line(std::string_view s);
/// ASCII lower case (UTF-8 bytes above 0x7F are left as they are).
std::string lower(std::string_view s);
/// Whole sentences: split after `.`, `!`, `?` followed by a space or at a line break; each one_line'd.
std::vector<std::string> sentences(std::string_view s);
/// Lines of `s`, one_line'd, empty ones dropped.
std::vector<std::string> lines(std::string_view s);
/// `lowered` contains `phrase` with no letter or digit on either side.
bool has_word(std::string_view lowered, std::string_view phrase);
bool has_any_word(std::string_view lowered, std::initializer_list<std::string_view> phrases);
bool has_any_word(std::string_view lowered, std::span<const std::string_view> phrases);
bool starts_with_any(std::string_view lowered, std::initializer_list<std::string_view> prefixes);
/// Words separated by whitespace.
std::size_t word_count(std::string_view s);
/// Length in UTF-16 units (the chars/4 estimate's unit).
std::size_t length(std::string_view s);
/// At most `n` UTF-16 units, cut at the last space before the limit (never inside a word or a
/// UTF-8 sequence), with "…" appended when something was dropped.
std::string clip_words(std::string_view s, std::size_t n);
/// Replaces tokens that look like credentials (sk-…, ghp_…, github_pat_…, AKIA…, xox?-…) with "[redacted]".
std::string mask_secrets(std::string_view s);
/// Normalised form for duplicate detection: lower case, letters and digits only.
std::string fingerprint(std::string_view s);

}  // namespace agentctx::providers::offline
