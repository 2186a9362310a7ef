// Settings layering: defaults, global file, trusted project file, programmatic overrides;
// per-model token budgets; Pi's validation messages.
#include <agentctx/compaction/settings.hpp>

#include <agentctx/compaction/json_text.hpp>
#include <agentctx/compaction/projection.hpp>

#include "json/field_reader.hpp"
#include "settings_clearing.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <string_view>

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

boost::json::object merge_layers(const settings_layers& layers)
{
    boost::json::object merged = layers.global.value_or(boost::json::object{});
    if (layers.project && layers.project_trusted)
        merged = deep_merge(merged, *layers.project);
    return deep_merge(merged, layers.overrides);
}

std::string override_key(const model_ref& model)
{
    return model.provider + "/" + model.model_id;
}

std::string js_string(const boost::json::value& v)
{
    switch (v.kind())
    {
    case boost::json::kind::null:
        return "null";
    case boost::json::kind::bool_:
        return v.get_bool() ? "true" : "false";
    case boost::json::kind::string:
        return std::string(v.get_string());
    case boost::json::kind::object:
        return "[object Object]";
    case boost::json::kind::array:
    {
        // Array.prototype.join: null (and undefined) elements are empty strings.
        std::string out;
        bool first = true;
        for (const auto& e : v.get_array())
        {
            if (!first)
                out += ',';
            first = false;
            if (!e.is_null())
                out += js_string(e);
        }
        return out;
    }
    case boost::json::kind::int64:
    case boost::json::kind::uint64:
    case boost::json::kind::double_:
    {
        std::string out;
        stringify_to(out, v);  // numbers: ECMAScript Number::toString
        return out;
    }
    }
    return {};
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

// Checked per layer (agentctx's rule; Pi reads them leniently). The two token budgets are not
// here: Pi validates them on the merged settings (validate_budget).
constexpr field_spec layer_fields[] = {
    {"compaction", "enabled", kind::boolean},
    {"compaction", "keepRecentExchanges", kind::count},
    {"compaction", "summaryMaxSourceChars", kind::count},
    {"compaction", "summaryMaxCalls", kind::count},
    {"retry", "enabled", kind::boolean},
    {"retry", "maxRetries", kind::count},
    {"retry", "baseDelayMs", kind::count},
    {"retry", "maxAgentDelayMs", kind::count},
};

constexpr double max_safe_integer = 9007199254740991.0;  // Number.MAX_SAFE_INTEGER

// `typeof v === "number" && Number.isSafeInteger(v) && v >= 0`.
bool is_non_negative_safe_integer(const boost::json::value& v) noexcept
{
    if (v.is_int64())
        return v.get_int64() >= 0 && v.get_int64() <= static_cast<std::int64_t>(max_safe_integer);
    if (v.is_uint64())
        return v.get_uint64() <= static_cast<std::uint64_t>(max_safe_integer);
    if (v.is_double())
    {
        const double d = v.get_double();
        return std::isfinite(d) && d == std::trunc(d) && d >= 0 && d <= max_safe_integer;
    }
    return false;
}

// `compaction.background` in one layer: an object of `enabled` (boolean), `startAt` (a fraction
// in (0, 1]) and `commit` (`"at-threshold"` or `"when-ready"`); other keys are ignored.
result<void> check_background(const boost::json::object& layer, const char* name, diagnostics& diag)
{
    const auto* comp = layer.if_contains("compaction");
    const auto* bg = comp ? comp->get_object().if_contains("background") : nullptr;
    if (!bg)
        return {};
    const auto refuse = [&](std::string field, std::string expected, const boost::json::value& got
                        ) -> result<void> {
        diag.field = std::move(field);
        std::string shown;
        if (got.is_string())
            quote_to(shown, got.get_string());
        else
            shown = got.is_number() ? js_string(got) : detail::kind_name(got.kind());
        diag.message = std::string(name) + " settings: field '" + diag.field + "': expected " + expected +
                       ", got " + shown;
        return errc::invalid_settings;
    };
    if (!bg->is_object())
        return refuse("compaction.background", "object", *bg);
    const auto& o = bg->get_object();
    if (const auto* v = o.if_contains("enabled"); v && !v->is_bool())
        return refuse("compaction.background.enabled", "boolean", *v);
    if (const auto* v = o.if_contains("startAt"))
    {
        const double d = v->is_number() ? v->to_number<double>() : 0.0;
        if (!v->is_number() || !std::isfinite(d) || d <= 0.0 || d > 1.0)
            return refuse("compaction.background.startAt", "a number in (0, 1]", *v);
    }
    if (const auto* v = o.if_contains("commit"))
        if (!v->is_string() || (v->get_string() != "at-threshold" && v->get_string() != "when-ready"))
            return refuse("compaction.background.commit", "\"at-threshold\" or \"when-ready\"", *v);
    return {};
}

// `compaction.<key>` in one layer: one of `choices` (written `"a" or "b"` / `"a", "b" or "c"` in
// `expected`), or absent.
result<void> check_choice(
    const boost::json::object& layer,
    const char* name,
    std::string_view key,
    std::initializer_list<std::string_view> choices,
    std::string_view expected,
    diagnostics& diag
)
{
    const auto* comp = layer.if_contains("compaction");
    const auto* v = comp ? comp->get_object().if_contains(key) : nullptr;
    if (!v || (v->is_string() && std::find(choices.begin(), choices.end(), v->get_string()) != choices.end()))
        return {};
    const std::string field = "compaction." + std::string(key);
    diag.field = field;
    std::string shown;
    if (v->is_string())
        quote_to(shown, v->get_string());
    else
        shown = v->is_number() ? js_string(*v) : detail::kind_name(v->kind());
    diag.message = std::string(name) + " settings: field '" + field + "': expected " + std::string(expected) +
                   ", got " + shown;
    return errc::invalid_settings;
}

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
    for (const auto& f : layer_fields)
    {
        const auto* sec = layer.if_contains(f.section);
        const auto* v = sec ? sec->get_object().if_contains(f.key) : nullptr;
        if (!v)
            continue;
        const bool ok = f.k == kind::boolean ? v->is_bool() : is_non_negative_safe_integer(*v);
        if (!ok)
        {
            diag.field = std::string(f.section) + "." + f.key;
            diag.message =
                std::string(name) + " settings: field '" + diag.field + "': expected " +
                (f.k == kind::boolean ? "boolean" : "a non-negative integer") + ", got " +
                (v->is_number() ? "a negative, fractional or unsafe number" : detail::kind_name(v->kind()));
            return errc::invalid_settings;
        }
    }
    if (auto r = check_choice(
            layer,
            name,
            "summaryRequest",
            {"cache-friendly", "standalone"},
            R"("cache-friendly" or "standalone")",
            diag
        );
        !r)
        return r;
    if (auto r = check_choice(
            layer, name, "recallGate", {"off", "check", "repair"}, R"("off", "check" or "repair")", diag
        );
        !r)
        return r;
    if (auto r = check_background(layer, name, diag); !r)
        return r;
    return detail::check_clearing_layer(layer, name, diag);
}

