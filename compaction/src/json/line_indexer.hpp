// Validates one JSONL line and captures the fields the index needs, without building a DOM.
#pragma once

#include <agentctx/compaction/error.hpp>

#include "string_skip.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace agentctx::compaction::detail {

/// The JSON kind seen for a captured top-level field.
enum class seen : std::uint8_t
{
    absent,
    string,
    null,
    object,
    other,
};

/// Fields captured from one line.
struct line_fields
{
    bool is_object = false;
    seen type_kind = seen::absent, id_kind = seen::absent, parent_kind = seen::absent,
         message_kind = seen::absent;
    std::string type, id, parent_id;
    std::string thinking_level, provider, model_id, first_kept_entry_id;  // depth 1
    std::string target_id, label;                                         // label entries
    seen label_kind = seen::absent;
    std::string role, message_provider, message_model;   // depth 2 inside "message"
    std::optional<std::int64_t> first_kept_entry_index;  // v1 compactions

    void clear();
};

/// A strict JSON validator (RFC 8259, UTF-8, no comments or trailing commas) that accepts
/// exactly what Boost.JSON's parser accepts, plus lone surrogate escapes (`"\ud83d"`, which
/// JSON.stringify wrote for strings Pi's tools cut inside a pair): an indexed line always
/// materializes, after replace_lone_surrogates when it has those. Numbers whose exponent Boost
/// cannot represent are rejected here (invalid_json), not at materialization. A lone surrogate
/// reads as U+FFFD (one UTF-16 unit, like the lone unit in JavaScript). Of a repeated key, the
/// last is captured, as the materialized value (and JSON.parse) keeps it. `fuzz_json_scanner`
/// checks all of this against Boost.JSON. Strings it does not capture are skipped 64 bytes at a
/// time (skip_string; `strings` says with which vectors, for tests), other plain runs 16 at a time
/// (SSE2): session lines are mostly long tool outputs.
class line_indexer
{
public:
    explicit line_indexer(std::size_t max_depth) : max_depth_(max_depth) {}

    /// On failure returns invalid_json, invalid_utf8 or nesting_too_deep, with a message
    /// (byte position, no line number) in `diag`. The fields are the indexer's own, valid until
    /// the next call; the caller may move them out.
    result<line_fields*> index(std::string_view line, diagnostics& diag);

    /// What index() does, into `out`: errc{} on success, else the code with `message` set. A
    /// pure function of the line, so lines may be scanned on any thread.
    static errc scan(
        std::string_view line,
        std::size_t max_depth,
        line_fields& out,
        std::string& message,
        string_skip_width strings = string_skip_width::best
    );

    /// scan() of the line at the start of `text` (up to its first '\n', or all of it), and that
    /// line's length in `length`, found in the same pass: where the line's JSON ends. A line that
    /// fails is looked at again on its own, so the verdict and message are scan()'s.
    static errc scan_line(
        std::string_view text,
        std::size_t max_depth,
        line_fields& out,
        std::string& message,
        std::size_t& length
    );

private:
    std::size_t max_depth_;
    line_fields fields_;
};

/// The line with each lone surrogate escape `\uD800`-`\uDFFF` rewritten as `\ufffd` (same
/// length, so offsets hold), which Boost.JSON 1.81 parses; nullopt when there is none. Only
/// for decoding: the file keeps the original bytes, which are what is written back.
std::optional<std::string> replace_lone_surrogates(std::string_view text);

enum class blank_kind
{
    not_blank,
    json_blank,  ///< empty or only spaces, tabs and CRs
    js_blank,    ///< only whitespace in JavaScript's sense (`\u00a0`, `\ufeff`, `\u2028` ... as UTF-8)
};

/// Whether Pi (`line.trim()` is empty) skips the line.
blank_kind classify_blank(std::string_view line);

}  // namespace agentctx::compaction::detail
