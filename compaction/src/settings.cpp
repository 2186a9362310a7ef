// Settings layering: defaults, global file, trusted project file, programmatic overrides.
#include <agentctx/compaction/settings.hpp>

#include "field_reader.hpp"

namespace agentctx::compaction {

boost::json::object deep_merge(const boost::json::object& base, const boost::json::object& over)
{
    boost::json::object out = base;
    for (const auto& kv : over)
    {
        auto* existing = out.if_contains(kv.key());
        if (existing && existing->is_object() && kv.value().is_object())
            *existing = deep_merge(existing->get_object(), kv.value().get_object());
        else
            out[kv.key()] = kv.value();
    }
    return out;
}

namespace {

enum class kind
{
    boolean,
    count,
};

struct field_spec
{
    const char* section;
    const char* key;
    kind k;
};

constexpr field_spec fields[] = {
    {"compaction", "enabled", kind::boolean},
    {"compaction", "reserveTokens", kind::count},
    {"compaction", "keepRecentTokens", kind::count},
    {"retry", "enabled", kind::boolean},
    {"retry", "maxRetries", kind::count},
    {"retry", "baseDelayMs", kind::count},
};

// Checks one layer so that an error can say which file it came from.
result<void> check_layer(const boost::json::object& layer, const char* name, diagnostics& diag)
{
    for (const char* section : {"compaction", "retry"})
    {
        const auto* sec = layer.if_contains(section);
        if (sec && !sec->is_object())
        {
            diag.field = section;
            diag.message = std::string(name) + " settings: field '" + section + "': expected object, got " +
                           detail::kind_name(sec->kind());
            return errc::invalid_settings;
        }
    }
    for (const auto& f : fields)
    {
        const auto* sec = layer.if_contains(f.section);
        const auto* v = sec ? sec->get_object().if_contains(f.key) : nullptr;
        if (!v)
            continue;
        bool ok = false;
        if (f.k == kind::boolean)
            ok = v->is_bool();
        else if (v->is_int64())
            ok = v->get_int64() >= 0;
        else if (v->is_uint64())
            ok = true;
        else if (v->is_double())
            ok = v->get_double() >= 0 && v->get_double() == static_cast<double>(static_cast<std::int64_t>(v->get_double()));
        if (!ok)
        {
            diag.field = std::string(f.section) + "." + f.key;
            diag.message = std::string(name) + " settings: field '" + diag.field + "': expected " +
                           (f.k == kind::boolean ? "boolean" : "a non-negative integer") + ", got " +
                           (v->is_number() ? "a negative or fractional number" : detail::kind_name(v->kind()));
            return errc::invalid_settings;
        }
    }
    return {};
}

}  // namespace

result<compaction_settings> resolve_settings(const settings_layers& layers, diagnostics& diag)
{
    boost::json::object merged;
    if (layers.global)
    {
        if (auto r = check_layer(*layers.global, "global", diag); !r)
            return r.error();
        merged = *layers.global;
    }
    if (layers.project && layers.project_trusted)
    {
        if (auto r = check_layer(*layers.project, "project", diag); !r)
            return r.error();
        merged = deep_merge(merged, *layers.project);
    }
    if (auto r = check_layer(layers.overrides, "override", diag); !r)
        return r.error();
    merged = deep_merge(merged, layers.overrides);

    compaction_settings s;
    auto get = [&](const char* section, const char* key) -> const boost::json::value* {
        const auto* sec = merged.if_contains(section);
        return sec ? sec->get_object().if_contains(key) : nullptr;
    };
    auto count = [](const boost::json::value& v) { return v.to_number<std::int64_t>(); };
    if (const auto* v = get("compaction", "enabled"))
        s.enabled = v->get_bool();
    if (const auto* v = get("compaction", "reserveTokens"))
        s.reserve_tokens = count(*v);
    if (const auto* v = get("compaction", "keepRecentTokens"))
        s.keep_recent_tokens = count(*v);
    if (const auto* v = get("retry", "enabled"))
        s.retry.enabled = v->get_bool();
    if (const auto* v = get("retry", "maxRetries"))
        s.retry.max_retries = count(*v);
    if (const auto* v = get("retry", "baseDelayMs"))
        s.retry.base_delay_ms = count(*v);
    return s;
}

}  // namespace agentctx::compaction