// The merged `compaction.background` (each layer passed check_background).
background_settings background_of(const boost::json::object* comp)
{
    background_settings out;
    const auto* bg = comp ? comp->if_contains("background") : nullptr;
    if (!bg)
        return out;
    const auto& o = bg->get_object();
    if (const auto* v = o.if_contains("enabled"))
        out.enabled = v->get_bool();
    if (const auto* v = o.if_contains("startAt"))
        out.start_at = v->to_number<double>();
    if (const auto* v = o.if_contains("commit"))
        out.commit =
            v->get_string() == "when-ready" ? background_commit::when_ready : background_commit::at_threshold;
    return out;
}

std::int64_t count_of(const boost::json::value& v)
{
    return v.to_number<std::int64_t>();  // exact: validated as a safe integer
}

// One token budget: `override[field] ?? compaction[field] ?? fallback`, validated as Pi does.
result<std::int64_t> resolve_budget(
    const boost::json::object* compaction,
    const std::optional<std::string>& model_key,
    const char* field,
    std::int64_t fallback,
    diagnostics& diag
)
{
    const boost::json::value* base = compaction ? compaction->if_contains(field) : nullptr;
    if (base && !is_non_negative_safe_integer(*base))
    {
        diag.field = std::string("compaction.") + field;
        diag.message = "Invalid compaction." + std::string(field) + " setting: " + js_string(*base) +
                       ". Expected a non-negative safe integer.";
        return errc::invalid_settings;
    }
    std::int64_t out = base ? count_of(*base) : fallback;
    if (!model_key || !compaction)
        return out;
    const auto* overrides = compaction->if_contains("modelOverrides");
    if (!overrides || !overrides->is_object())
        return out;  // `overrides?.[key]` of a non-object is undefined
    const std::string& key = *model_key;
    const auto* entry = overrides->get_object().if_contains(key);
    if (!entry)
        return out;
    std::string quoted;
    quote_to(quoted, key);
    const std::string where = "compaction.modelOverrides[" + quoted + "]";
    if (!entry->is_object())
    {
        diag.field = where;
        diag.message = "Invalid " + where + " setting: " + js_string(*entry) + ". Expected an object.";
        return errc::invalid_settings;
    }
    const auto* v = entry->get_object().if_contains(field);
    if (!v)
        return out;
    if (!is_non_negative_safe_integer(*v))
    {
        diag.field = where + "." + field;
        diag.message = "Invalid " + diag.field + " setting: " + js_string(*v) +
                       ". Expected a non-negative safe integer.";
        return errc::invalid_settings;
    }
    return count_of(*v);
}

}  // namespace

