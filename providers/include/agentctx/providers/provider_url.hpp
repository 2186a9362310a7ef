// Provider base URLs: joining an endpoint path before the query, and masking credentials for logs.
#pragma once

#include <string>
#include <string_view>

namespace agentctx::providers {

/// `base` with `path` appended to its path part: trailing slashes of the path part are dropped
/// and the query (and fragment) stay at the end, so `http://h/v1?api-key=K` + `/chat/completions`
/// is `http://h/v1/chat/completions?api-key=K`.
std::string join_url(std::string_view base, std::string_view path);

/// Whether the path part of `base` (query and trailing slashes aside) ends with `suffix`.
bool url_path_ends_with(std::string_view base, std::string_view suffix);

/// `url` safe to log: user-info becomes `***@` and every query (and fragment) value becomes
/// `***`, parameter names kept (`http://***@h/v1?api-key=***`).
std::string mask_url(std::string_view url);

}  // namespace agentctx::providers
