// The agent server's OpenAPI document as a test oracle: every answer a test receives is checked against it.
#pragma once

#include "file_text.hpp"
#include "loopback_http.hpp"
#include "openapi_check.hpp"

#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

namespace agentctx::test {

/// The server's OpenAPI document (docs/openapi.json), read once.
inline const openapi_check& server_contract()
{
    static const openapi_check check(boost::json::parse(read_text(AGENTCTX_OPENAPI_DOC)));
    return check;
}

/// "" when an answer agrees with the document. A path the document does not have (or a method
/// it does not list for the path) must be answered 404, 405 or 401 with the error shape.
inline std::string contract_violation(
    std::string_view method,
    std::string_view target,
    long status,
    std::string_view content_type,
    std::string_view body,
    const openapi_check& c = server_contract()
)
{
    auto why = c.check(method, target, static_cast<int>(status), content_type, body);
    if (why.empty() || why.find(": not in the document") == std::string::npos ||
        why.find('$') != std::string::npos)
        return why;
    if (status != 404 && status != 405 && status != 401)  // 401: the token is checked before the route
        return why + " (answered " + std::to_string(status) + ")";
    boost::system::error_code ec;
    const auto v = boost::json::parse(body, ec);
    if (ec)
        return why + ": the error body is not JSON";
    return c.validate(boost::json::parse(R"({"$ref":"#/components/schemas/Error"})"), v, "$");
}

/// contract_violation for a raw HTTP/1.1 answer: its status line, Content-Type and body.
inline std::string raw_contract_violation(
    std::string_view method, std::string_view target, std::string_view raw
)
{
    const auto head_end = raw.find("\r\n\r\n");
    if (raw.rfind("HTTP/1.1 ", 0) != 0 || head_end == std::string_view::npos || raw.size() < 12)
        return "not an HTTP/1.1 answer: " + std::string(raw.substr(0, 80));
    const long status = std::strtol(std::string(raw.substr(9, 3)).c_str(), nullptr, 10);
    std::string head(raw.substr(0, head_end));
    std::transform(head.begin(), head.end(), head.begin(), [](unsigned char c) {
        return static_cast<char>(std::tolower(c));
    });
    std::string_view type;
    if (const auto at = head.find("\r\ncontent-type:"); at != std::string::npos)
    {
        const auto from = head.find_first_not_of(' ', at + 15);
        type = raw.substr(from, head.find("\r\n", from) - from);
    }
    if (head.find("transfer-encoding: chunked") != std::string::npos)
        return "";  // an event stream: its frames are checked by the event tests
    return contract_violation(method, target, status, type, raw.substr(head_end + 4));
}

/// test::ask, its answer checked against the OpenAPI document.
inline std::string checked_ask(
    std::uint16_t port, const std::string& method, const std::string& path, const std::string& body = ""
)
{
    auto res = ask(port, method, path, body);
    if (auto why = raw_contract_violation(method, path, res); !why.empty())
        ADD_FAILURE() << method << " " << path << ": " << why << "\n" << res;
    return res;
}

}  // namespace agentctx::test
