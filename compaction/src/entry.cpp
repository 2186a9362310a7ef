// Strict decoding of the session header and entries; builders for entries written by agentctx.
#include <agentctx/compaction/entry.hpp>

#include <agentctx/compaction/json_text.hpp>

#include "json/field_reader.hpp"

#include <array>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <random>

namespace agentctx::compaction {

using detail::field_reader;

namespace {

constexpr std::array<std::string_view, 11> type_names{
    "message",
    "thinking_level_change",
    "model_change",
    "compaction",
    "branch_summary",
    "custom",
    "custom_message",
    "label",
    "session_info",
    "usage",
    "context_edit",
};

}  // namespace

std::string_view to_string(entry_type t) noexcept
{
    const auto i = static_cast<std::size_t>(t);
    return i < type_names.size() ? type_names[i] : std::string_view("unknown");
}

entry_type entry_type_from_string(std::string_view s) noexcept
{
    for (std::size_t i = 0; i < type_names.size(); ++i)
        if (type_names[i] == s)
            return static_cast<entry_type>(i);
    return entry_type::unknown;
}

result<session_header> decode_header(const boost::json::object& o, diagnostics& diag)
{
    const auto* type = o.if_contains("type");
    const auto* id = o.if_contains("id");
    if (!type || !type->is_string() || type->get_string() != "session" || !id || !id->is_string())
    {
        diag.field = "type";
        diag.message = "the first line is not a session header (type \"session\" with a string id)";
        return errc::missing_header;
    }
    field_reader f(o, "", diag);
    session_header h;
    h.id = f.req_string("id");
    h.timestamp = f.opt_string("timestamp").value_or("");
    h.cwd = f.opt_string("cwd");
    h.parent_session = f.opt_string("parentSession");
    const auto version = f.opt_number("version");
    if (f.failed())
        return f.code();
    // Range-checked before any conversion: casting 8.9e18 to int is undefined (found by
    // fuzz_entry_decode).
    if (version && !(*version >= 1 && *version == std::floor(*version)))
    {
        f.fail(errc::wrong_type, "version", "expected a positive integer");
        return f.code();
    }
    if (version && *version > current_session_version)
    {
        diag.field = "version";
        diag.message = "session format version ";
        format_number_to(diag.message, *version);
        diag.message +=
            " is newer than the newest this library reads (" + std::to_string(current_session_version) + ")";
        return errc::unsupported_version;
    }
    h.version = version ? static_cast<int>(*version) : 1;
    h.raw = o;
    return h;
}

namespace {

// The optional `usage` member of compaction, branch_summary and usage entries.
bool decode_entry_usage(field_reader& f, entry& e, diagnostics& diag)
{
    const auto* u = f.opt_object("usage");
    if (!u)
        return !f.failed();
    auto us = decode_usage(*u, "usage", diag);
    if (!us)
        return false;
    e.usage = *us;
    return true;
}

// Each decode_<type> reads the fields of one entry type into `e`. A code it returns ends the
// decoding at once; an empty one goes on (a field failure is then in `f`, checked at the end).
using decode_step = boost::system::error_code;

// The code of a failed decode_entry_usage.
decode_step usage_failure(const field_reader& f)
{
    return f.failed() ? f.code() : errc::wrong_type;
}

// A message object (of the field `path`) into `out`.
decode_step decode_message_into(
    const boost::json::object& m,
    std::string_view path,
    diagnostics& diag,
    std::shared_ptr<const message>& out
)
{
    auto msg = decode_message(m, path, diag);
    if (!msg)
        return msg.error();
    out = std::make_shared<const message>(std::move(*msg));
    return {};
}

decode_step decode_message_entry(field_reader& f, entry& e, diagnostics& diag)
{
    const auto* m = f.req_object("message");
    return m ? decode_message_into(*m, "message", diag, e.message) : decode_step{};
}

decode_step decode_compaction(field_reader& f, entry& e, diagnostics& diag)
{
    e.summary = f.req_string("summary");
    e.first_kept_entry_id = f.req_string("firstKeptEntryId");
    e.tokens_before = f.req_number("tokensBefore");
    e.from_hook = f.opt_bool("fromHook");
    if (!decode_entry_usage(f, e, diag))
        return usage_failure(f);
    const auto* sm = f.opt_object("systemMessage");
    if (!sm)
        return {};
    std::shared_ptr<const message> system;
    if (const auto ec = decode_message_into(*sm, "systemMessage", diag, system))
        return ec;
    if (system->role != role::system)
    {
        f.fail(errc::wrong_type, "systemMessage.role", "expected \"system\"");
        return f.code();
    }
    e.system_message = std::move(system);
    return {};
}

decode_step decode_branch_summary(field_reader& f, entry& e, diagnostics& diag)
{
    e.from_id = f.req_string("fromId");
    e.summary = f.req_string("summary");
    e.from_hook = f.opt_bool("fromHook");
    return decode_entry_usage(f, e, diag) ? decode_step{} : usage_failure(f);
}

decode_step decode_usage_entry(field_reader& f, entry& e, diagnostics& diag)
{
    e.usage_kind = f.req_string("kind");
    e.provider = f.opt_string("provider").value_or("");
    e.model_id = f.opt_string("model").value_or("");
    return decode_entry_usage(f, e, diag) ? decode_step{} : usage_failure(f);
}

decode_step decode_context_edit(field_reader& f, entry& e, diagnostics& diag)
{
    e.target_id = f.req_string("targetId");
    const auto* r = f.opt_value("replacement");
    if (!r)
        f.fail(errc::missing_field, "replacement", "required field is missing");
    else if (!r->is_null())
    {
        const auto* c = r->is_object() ? r->get_object().if_contains("content") : nullptr;
        if (!c || !(c->is_string() || c->is_array()))
        {
            f.fail(
                errc::wrong_type, "replacement", "expected null or an object with string or array content"
            );
            return f.code();
        }
        auto content = decode_content(*c, "replacement.content", diag);
        if (!content)
            return content.error();
        e.replacement = std::move(*content);
    }
    return {};
}

decode_step decode_custom_message(field_reader& f, entry& e, diagnostics& diag)
{
    e.custom_type = f.req_string("customType");
    e.display = f.opt_bool("display");
    if (const auto* c = f.opt_value("content"))
    {
        auto content = decode_content(*c, "content", diag);
        if (!content)
            return content.error();
        e.content = std::move(*content);
    }
    else
        f.fail(errc::missing_field, "content", "required field is missing");
    return {};
}

// The fields of `e.type`.
decode_step decode_type_fields(field_reader& f, entry& e, diagnostics& diag)
{
    switch (e.type)
    {
    case entry_type::message:
        return decode_message_entry(f, e, diag);
    case entry_type::thinking_level_change:
        e.thinking_level = f.req_string("thinkingLevel");
        break;
    case entry_type::model_change:
        e.provider = f.req_string("provider");
        e.model_id = f.req_string("modelId");
        break;
    case entry_type::compaction:
        return decode_compaction(f, e, diag);
    case entry_type::branch_summary:
        return decode_branch_summary(f, e, diag);
    case entry_type::usage:
        return decode_usage_entry(f, e, diag);
    case entry_type::context_edit:
        return decode_context_edit(f, e, diag);
    case entry_type::custom:
        e.custom_type = f.req_string("customType");
        break;
    case entry_type::custom_message:
        return decode_custom_message(f, e, diag);
    case entry_type::label:
        // Pi reads labels without validation: a null target labels nothing.
        e.target_id = f.nullable_string("targetId", true).value_or("");
        e.label = f.nullable_string("label", false);
        break;
    case entry_type::session_info:
        e.name = f.opt_string("name");
        break;
    case entry_type::unknown:
        break;
    }
    return {};
}

}  // namespace

result<entry> decode_entry(boost::json::object raw, diagnostics& diag)
{
    field_reader f(raw, "", diag);
    entry e;
    e.type_name = f.req_string("type");
    e.type = entry_type_from_string(e.type_name);
    e.id = f.req_string("id");
    if (!f.failed() && e.id.empty())
        f.fail(errc::wrong_type, "id", "expected a non-empty string");
    e.parent_id = f.nullable_string("parentId", false);
    e.timestamp = f.opt_string("timestamp").value_or("");
    if (f.failed())
        return f.code();
    if (const auto ec = decode_type_fields(f, e, diag))
        return ec;
    if (const auto* d = raw.if_contains("details"))
        e.details = *d;
    if (f.failed())
        return f.code();
    e.raw = std::move(raw);
    return e;
}

session_header make_header(std::string id, std::string timestamp, std::string cwd)
{
    session_header h;
    h.version = current_session_version;
    h.raw["type"] = "session";
    h.raw["version"] = current_session_version;
    h.raw["id"] = id;
    h.raw["timestamp"] = timestamp;
    h.raw["cwd"] = cwd;
    h.id = std::move(id);
    h.timestamp = std::move(timestamp);
    h.cwd = std::move(cwd);
    return h;
}

namespace {

boost::json::object entry_base(
    std::string_view type,
    const std::string& id,
    const std::optional<std::string>& parent_id,
    const std::string& timestamp
)
{
    boost::json::object o;
    o["type"] = type;
    o["id"] = id;
    if (parent_id)
        o["parentId"] = *parent_id;
    else
        o["parentId"] = nullptr;
    o["timestamp"] = timestamp;
    return o;
}

}  // namespace

result<entry> make_message_entry(
    std::string id,
    std::optional<std::string> parent_id,
    std::string timestamp,
    boost::json::object message,
    diagnostics& diag
)
{
    auto o = entry_base("message", id, parent_id, timestamp);
    o["message"] = std::move(message);
    return decode_entry(std::move(o), diag);
}

entry make_compaction_entry(
    std::string id,
    std::optional<std::string> parent_id,
    std::string timestamp,
    std::string summary,
    std::string first_kept_entry_id,
    double tokens_before,
    boost::json::value details,
    bool from_hook,
    std::optional<boost::json::object> usage,
    std::optional<boost::json::object> system_message
)
{
    auto o = entry_base("compaction", id, parent_id, timestamp);
    o["summary"] = summary;
    o["firstKeptEntryId"] = first_kept_entry_id;
    if (tokens_before == static_cast<double>(static_cast<std::int64_t>(tokens_before)))
        o["tokensBefore"] = static_cast<std::int64_t>(tokens_before);
    else
        o["tokensBefore"] = tokens_before;
    if (!details.is_null())
        o["details"] = details;
    if (usage)
        o["usage"] = std::move(*usage);
    o["fromHook"] = from_hook;
    if (system_message)
        o["systemMessage"] = std::move(*system_message);
    diagnostics diag;
    return decode_entry(std::move(o), diag).value();  // built from valid parts: cannot fail
}

entry make_context_edit_entry(
    std::string id,
    std::optional<std::string> parent_id,
    std::string timestamp,
    std::string target_id,
    boost::json::value replacement
)
{
    auto o = entry_base("context_edit", id, parent_id, timestamp);
    o["targetId"] = target_id;
    o["replacement"] = std::move(replacement);
    diagnostics diag;
    return decode_entry(std::move(o), diag).value();  // callers pass null or {content}
}

std::string iso_timestamp_now()
{
    using namespace std::chrono;
    const auto now = system_clock::now();
    const auto ms = duration_cast<milliseconds>(now.time_since_epoch()).count();
    const std::time_t secs = static_cast<std::time_t>(ms / 1000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[96];
    std::snprintf(
        buf,
        sizeof buf,
        "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        static_cast<int>(ms % 1000)
    );
    return buf;
}

namespace {

// Howard Hinnant's days_from_civil.
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) noexcept
{
    y -= m <= 2;
    const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
    const auto yoe = static_cast<unsigned>(y - era * 400);
    const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

bool read_int(std::string_view s, std::size_t pos, std::size_t len, int& out) noexcept
{
    if (pos + len > s.size())
        return false;
    out = 0;
    for (std::size_t i = pos; i < pos + len; ++i)
    {
        if (s[i] < '0' || s[i] > '9')
            return false;
        out = out * 10 + (s[i] - '0');
    }
    return true;
}

}  // namespace

std::optional<double> parse_iso_timestamp(std::string_view s) noexcept
{
    int y, mo, d, h, mi, sec;
    if (!read_int(s, 0, 4, y) || s.size() < 19 || s[4] != '-' || !read_int(s, 5, 2, mo) || s[7] != '-' ||
        !read_int(s, 8, 2, d) || s[10] != 'T' || !read_int(s, 11, 2, h) || s[13] != ':' ||
        !read_int(s, 14, 2, mi) || s[16] != ':' || !read_int(s, 17, 2, sec))
        return std::nullopt;
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 59)
        return std::nullopt;
    std::size_t pos = 19;
    double ms = 0;
    if (pos < s.size() && s[pos] == '.')
    {
        ++pos;
        double scale = 100;
        while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9')
        {
            ms += (s[pos] - '0') * scale;
            scale /= 10;
            ++pos;
        }
        ms = static_cast<double>(static_cast<std::int64_t>(ms));  // Date.parse keeps milliseconds
    }
    std::int64_t offset_min = 0;
    if (pos < s.size() && s[pos] == 'Z')
        ++pos;
    else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-'))
    {
        int oh, om;
        if (!read_int(s, pos + 1, 2, oh) || pos + 3 >= s.size() || s[pos + 3] != ':' ||
            !read_int(s, pos + 4, 2, om))
            return std::nullopt;
        offset_min = (s[pos] == '-' ? -1 : 1) * (oh * 60 + om);
        pos += 6;
    }
    else
        return std::nullopt;
    if (pos != s.size())
        return std::nullopt;
    const std::int64_t days = days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d));
    const std::int64_t secs = days * 86400 + h * 3600 + mi * 60 + sec - offset_min * 60;
    return static_cast<double>(secs) * 1000.0 + ms;
}

std::string random_hex8()
{
    thread_local std::mt19937_64 rng{std::random_device{}()};
    char buf[9];
    std::snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>(rng() & 0xFFFFFFFFu));
    return buf;
}

}  // namespace agentctx::compaction
