// Values a client writes into an entry: finite numbers, bounded usage counts, well-formed images.
#include <agentctx/compaction/client_values.hpp>

#include "json/line_indexer.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <utility>

namespace agentctx::compaction {

namespace {

namespace json = boost::json;

result<void> refuse(std::string path, std::string_view why, diagnostics& diag)
{
    diag.field = std::move(path);
    diag.message = "field '" + diag.field + "': " + std::string(why);
    return errc::invalid_value;
}

// Whether `v` is a number from 0 to max_usage_tokens (a fraction counts by its whole part).
bool in_usage_range(const json::value& v) noexcept
{
    if (v.is_int64())
        return v.get_int64() >= 0 && v.get_int64() <= max_usage_tokens;
    if (v.is_uint64())
        return v.get_uint64() <= static_cast<std::uint64_t>(max_usage_tokens);
    const double d = v.get_double();
    return std::isfinite(d) && d >= 0 && d < static_cast<double>(max_usage_tokens) + 1;
}

// The image blocks of a content array at `path`.
result<void> check_images(const json::value* content, const std::string& path, diagnostics& diag)
{
    if (!content || !content->is_array())
        return {};
    const auto& blocks = content->get_array();
    for (std::size_t i = 0; i < blocks.size(); ++i)
    {
        const auto* b = blocks[i].if_object();
        const auto* type = b ? b->if_contains("type") : nullptr;
        if (!type || *type != "image")
            continue;
        const std::string at = path + "[" + std::to_string(i) + "]";
        const auto* data = b->if_contains("data");
        if (data && data->is_string() && !is_base64(data->get_string()))
            return refuse(at + ".data", "not base64 image data", diag);
        const auto* mime = b->if_contains("mimeType");
        if (mime && mime->is_string() && !is_image_media_type(mime->get_string()))
            return refuse(
                at + ".mimeType",
                "not an accepted image type (image/png, image/jpeg, image/gif, image/webp)",
                diag
            );
    }
    return {};
}

// Whether `v` holds a number that is not finite; its path below `v` is built on the way out (no
// string is made for the values that pass).
bool find_non_finite(const json::value& v, std::string& below)
{
    if (v.is_double())
        return !std::isfinite(v.get_double());
    if (const auto* a = v.if_array())
        for (std::size_t i = 0; i < a->size(); ++i)
            if ((*a)[i].is_structured() || (*a)[i].is_double())
                if (find_non_finite((*a)[i], below))
                    return below.insert(0, "[" + std::to_string(i) + "]"), true;
    if (const auto* o = v.if_object())
        for (const auto& kv : *o)
            if (kv.value().is_structured() || kv.value().is_double())
                if (find_non_finite(kv.value(), below))
                    return below.insert(0, "." + std::string(kv.key())), true;
    return false;
}

}  // namespace

std::optional<std::string> first_non_finite(const json::value& v, std::string_view path)
{
    std::string below;
    if (!find_non_finite(v, below))
        return std::nullopt;
    if (path.empty() && below.starts_with('.'))
        below.erase(0, 1);
    return std::string(path) + below;
}

std::optional<std::string> lone_surrogates_replaced(std::string_view json_text)
{
    return detail::replace_lone_surrogates(json_text);
}

bool is_base64(std::string_view data) noexcept
{
    // Padded, or unpadded (a length of 4n + 1 cannot be base64).
    if (data.empty() || data.size() % 4 == 1)
        return false;
    const auto pad = data.find('=');
    if (pad != std::string_view::npos && (data.size() % 4 != 0 || data.size() - pad > 2 ||
                                          data.find_first_not_of('=', pad) != std::string_view::npos))
        return false;
    return std::all_of(
        data.begin(),
        data.begin() + static_cast<std::ptrdiff_t>(std::min(pad, data.size())),
        [](char c) {
            return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
                   c == '/';
        }
    );
}

bool is_image_media_type(std::string_view media_type) noexcept
{
    return std::find(std::begin(image_media_types), std::end(image_media_types), media_type) !=
           std::end(image_media_types);
}

result<void> check_usage_counts(const json::object& usage, std::string_view path, diagnostics& diag)
{
    static constexpr std::string_view counts[] = {
        "input", "output", "cacheRead", "cacheWrite", "cacheWrite1h", "reasoning", "totalTokens"};
    for (const auto key : counts)
    {
        const auto* v = usage.if_contains(key);
        if (v && v->is_number() && !in_usage_range(*v))
            return refuse(
                std::string(path) + "." + std::string(key),
                "a token count must be a whole number from 0 to " + std::to_string(max_usage_tokens),
                diag
            );
    }
    return {};
}

result<void> check_usage(const struct usage& usage, std::string_view path, diagnostics& diag)
{
    const std::pair<std::string_view, std::optional<std::int64_t>> counts[] = {
        {"input", usage.input},
        {"output", usage.output},
        {"cacheRead", usage.cache_read},
        {"cacheWrite", usage.cache_write},
        {"cacheWrite1h", usage.cache_write_1h},
        {"reasoning", usage.reasoning},
        {"totalTokens", usage.total_tokens}};
    for (const auto& [key, n] : counts)
        if (n && (*n < 0 || *n > max_usage_tokens))
            return refuse(
                std::string(path) + "." + std::string(key),
                "a token count must be a whole number from 0 to " + std::to_string(max_usage_tokens),
                diag
            );
    return {};
}

result<void> check_client_values(const json::object& fields, diagnostics& diag)
{
    for (const auto& kv : fields)
        if (auto at = first_non_finite(kv.value(), kv.key()))
            return refuse(
                std::move(*at), "a number out of the range of a double (JSON has no infinity)", diag
            );
    if (const auto* u = fields.if_contains("usage"); u && u->is_object())
        if (auto ok = check_usage_counts(u->get_object(), "usage", diag); !ok)
            return ok;
    if (auto ok = check_images(fields.if_contains("content"), "content", diag); !ok)
        return ok;
    const auto* m = fields.if_contains("message");
    if (!m || !m->is_object())
        return {};
    if (const auto* u = m->get_object().if_contains("usage"); u && u->is_object())
        if (auto ok = check_usage_counts(u->get_object(), "message.usage", diag); !ok)
            return ok;
    return check_images(m->get_object().if_contains("content"), "message.content", diag);
}

}  // namespace agentctx::compaction