result<compaction_settings> resolve_settings(
    const settings_layers& layers, diagnostics& diag, const std::optional<std::string>& model_key
)
{
    if (layers.global)
        if (auto r = check_layer(*layers.global, "global", diag); !r)
            return r.error();
    if (layers.project && layers.project_trusted)
        if (auto r = check_layer(*layers.project, "project", diag); !r)
            return r.error();
    if (auto r = check_layer(layers.overrides, "override", diag); !r)
        return r.error();
    const boost::json::object merged = merge_layers(layers);

    compaction_settings s;
    const auto section = [&](const char* name) -> const boost::json::object* {
        const auto* sec = merged.if_contains(name);
        return sec ? &sec->get_object() : nullptr;  // an object: check_layer saw every layer
    };
    const auto* comp = section("compaction");
    const auto* retry = section("retry");
    const auto get = [](const boost::json::object* sec, const char* key) {
        return sec ? sec->if_contains(key) : nullptr;
    };

    auto reserve = resolve_budget(comp, model_key, "reserveTokens", s.reserve_tokens, diag);
    if (!reserve)
        return reserve.error();
    auto keep = resolve_budget(comp, model_key, "keepRecentTokens", s.keep_recent_tokens, diag);
    if (!keep)
        return keep.error();
    s.reserve_tokens = *reserve;
    s.keep_recent_tokens = *keep;

    if (const auto* v = get(comp, "enabled"))
        s.enabled = v->get_bool();
    if (const auto* v = get(comp, "keepRecentExchanges"))
        s.keep_recent_exchanges = count_of(*v);
    if (const auto* v = get(comp, "summaryMaxSourceChars"))
        s.summary_max_source_chars = count_of(*v);
    if (const auto* v = get(comp, "summaryMaxCalls"))
        s.summary_max_calls = count_of(*v);
    s.background = background_of(comp);
    if (const auto* v = get(comp, "summaryRequest"))
        s.summary_request = v->get_string() == "standalone" ? summary_request_mode::standalone
                                                            : summary_request_mode::cache_friendly;
    if (const auto* v = get(comp, "recallGate"))
        s.recall_gate = v->get_string() == "off"     ? recall_gate_mode::off
                        : v->get_string() == "check" ? recall_gate_mode::check
                                                     : recall_gate_mode::repair;
    detail::read_clearing(comp, s);
    if (const auto* v = get(retry, "enabled"))
        s.retry.enabled = v->get_bool();
    if (const auto* v = get(retry, "maxRetries"))
        s.retry.max_retries = count_of(*v);
    if (const auto* v = get(retry, "baseDelayMs"))
        s.retry.base_delay_ms = count_of(*v);
    if (const auto* v = get(retry, "maxAgentDelayMs"))
        s.retry.max_agent_delay_ms = count_of(*v);
    return s;
}

}  // namespace agentctx::compaction
