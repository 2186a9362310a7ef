// JSON parsing with correctly rounded doubles (Boost 1.81's parser is not exact for doubles).
#pragma once

#include <boost/json/value.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <string>
#include <string_view>

namespace agentctx::compaction::detail {

/// Parses one JSON document. Numbers with a fraction or exponent are converted from their text
/// with std::from_chars, so `0.0037199999999999998` stays the double JavaScript would read.
/// Errors are Boost.JSON's (`too_deep`, syntax errors, invalid UTF-8). `consumed` = bytes read.
/// With `duplicate_key` set, an object that names a key twice is refused (`errc::duplicate_key`,
/// the key stored there) instead of the later member replacing the earlier one.
boost::json::value parse_exact(
    std::string_view text,
    std::size_t max_depth,
    boost::system::error_code& ec,
    std::size_t* consumed = nullptr,
    std::string* duplicate_key = nullptr
);

}  // namespace agentctx::compaction::detail
