// Values a client writes into an entry: finite numbers, bounded usage counts, well-formed images.
#pragma once

#include <agentctx/compaction/error.hpp>
#include <agentctx/compaction/message.hpp>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace agentctx::compaction {

/// The largest token count a client may report in one usage field: far above any context window,
/// and the five counts of a usage sum without overflowing.
inline constexpr std::int64_t max_usage_tokens = 1'000'000'000'000;

/// The image types a provider accepts in a message (`mimeType` of an image block).
inline constexpr std::string_view image_media_types[] = {
    "image/png", "image/jpeg", "image/gif", "image/webp"};

/// The path (below `path`) of the first number in `v` that is not finite (a parsed `1e400`, a NaN
/// put there by code); nullopt when every number is finite.
std::optional<std::string> first_non_finite(const boost::json::value& v, std::string_view path);

/// JSON text with each lone surrogate escape (`"\ud800"`, what JSON.stringify writes for a cut
/// emoji) rewritten as `\ufffd`, the character a session file's line with one is read with;
/// nullopt when there is none. Boost.JSON refuses such text; the rewritten text parses.
std::optional<std::string> lone_surrogates_replaced(std::string_view json_text);

/// Whether `data` is standard base64 and not empty: the RFC 4648 alphabet, padded with `=` to a
/// multiple of four or unpadded (never 4n + 1 characters).
bool is_base64(std::string_view data) noexcept;

/// Whether `media_type` is one of image_media_types.
bool is_image_media_type(std::string_view media_type) noexcept;

/// A usage object as Pi writes it (`input`, `output`, `cacheRead`, `cacheWrite`, `cacheWrite1h`,
/// `reasoning`, `totalTokens`) at `path`: every count present is a number from 0 to
/// max_usage_tokens. Refused with `invalid_value`, `diag.field` = the count's path.
result<void> check_usage_counts(const boost::json::object& usage, std::string_view path, diagnostics& diag);

/// The same bounds on a decoded usage (a message a host passes to a check, not through JSON):
/// `path` names the usage (`usage`), `diag.field` the count (`usage.input`).
result<void> check_usage(const struct usage& usage, std::string_view path, diagnostics& diag);

/// The fields of an entry a client appends: no number anywhere that is not finite, the usage
/// counts of `usage` and `message.usage` in range, and each image block of `message.content`
/// and `content` with base64 `data` and an accepted `mimeType`. Refused with `invalid_value`,
/// `diag.field` = the path (`message.usage.input`, `message.content[1].data`).
result<void> check_client_values(const boost::json::object& fields, diagnostics& diag);

}  // namespace agentctx::compaction
