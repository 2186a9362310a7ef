// scrub_strings: every string inside a JSON value, redacted in place.
#include "scrub_strings.hpp"

namespace agentctx::runtime::detail {

bool scrub_strings(const std::function<void(std::string&)>& scrub, boost::json::value& v)
{
    bool changed = false;
    if (v.is_string())
    {
        std::string text(v.get_string());
        scrub(text);
        changed = text != v.get_string();
        if (changed)
            v = text;
    }
    else if (v.is_array())
        for (auto& e : v.get_array())
            changed = scrub_strings(scrub, e) || changed;
    else if (v.is_object())
        for (auto& kv : v.get_object())
            changed = scrub_strings(scrub, kv.value()) || changed;
    return changed;
}

}  // namespace agentctx::runtime::detail
