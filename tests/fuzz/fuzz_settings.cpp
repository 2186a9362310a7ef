// Settings: the global and project files read by runtime::load_settings (written to a scratch
// directory), programmatic overrides and the model key, resolved by compaction::resolve_settings;
// and the `redaction` section (parse_redaction_settings, which compiles `re:` allowlist patterns).
// Input: one flags byte, then global, project, overrides and model key separated by NUL bytes.
// Invariants: no crash or exception; a failure is invalid_settings with a message; a success
// holds non-negative counts; reading from files equals resolving the same layers in memory.
#include "fuzz_check.hpp"

#include <agentctx/compaction/redaction.hpp>
#include <agentctx/compaction/settings.hpp>
#include <agentctx/runtime/settings_files.hpp>

#include <boost/json/parse.hpp>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <unistd.h>

namespace cx = agentctx::compaction;
namespace fs = std::filesystem;

namespace {

const fs::path& scratch()
{
    static const fs::path dir = [] {
        std::string tmpl = (fs::temp_directory_path() / "agentctx-fuzz-settings-XXXXXX").string();
        if (!mkdtemp(tmpl.data()))
            std::abort();
        fs::create_directories(fs::path(tmpl) / "project" / ".pi");
        std::atexit([] {
            std::error_code ec;
            fs::remove_all(scratch(), ec);
        });
        return fs::path(tmpl);
    }();
    return dir;
}

void write_file(const fs::path& p, std::string_view text)
{
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
}

std::string_view next_part(std::string_view& rest)
{
    const auto nul = rest.find('\0');
    const std::string_view part = rest.substr(0, nul);
    rest = nul == std::string_view::npos ? std::string_view() : rest.substr(nul + 1);
    return part;
}

std::optional<boost::json::object> as_object(std::string_view text)
{
    boost::system::error_code ec;
    auto v = boost::json::parse(text, ec);
    if (ec || !v.is_object())
        return std::nullopt;
    return std::move(v.get_object());
}

bool same(const cx::compaction_settings& a, const cx::compaction_settings& b)
{
    return a.enabled == b.enabled && a.reserve_tokens == b.reserve_tokens &&
           a.keep_recent_tokens == b.keep_recent_tokens && a.retry.enabled == b.retry.enabled &&
           a.retry.max_retries == b.retry.max_retries && a.retry.base_delay_ms == b.retry.base_delay_ms &&
           a.retry.max_agent_delay_ms == b.retry.max_agent_delay_ms;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    if (size == 0)
        return 0;
    const std::uint8_t flags = data[0];
    std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
    const std::string_view global = next_part(rest), project = next_part(rest), overrides = next_part(rest);
    const std::string_view key = next_part(rest);

    const bool has_global = flags & 1, has_project = flags & 2, trusted = flags & 4;
    const std::optional<std::string> model_key = flags & 8 ? std::optional<std::string>(key) : std::nullopt;
    const fs::path global_file = scratch() / "settings.json";
    const fs::path project_dir = scratch() / "project";
    std::error_code ec;
    fs::remove(global_file, ec);
    fs::remove(project_dir / ".pi" / "settings.json", ec);
    if (has_global)
        write_file(global_file, global);
    if (has_project)
        write_file(project_dir / ".pi" / "settings.json", project);
    const boost::json::object over = as_object(overrides).value_or(boost::json::object{});

    cx::diagnostics diag;
    const auto s = agentctx::runtime::load_settings(global_file, project_dir, trusted, over, diag, model_key);
    if (!s)
    {
        FUZZ_CHECK(
            s.error() == cx::errc::invalid_settings,
            "load_settings failed with %s",
            s.error().message().c_str()
        );
        FUZZ_CHECK(!diag.message.empty(), "a settings error without a message");
    }
    else
    {
        FUZZ_CHECK(
            s->reserve_tokens >= 0 && s->keep_recent_tokens >= 0 && s->retry.max_retries >= 0 &&
                s->retry.base_delay_ms >= 0 && s->retry.max_agent_delay_ms >= 0,
            "a negative count was accepted"
        );
    }

    // The same layers in memory, when the files are objects (else load_settings refused them).
    const auto g = has_global ? as_object(global) : std::nullopt;
    const auto p = has_project && trusted ? as_object(project) : std::nullopt;
    if ((!has_global || g) && (!(has_project && trusted) || p))
    {
        cx::settings_layers layers;
        layers.global = g;
        layers.project = p;
        layers.project_trusted = trusted;
        layers.overrides = over;
        cx::diagnostics d2;
        const auto s2 = cx::resolve_settings(layers, d2, model_key);
        FUZZ_CHECK(
            s.has_value() == s2.has_value(),
            "files and memory disagree: %s / %s",
            diag.message.c_str(),
            d2.message.c_str()
        );
        FUZZ_CHECK(!s || same(*s, *s2), "files and memory resolve to different settings");
        FUZZ_CHECK(s || diag.message == d2.message, "files and memory fail differently");
    }
    else
        FUZZ_CHECK(!s, "a settings file that is not a JSON object was accepted");

    for (const auto* layer : {&g, &p})
        if (*layer)
        {
            cx::diagnostics rd;
            if (const auto r = cx::parse_redaction_settings(**layer, rd); !r)
                FUZZ_CHECK(
                    r.error() == cx::errc::invalid_settings && !rd.message.empty(), "redaction settings error"
                );
        }
    cx::diagnostics od;
    (void)cx::parse_redaction_settings(over, od);
    return 0;
}
