// Validates one JSONL line with Boost.JSON's SAX parser and captures the fields the index needs.
#pragma once

#include <agentctx/compaction/error.hpp>

#include <boost/json/basic_parser.hpp>

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

/// Fields captured from one line without building a DOM.
struct line_fields
{
    bool is_object = false;
    seen type_kind = seen::absent, id_kind = seen::absent, parent_kind = seen::absent, message_kind = seen::absent;
    std::string type, id, parent_id;
    std::string thinking_level, provider, model_id, first_kept_entry_id;  // depth 1
    std::string role, message_provider, message_model;                    // depth 2 inside "message"
    std::optional<std::int64_t> first_kept_entry_index;                   // v1 compactions

    void clear();
};

/// SAX handler for boost::json::basic_parser. Captures a fixed set of short string fields.
class line_handler
{
public:
    static constexpr std::size_t max_object_size = std::size_t(-1);
    static constexpr std::size_t max_array_size = std::size_t(-1);
    static constexpr std::size_t max_key_size = std::size_t(-1);
    static constexpr std::size_t max_string_size = std::size_t(-1);

    line_fields fields;

    bool on_document_begin(boost::system::error_code&);
    bool on_document_end(boost::system::error_code&) { return true; }
    bool on_object_begin(boost::system::error_code&);
    bool on_object_end(std::size_t, boost::system::error_code&);
    bool on_array_begin(boost::system::error_code&);
    bool on_array_end(std::size_t, boost::system::error_code&);
    bool on_key_part(boost::json::string_view s, std::size_t, boost::system::error_code&);
    bool on_key(boost::json::string_view s, std::size_t, boost::system::error_code&);
    bool on_string_part(boost::json::string_view s, std::size_t, boost::system::error_code&);
    bool on_string(boost::json::string_view s, std::size_t, boost::system::error_code&);
    bool on_number_part(boost::json::string_view, boost::system::error_code&) { return true; }
    bool on_int64(std::int64_t v, boost::json::string_view, boost::system::error_code&);
    bool on_uint64(std::uint64_t v, boost::json::string_view, boost::system::error_code&);
    bool on_double(double, boost::json::string_view, boost::system::error_code&);
    bool on_bool(bool, boost::system::error_code&);
    bool on_null(boost::system::error_code&);
    bool on_comment_part(boost::json::string_view, boost::system::error_code&) { return true; }
    bool on_comment(boost::json::string_view, boost::system::error_code&) { return true; }

private:
    void begin_value();       // a scalar or container value starts for the current key
    void scalar(seen kind);   // a non-string scalar value

    int depth_ = 0;
    bool in_message_ = false;     // the container at depth 2 is the top-level "message" object
    std::string key_;             // key being read / last key at the current depth
    int key_depth_ = 0;           // depth of key_
    std::string* target_ = nullptr;  // where string parts of the current value go
    seen* kind_target_ = nullptr;    // where the kind of the current value goes
    bool fk_index_ = false;          // current value is top-level firstKeptEntryIndex
};

/// Parses one line. On failure returns the error (invalid_json, invalid_utf8, nesting_too_deep)
/// and writes a message without the line number into `diag`.
class line_indexer
{
public:
    explicit line_indexer(std::size_t max_depth);
    result<const line_fields*> index(std::string_view line, diagnostics& diag);

private:
    boost::json::basic_parser<line_handler> parser_;
};

}  // namespace agentctx::compaction::detail
