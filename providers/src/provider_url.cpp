// Provider base URLs: the path is joined before the query; logs see user-info and query values masked.
#include <agentctx/providers/provider_url.hpp>

#include <algorithm>

namespace agentctx::providers {

namespace {

// Where the query (or, without one, the fragment) starts; the size when there is neither.
std::size_t query_start(std::string_view url)
{
    const auto q = url.find_first_of("?#");
    return q == std::string_view::npos ? url.size() : q;
}

std::string_view path_part(std::string_view url)
{
    auto head = url.substr(0, query_start(url));
    while (!head.empty() && head.back() == '/')
        head.remove_suffix(1);
    return head;
}

// "a=1&b" -> "a=***&b=***": names stay readable, no value survives.
std::string mask_parameters(std::string_view params)
{
    std::string out;
    for (std::size_t p = 0; p <= params.size();)
    {
        const auto amp = std::min(params.find('&', p), params.size());
        const auto pair = params.substr(p, amp - p);
        const auto eq = pair.find('=');
        if (!pair.empty())
            out += std::string(pair.substr(0, eq)) + "=***";
        if (amp < params.size())
            out += '&';
        p = amp + 1;
    }
    return out;
}

}  // namespace

std::string join_url(std::string_view base, std::string_view path)
{
    return std::string(path_part(base)) + std::string(path) + std::string(base.substr(query_start(base)));
}

bool url_path_ends_with(std::string_view base, std::string_view suffix)
{
    return path_part(base).ends_with(suffix);
}

std::string mask_url(std::string_view url)
{
    // User-info is everything between "scheme://" and the last '@' before the path's first '/'
    // (searching that far, not only to a '?', masks a password that holds a bare '?' too).
    std::string out;
    std::size_t pos = 0;
    if (const auto scheme = url.find("://"); scheme != std::string_view::npos)
    {
        pos = scheme + 3;
        out = std::string(url.substr(0, pos));
        const auto slash = std::min(url.find('/', pos), url.size());
        if (const auto at = url.substr(pos, slash - pos).rfind('@'); at != std::string_view::npos)
        {
            out += "***@";
            pos += at + 1;
        }
    }
    const auto rest = url.substr(pos);
    const auto q = query_start(rest);
    out += std::string(rest.substr(0, q));
    const auto hash = rest.find('#', q);
    if (q < rest.size() && rest[q] == '?')
        out += "?" + mask_parameters(rest.substr(q + 1, std::min(hash, rest.size()) - q - 1));
    if (hash != std::string_view::npos)
        out += "#***";
    return out;
}

}  // namespace agentctx::providers
