// Retry-After: delay-seconds or HTTP-date, parsed by hand (no locale, no exceptions, no overflow).
#include <agentctx/providers/retry_after.hpp>

#include <algorithm>
#include <array>
#include <cstdint>

namespace agentctx::providers {

namespace {

constexpr std::int64_t saturation_seconds = 1'000'000'000;  // ~31.7 years: safe for a nanosecond clock

bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

// Optional whitespace around a field value (OWS).
std::string_view trim(std::string_view v)
{
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t'))
        v.remove_prefix(1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t'))
        v.remove_suffix(1);
    return v;
}

// A cursor over the value; every read checks bounds and fails softly.
struct cursor
{
    std::string_view s;
    bool ok = true;

    bool literal(std::string_view lit)
    {
        if (!ok || !s.starts_with(lit))
            return ok = false;
        s.remove_prefix(lit.size());
        return true;
    }

    // Exactly `n` digits (or between min_n and n when min_n is given).
    int digits(int n, int min_n = -1)
    {
        if (min_n < 0)
            min_n = n;
        int v = 0, got = 0;
        while (ok && got < n && !s.empty() && is_digit(s.front()))
        {
            v = v * 10 + (s.front() - '0');
            s.remove_prefix(1);
            ++got;
        }
        if (got < min_n)
            ok = false;
        return v;
    }

    // One of `names` (case-sensitive, as HTTP-date is); returns its index.
    template <std::size_t N>
    int one_of(const std::array<std::string_view, N>& names)
    {
        if (!ok)
            return -1;
        for (std::size_t i = 0; i < N; ++i)
            if (s.starts_with(names[i]))
            {
                s.remove_prefix(names[i].size());
                return static_cast<int>(i);
            }
        ok = false;
        return -1;
    }
};

constexpr std::array<std::string_view, 7> short_days{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};
constexpr std::array<std::string_view, 7> long_days{
    "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"};
constexpr std::array<std::string_view, 12> months{
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

struct civil
{
    int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
};

bool valid(const civil& c)
{
    static constexpr std::array<int, 12> days_in{31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    const bool leap = (c.year % 4 == 0 && c.year % 100 != 0) || c.year % 400 == 0;
    if (c.month < 1 || c.month > 12 || c.day < 1)
        return false;
    if (c.day > days_in[static_cast<std::size_t>(c.month - 1)] || (c.month == 2 && !leap && c.day > 28))
        return false;
    return c.hour <= 23 && c.minute <= 59 && c.second <= 60;  // 60: a leap second
}

// Days since 1970-01-01 (H. Hinnant's days_from_civil).
std::int64_t days_from_civil(int y, int m, int d)
{
    y -= m <= 2;
    const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
    const auto yoe = static_cast<std::int64_t>(y - era * 400);
    const std::int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const std::int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

void time_of_day(cursor& c, civil& out)
{
    out.hour = c.digits(2);
    c.literal(":");
    out.minute = c.digits(2);
    c.literal(":");
    out.second = c.digits(2);
}

// "<weekday>, DD<sep>Mon<sep>": how IMF-fixdate and RFC 850 dates start.
template <std::size_t N>
void weekday_day_month(
    cursor& c, const std::array<std::string_view, N>& days, std::string_view sep, civil& out
)
{
    c.one_of(days);
    c.literal(", ");
    out.day = c.digits(2);
    c.literal(sep);
    out.month = c.one_of(months) + 1;
    c.literal(sep);
}

// " HH:MM:SS GMT" to the end of the value: true when all of it was read.
bool gmt_time_to_end(cursor& c, civil& out)
{
    c.literal(" ");
    time_of_day(c, out);
    c.literal(" GMT");
    return c.ok && c.s.empty();
}

// IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT"
std::optional<civil> imf_fixdate(std::string_view v)
{
    cursor c{v};
    civil out;
    weekday_day_month(c, short_days, " ", out);
    out.year = c.digits(4);
    if (!gmt_time_to_end(c, out))
        return std::nullopt;
    return out;
}

// RFC 850: "Sunday, 06-Nov-94 08:49:37 GMT" (two-digit years: within 50 years of now, RFC 9110).
std::optional<civil> rfc850_date(std::string_view v, int current_year)
{
    cursor c{v};
    civil out;
    weekday_day_month(c, long_days, "-", out);
    const int yy = c.digits(2);
    if (!gmt_time_to_end(c, out))
        return std::nullopt;
    out.year = current_year / 100 * 100 + yy;
    if (out.year > current_year + 50)
        out.year -= 100;
    return out;
}

// asctime: "Sun Nov  6 08:49:37 1994"
std::optional<civil> asctime_date(std::string_view v)
{
    cursor c{v};
    civil out;
    c.one_of(short_days);
    c.literal(" ");
    out.month = c.one_of(months) + 1;
    c.literal(" ");
    if (c.ok && c.s.starts_with(' '))
    {
        c.literal(" ");
        out.day = c.digits(1);
    }
    else
        out.day = c.digits(2);
    c.literal(" ");
    time_of_day(c, out);
    c.literal(" ");
    out.year = c.digits(4);
    if (!c.ok || !c.s.empty())
        return std::nullopt;
    return out;
}

}  // namespace

std::optional<std::chrono::milliseconds> parse_retry_after(
    std::string_view value, std::chrono::system_clock::time_point now
)
{
    using std::chrono::milliseconds;
    using std::chrono::seconds;
    value = trim(value);
    if (value.empty())
        return std::nullopt;
    if (is_digit(value.front()))
    {
        std::int64_t n = 0;
        for (char ch : value)
        {
            if (!is_digit(ch))
                return std::nullopt;  // "1.5", "5s", "1 2"
            n = n >= saturation_seconds ? saturation_seconds : n * 10 + (ch - '0');
        }
        return milliseconds(std::min(n, saturation_seconds) * 1000);
    }
    const auto now_s = std::chrono::duration_cast<seconds>(now.time_since_epoch()).count();
    const int current_year = 1970 + static_cast<int>(now_s / 31'556'952);  // close enough to pick a century
    std::optional<civil> d = imf_fixdate(value);
    if (!d)
        d = rfc850_date(value, current_year);
    if (!d)
        d = asctime_date(value);
    if (!d || !valid(*d))
        return std::nullopt;
    const std::int64_t when = days_from_civil(d->year, d->month, d->day) * 86400 + d->hour * 3600 +
                              d->minute * 60 + std::min(d->second, 59);
    const std::int64_t delta = when - now_s;
    return milliseconds(delta > 0 ? std::min(delta, saturation_seconds) * 1000 : 0);
}

}  // namespace agentctx::providers
