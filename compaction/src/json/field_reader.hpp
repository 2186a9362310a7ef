// Typed, strict access to the fields of a JSON object that records the first error with its path.
#pragma once

#include <agentctx/compaction/error.hpp>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace agentctx::compaction::detail {

const char* kind_name(boost::json::kind k) noexcept;

/// Reads fields of one object. Accessors return defaults after the first failure; callers check
/// `failed()` once at the end, so decoding code stays a flat list of fields.
class field_reader
{
public:
    field_reader(const boost::json::object& o, std::string_view path, diagnostics& diag)
        : obj_(o), path_(path), diag_(diag)
    {}

    std::string path_of(std::string_view key) const;
    diagnostics& diag() const noexcept { return diag_; }

    std::string req_string(std::string_view key);
    std::optional<std::string> opt_string(std::string_view key);
    /// A string, or null (nullopt). Absent is `missing_field` when `required`.
    std::optional<std::string> nullable_string(std::string_view key, bool required);
    bool opt_bool(std::string_view key, bool fallback = false);
    std::optional<double> opt_number(std::string_view key);
    double req_number(std::string_view key);
    std::int64_t opt_int(std::string_view key);
    const boost::json::value* opt_value(std::string_view key) const;
    const boost::json::object* opt_object(std::string_view key);
    const boost::json::object* req_object(std::string_view key);
    const boost::json::array* req_array(std::string_view key);

    bool failed() const noexcept { return code_ != errc{}; }
    errc code() const noexcept { return code_; }
    /// Records a failure found by the caller (first one wins).
    void fail(errc code, std::string_view key, std::string_view what);

private:
    const boost::json::value* typed(
        std::string_view key, boost::json::kind k, const char* expected, bool required
    );

    const boost::json::object& obj_;
    std::string path_;  // owned: callers pass temporaries such as path_of("usage")
    diagnostics& diag_;
    errc code_{};
};

}  // namespace agentctx::compaction::detail
