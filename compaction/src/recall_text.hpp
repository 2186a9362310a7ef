// The recall gate's words: sentences, lower-case words, stop words, light stemming, markers.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace agentctx::compaction::detail {

/// One sentence of a text: its words as written and whether it asked a question.
struct sentence
{
    std::string text;  ///< trimmed, whitespace collapsed
    bool question = false;
};

/// The sentences of `text`, outside fenced code blocks and `>` quotes: split at line ends and at
/// `.`, `!`, `?`, `;` followed by a space (a `.` inside a word, a path or a number does not split).
std::vector<sentence> sentences_of(std::string_view text);

/// Lower-case ASCII words of `text` (letters, digits, `_`, `'` inside a word), in order.
std::vector<std::string> words_of(std::string_view text);

/// `word` without a light suffix (`'s`, `s`, `es` after s/x/z/ch/sh, `ing`, `ed`).
std::string stem(std::string_view word);

/// Words that carry no topic: articles, pronouns, auxiliaries, the rule markers themselves.
bool is_stop_word(std::string_view word) noexcept;

/// Verbs a rule starts with (`use`, `keep`, ...): they relate two rules but say little alone.
bool is_weak_verb(std::string_view word) noexcept;

/// A negation word (`never`, `not`, `don't`, `no`, `avoid`, ...).
bool is_negation(std::string_view word) noexcept;

/// `text` cut to at most `max` bytes on a UTF-8 boundary, with `…` when cut.
std::string bounded_text(std::string_view text, std::size_t max);

/// Paths and identifiers written in `text`: backticked spans, `a/b.c` paths, `snake_case`,
/// `camelCase`, `Type::member`, `call()` names. In order, without repeats.
std::vector<std::string> names_in(std::string_view text);

/// `haystack` contains `needle`, ASCII case-insensitively.
bool contains_nocase(std::string_view haystack, std::string_view needle) noexcept;

}  // namespace agentctx::compaction::detail
