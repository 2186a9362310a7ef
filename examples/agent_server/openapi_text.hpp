// The server's OpenAPI document, embedded at build time from docs/openapi.json.
#pragma once

#include <string_view>

namespace agentctx::server {

/// docs/openapi.json as it was when the server was built (served at GET /openapi.json).
std::string_view openapi_text() noexcept;

}  // namespace agentctx::server
