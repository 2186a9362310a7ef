// Redaction of every string inside a JSON value: how a cache-friendly request's head is scrubbed.
#pragma once

#include <boost/json/value.hpp>

#include <functional>
#include <string>

namespace agentctx::runtime::detail {

/// Every string of `v`, scrubbed in place by `scrub`; true if one changed.
bool scrub_strings(const std::function<void(std::string&)>& scrub, boost::json::value& v);

}  // namespace agentctx::runtime::detail
