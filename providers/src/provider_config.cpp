// The provider configuration read from a settings section and the environment.
#include <agentctx/providers/provider_config.hpp>

#include <algorithm>
#include <string>

namespace agentctx::providers {

namespace {

// A positive whole number of `key`, or an error naming the field.
compaction::result<std::optional<std::int64_t>> positive(
    const boost::json::object& section, const char* key, diagnostics& diag
)
{
    const auto* v = section.if_contains(key);
    if (!v)
        return std::optional<std::int64_t>{};
    if (v->is_int64() && v->get_int64() > 0)
        return std::optional(v->get_int64());
    if (v->is_uint64() && v->get_uint64() <= static_cast<std::uint64_t>(INT64_MAX) && v->get_uint64() > 0)
        return std::optional(static_cast<std::int64_t>(v->get_uint64()));
    diag.message = std::string("provider.") + key + " must be a positive whole number";
    return make_error_code(errc::not_configured);
}

// A whole number of `key`, 0 or more (0 = off), or an error naming the field.
compaction::result<std::optional<std::int64_t>> non_negative(
    const boost::json::object& section, const char* key, diagnostics& diag
)
{
    const auto* v = section.if_contains(key);
    if (v && ((v->is_int64() && v->get_int64() == 0) || (v->is_uint64() && v->get_uint64() == 0)))
        return std::optional<std::int64_t>(0);
    if (auto r = positive(section, key, diag); r || !v)
        return r;
    diag.message = std::string("provider.") + key + " must be a whole number, 0 or more (0 = off)";
    return make_error_code(errc::not_configured);
}

// `autoContinue`, `idleTimeoutMs` (streams, opt-in; rounded up to seconds; 0 = off), `keepAliveSeconds`.
compaction::result<void> read_timing(
    const boost::json::object& section, provider_config& c, diagnostics& diag
)
{
    if (const auto* v = section.if_contains("autoContinue"))
    {
        if (!v->is_bool())
        {
            diag.message = "provider.autoContinue must be true or false";
            return make_error_code(errc::not_configured);
        }
        c.auto_continue = v->get_bool();
    }
    const auto idle_ms = non_negative(section, "idleTimeoutMs", diag);
    if (!idle_ms)
        return idle_ms.error();
    if (*idle_ms)
        c.idle_timeout = std::chrono::seconds((**idle_ms + 999) / 1000);
    const auto keepalive = positive(section, "keepAliveSeconds", diag);
    if (!keepalive)
        return keepalive.error();
    if (*keepalive)
        c.keepalive_interval = std::chrono::seconds(**keepalive);
    return {};
}

// `native: {"openai": "inline" | "compact-endpoint" | "auto"}`: which OpenAI native form compacts.
compaction::result<void> read_native_forms(
    const boost::json::object& section, provider_config& c, diagnostics& diag
)
{
    const auto* v = section.if_contains("native");
    if (!v)
        return {};
    const auto* forms = v->if_object();
    const auto* openai = forms ? forms->if_contains("openai") : nullptr;
    const auto* name = openai && openai->is_string() ? &openai->get_string() : nullptr;
    if (forms && !openai)
        return {};
    if (name && *name == "inline")
        c.openai_form = openai_native_form::inline_request;
    else if (name && *name == "compact-endpoint")
        c.openai_form = openai_native_form::compact_endpoint;
    else if (name && *name == "auto")
        c.openai_form = openai_native_form::automatic;
    else
    {
        diag.message = forms ? "provider.native.openai must be \"inline\", \"compact-endpoint\" or \"auto\""
                             : "provider.native must be an object ({\"openai\": …})";
        return make_error_code(errc::not_configured);
    }
    return {};
}

// The section's limits and switches (`contextWindow`, `maxOutputTokens`, `maxRetries`,
// `maxRetryWaitMs`, `maxResponseBytes`, `stream`, `countTokens`, `compactionParameter`, `nativeCompaction`)
// over `c`.
compaction::result<void> read_limits(
    const boost::json::object& section, provider_config& c, diagnostics& diag
)
{
    auto num = [&](const char* key, std::int64_t& out) {
        if (const auto* v = section.if_contains(key); v && v->is_number())
            out = v->to_number<std::int64_t>();
    };
    num("contextWindow", c.context_window);
    std::int64_t wait_ms = c.max_retry_wait.count();
    num("maxRetryWaitMs", wait_ms);
    c.max_retry_wait = std::chrono::milliseconds(std::max<std::int64_t>(wait_ms, 0));
    auto cap = static_cast<std::int64_t>(c.max_response_bytes);
    num("maxResponseBytes", cap);
    if (cap > 0)
        c.max_response_bytes = static_cast<std::size_t>(cap);
    num("maxOutputTokens", c.max_output_tokens);
    std::int64_t retries = c.max_retries;
    num("maxRetries", retries);
    c.max_retries = static_cast<int>(retries);
    if (const auto* v = section.if_contains("stream"); v && v->is_bool())
        c.stream = v->get_bool();
    if (const auto* v = section.if_contains("countTokens"); v && v->is_bool())
        c.exact_counting = v->get_bool();
    if (const auto* v = section.if_contains("compactionParameter"); v && v->is_bool())
        c.compaction_parameter = v->get_bool();
    if (auto ok = read_timing(section, c, diag); !ok)
        return ok;
    if (auto ok = read_native_forms(section, c, diag); !ok)
        return ok;
    if (const auto* v = section.if_contains("nativeCompaction"))
    {
        if (v->is_bool())
            c.native = v->get_bool() ? native_mode::on : native_mode::off;
        else if (v->is_string() && v->get_string() == "auto")
            c.native = native_mode::probe;
        else
        {
            diag.message = "provider.nativeCompaction must be true, false or \"auto\"";
            return make_error_code(errc::not_configured);
        }
    }
    return {};
}

// Where each provider listens unless told otherwise.
std::string default_base_url(const std::string& name)
{
    if (name == "anthropic")
        return "https://api.anthropic.com";
    if (name == "openai")
        return "https://api.openai.com/v1";
    if (name == "ollama")
        return "http://localhost:11434/v1";
    if (name == "llamacpp")
        return "http://localhost:8080/v1";
    return "http://localhost:8000/v1";
}

}  // namespace

compaction::result<std::optional<provider_config>> provider_from_environment(
    const boost::json::object* section,
    const std::function<const char*(const char*)>& getenv,
    diagnostics& diag
)
{
    auto env = [&](const char* n) -> std::string {
        const char* v = getenv(n);
        return v ? std::string(v) : std::string();
    };
    auto setting = [&](const char* key) -> std::string {
        if (!section)
            return {};
        const auto* v = section->if_contains(key);
        return v && v->is_string() ? std::string(v->get_string()) : std::string();
    };
    std::string name = setting("name");
    if (name.empty())
        name = env("AGENTCTX_PROVIDER");
    if (name.empty())
    {
        if (!env("ANTHROPIC_API_KEY").empty())
            name = "anthropic";
        else if (!env("OPENAI_API_KEY").empty() || !env("OPENAI_BASE_URL").empty())
            name = "openai";
        else
            return std::optional<provider_config>{};
    }
    if (name == "offline")
        return std::optional<provider_config>{};
    provider_config c;
    c.name = name;
    const bool anthropic = name == "anthropic";
    const bool compatible = !anthropic && name != "openai";  // vllm, ollama, llamacpp, openai-compatible
    if (!anthropic && name != "openai" && name != "openai-compatible" && name != "vllm" && name != "ollama" &&
        name != "llamacpp")
    {
        diag.message = "unknown provider '" + name +
                       "' (offline, openai, anthropic, openai-compatible, vllm, ollama, llamacpp)";
        return make_error_code(errc::not_configured);
    }
    c.format = anthropic ? wire_format::anthropic : wire_format::openai;
    c.base_url = setting("baseUrl");
    if (c.base_url.empty())
        c.base_url = env(anthropic ? "ANTHROPIC_BASE_URL" : "OPENAI_BASE_URL");
    if (c.base_url.empty())
        c.base_url = default_base_url(name);
    const std::string key_env = setting("apiKeyEnv").empty()
                                    ? (anthropic ? "ANTHROPIC_API_KEY" : "OPENAI_API_KEY")
                                    : setting("apiKeyEnv");
    c.api_key = env(key_env.c_str());
    c.model = setting("model");
    if (c.model.empty())
        c.model = env("AGENTCTX_MODEL");
    if (c.model.empty())
        c.model = env(anthropic ? "ANTHROPIC_MODEL" : "OPENAI_MODEL");
    if (c.model.empty())
        c.model = anthropic ? "claude-sonnet-4-5" : (name == "openai" ? "gpt-4.1-mini" : "default");
    if (section)
        if (auto r = read_limits(*section, c, diag); !r)
            return r.error();
    if (c.api_key.empty() && !compatible)
    {
        diag.message = "provider '" + name + "' needs an API key in $" + key_env;
        return make_error_code(errc::not_configured);
    }
    return std::optional<provider_config>(std::move(c));
}

}  // namespace agentctx::providers
