// load_host_config: the provider from settings, flags and environment, and modelOverrides by that model's
// key.
#include <agentctx/runtime/host_config.hpp>

#include <agentctx/providers/error.hpp>
#include <agentctx/providers/offline_summarizer.hpp>
#include <agentctx/runtime/error.hpp>

#include <boost/asio/io_context.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>

using namespace agentctx;
namespace fs = std::filesystem;

namespace {

fs::path settings_file(const std::string& name, const std::string& text)
{
    const auto p = fs::temp_directory_path() / ("agentctx-host-config-" + name + ".json");
    std::ofstream(p) << text;
    return p;
}

runtime::host_inputs inputs(const fs::path& file)
{
    runtime::host_inputs in;
    in.sources.global = file;
    in.getenv = [](const char*) -> const char* { return nullptr; };
    return in;
}

// The session configuration every host builds (make_session_config), on a scratch executor.
runtime::session_config config_of(const runtime::host_config& h)
{
    static boost::asio::io_context ioc;
    return runtime::make_session_config(h, ioc.get_executor());
}

const std::string with_provider = R"({
  "provider": {"name": "vllm", "model": "m1", "baseUrl": "http://127.0.0.1:9/v1", "contextWindow": 64000},
  "compaction": {"keepRecentTokens": 20000, "reserveTokens": 4000,
                 "modelOverrides": {"vllm/m1": {"keepRecentTokens": 1234}, "m1": {"keepRecentTokens": 999}}}
})";

}  // namespace

TEST(host_config, the_settings_files_provider_selects_its_model_override)
{
    compaction::diagnostics diag;
    const auto h = runtime::load_host_config(inputs(settings_file("provider", with_provider)), diag);
    ASSERT_TRUE(h) << diag.message;
    ASSERT_TRUE(h->provider);
    EXPECT_EQ(h->model.provider, "vllm");
    EXPECT_EQ(h->model.model_id, "m1");
    EXPECT_EQ(h->model.context_window, 64000);
    EXPECT_EQ(h->settings.compaction.keep_recent_tokens, 1234);  // "vllm/m1", never the bare "m1"
    EXPECT_EQ(h->settings.compaction.reserve_tokens, 4000);
    const auto c = config_of(*h);
    EXPECT_EQ(c.settings.keep_recent_tokens, 1234);
    EXPECT_EQ(c.model.model_id, "m1");
    EXPECT_EQ(c.model.context_window, 64000);
}

TEST(host_config, flags_override_the_provider_section_and_the_window)
{
    auto in = inputs(settings_file("flags", with_provider));
    in.provider_flags["model"] = "m2";
    in.context_window = 32000;
    compaction::diagnostics diag;
    const auto h = runtime::load_host_config(in, diag);
    ASSERT_TRUE(h) << diag.message;
    EXPECT_EQ(h->model.model_id, "m2");
    EXPECT_EQ(h->model.context_window, 32000);
    EXPECT_EQ(h->settings.compaction.keep_recent_tokens, 20000);  // no entry for "vllm/m2"
}

TEST(host_config, without_a_provider_the_offline_model_is_the_key)
{
    const auto file = settings_file("offline", R"({"compaction": {"keepRecentTokens": 20000,
        "modelOverrides": {"offline/offline": {"keepRecentTokens": 777}}}})");
    compaction::diagnostics diag;
    const auto h = runtime::load_host_config(inputs(file), diag);
    ASSERT_TRUE(h) << diag.message;
    EXPECT_FALSE(h->provider);
    EXPECT_EQ(h->model.provider, "offline");
    EXPECT_EQ(h->model.model_id, "offline");
    EXPECT_EQ(h->model.context_window, runtime::default_context_window);
    EXPECT_EQ(h->settings.compaction.keep_recent_tokens, 777);
}

TEST(host_config, an_unknown_provider_is_not_configured)
{
    auto in = inputs(settings_file("unknown", R"({"provider": {"name": "nonesuch"}})"));
    compaction::diagnostics diag;
    const auto h = runtime::load_host_config(in, diag);
    ASSERT_FALSE(h);
    EXPECT_EQ(h.error(), providers::make_error_code(providers::errc::not_configured));
    EXPECT_NE(diag.message.find("unknown provider 'nonesuch'"), std::string::npos);
}

TEST(host_config, an_invalid_override_of_the_model_is_invalid_settings)
{
    auto in = inputs(settings_file("invalid", R"({"provider": {"name": "vllm", "model": "m1"},
        "compaction": {"modelOverrides": {"vllm/m1": {"keepRecentTokens": -1}}}})"));
    compaction::diagnostics diag;
    const auto h = runtime::load_host_config(in, diag);
    ASSERT_FALSE(h);
    EXPECT_EQ(h.error(), compaction::make_error_code(compaction::errc::invalid_settings));
}

TEST(host_config, the_models_section_lists_the_models_a_session_may_switch_to)
{
    const auto file = settings_file("models", R"({"models": {
        "anthropic/claude-haiku-4-5": {"contextWindow": 100000, "maxOutputTokens": 8192},
        "openrouter/qwen/qwen3-32b": {"contextWindow": 32768}}})");
    auto in = inputs(file);
    in.sources.overrides = boost::json::object{
        {"models",
         boost::json::object{
             {"anthropic/claude-haiku-4-5",
              boost::json::object{{"contextWindow", 90000}}}}}};  // merged over the file
    compaction::diagnostics diag;
    const auto h = runtime::load_host_config(in, diag);
    ASSERT_TRUE(h) << diag.message;
    ASSERT_EQ(h->models.size(), 2u);
    EXPECT_EQ(h->models[0].provider, "anthropic");
    EXPECT_EQ(h->models[0].model_id, "claude-haiku-4-5");
    EXPECT_EQ(h->models[0].context_window, 90000);
    EXPECT_EQ(h->models[0].max_output_tokens, 8192);
    EXPECT_EQ(h->models[1].provider, "openrouter");
    EXPECT_EQ(h->models[1].model_id, "qwen/qwen3-32b");  // the provider ends at the first '/'
    EXPECT_EQ(h->models[1].context_window, 32768);
    EXPECT_EQ(h->models[1].max_output_tokens, 0);
    const auto c = config_of(*h);
    ASSERT_EQ(c.models.size(), 2u);
    EXPECT_EQ(c.models[1].model_id, "qwen/qwen3-32b");
}

TEST(host_config, each_listed_model_carries_its_own_model_overrides)
{
    const auto file = settings_file(
        "models-overrides", R"({"compaction": {"reserveTokens": 9000,
        "modelOverrides": {"anthropic/claude-haiku-4-5": {"reserveTokens": 4000, "keepRecentTokens": 3000}}},
        "models": {"anthropic/claude-haiku-4-5": {"contextWindow": 100000}, "openai/gpt-4.1": {"contextWindow": 1000000}}})"
    );
    compaction::diagnostics diag;
    const auto h = runtime::load_host_config(inputs(file), diag);
    ASSERT_TRUE(h) << diag.message;
    ASSERT_EQ(h->models.size(), 2u);
    EXPECT_EQ(h->models[0].reserve_tokens, 4000);       // its override
    EXPECT_EQ(h->models[0].keep_recent_tokens, 3000);   // its override
    EXPECT_EQ(h->models[1].reserve_tokens, 9000);       // the ordinary setting
    EXPECT_EQ(h->models[1].keep_recent_tokens, 20000);  // the default
    // The configured model's are those the settings were resolved with.
    EXPECT_EQ(h->model.reserve_tokens, h->settings.compaction.reserve_tokens);
    EXPECT_EQ(h->model.keep_recent_tokens, h->settings.compaction.keep_recent_tokens);
    EXPECT_EQ(config_of(*h).models[0].reserve_tokens, 4000);
}

TEST(host_config, the_budget_flags_win_over_every_layer_and_every_model_override)
{
    const auto file = settings_file(
        "budget-flags", R"({"provider": {"name": "vllm", "model": "m1", "baseUrl": "http://127.0.0.1:9/v1"},
        "compaction": {"keepRecentTokens": 20000, "reserveTokens": 9000, "summaryMaxCalls": 3,
        "modelOverrides": {"vllm/m1": {"keepRecentTokens": 1234, "reserveTokens": 4000},
                           "anthropic/claude-haiku-4-5": {"keepRecentTokens": 3000}}},
        "models": {"anthropic/claude-haiku-4-5": {"contextWindow": 100000}}})"
    );
    auto in = inputs(file);
    in.flags.keep_recent_tokens = 777;
    in.flags.reserve_tokens = 2000;
    in.flags.summary_max_calls = 9;
    compaction::diagnostics diag;
    const auto h = runtime::load_host_config(in, diag);
    ASSERT_TRUE(h) << diag.message;
    EXPECT_EQ(h->settings.compaction.keep_recent_tokens, 777);  // over "vllm/m1"'s 1234
    EXPECT_EQ(h->settings.compaction.reserve_tokens, 2000);     // over "vllm/m1"'s 4000
    EXPECT_EQ(h->settings.compaction.summary_max_calls, 9);
    EXPECT_EQ(
        h->settings.compaction.summary_max_source_chars,
        compaction::compaction_settings{}.summary_max_source_chars
    );
    EXPECT_EQ(h->model.keep_recent_tokens, 777);
    ASSERT_EQ(h->models.size(), 1u);
    EXPECT_EQ(h->models[0].keep_recent_tokens, 777);  // over its own override's 3000
    EXPECT_EQ(h->models[0].reserve_tokens, 2000);
    const auto c = config_of(*h);
    EXPECT_EQ(c.settings.keep_recent_tokens, 777);
    EXPECT_EQ(c.models[0].keep_recent_tokens, 777);

    // Without flags the overrides hold, as before.
    const auto plain = runtime::load_host_config(inputs(file), diag);
    ASSERT_TRUE(plain) << diag.message;
    EXPECT_EQ(plain->settings.compaction.keep_recent_tokens, 1234);
    EXPECT_EQ(plain->models[0].keep_recent_tokens, 3000);
}

TEST(host_config, a_bad_models_section_is_invalid_settings_naming_the_field)
{
    const std::pair<const char*, const char*> cases[] = {
        {R"({"models": [1]})", "models"},
        {R"({"models": {"gpt-4.1": {"contextWindow": 1000}}})", "models.gpt-4.1"},
        {R"({"models": {"openai/": {"contextWindow": 1000}}})", "models.openai/"},
        {R"({"models": {"openai/gpt-4.1": 1000}})", "models.openai/gpt-4.1"},
        {R"({"models": {"openai/gpt-4.1": {"maxOutputTokens": 10}}})", "models.openai/gpt-4.1.contextWindow"},
        {R"({"models": {"openai/gpt-4.1": {"contextWindow": 0}}})", "models.openai/gpt-4.1.contextWindow"},
        {R"({"models": {"openai/gpt-4.1": {"contextWindow": "big"}}})",
         "models.openai/gpt-4.1.contextWindow"},
        {R"({"models": {"openai/gpt-4.1": {"contextWindow": 1.5}}})", "models.openai/gpt-4.1.contextWindow"},
        {R"({"models": {"openai/gpt-4.1": {"contextWindow": 1000, "maxOutputTokens": -1}}})",
         "models.openai/gpt-4.1.maxOutputTokens"},
    };
    int i = 0;
    for (const auto& [text, field] : cases)
    {
        compaction::diagnostics diag;
        const auto h =
            runtime::load_host_config(inputs(settings_file("bad-models-" + std::to_string(i++), text)), diag);
        ASSERT_FALSE(h) << text;
        EXPECT_EQ(h.error(), compaction::make_error_code(compaction::errc::invalid_settings)) << text;
        EXPECT_EQ(diag.field, field) << text;
        EXPECT_EQ(diag.message.rfind("settings field '" + std::string(field) + "': ", 0), 0u) << diag.message;
    }
}

TEST(host_config, a_models_window_at_or_below_its_reserve_tokens_is_refused_naming_the_field)
{
    // The model's own override counts: 8000 would fit the ordinary 4000, not its 8000.
    const auto file = settings_file(
        "models-small-window", R"({"compaction": {"reserveTokens": 4000,
        "modelOverrides": {"openai/gpt-4.1-nano": {"reserveTokens": 8000}}},
        "models": {"anthropic/claude-haiku-4-5": {"contextWindow": 4001}, "openai/gpt-4.1-nano": {"contextWindow": 8000}}})"
    );
    compaction::diagnostics diag;
    const auto h = runtime::load_host_config(inputs(file), diag);
    ASSERT_FALSE(h);
    EXPECT_EQ(h.error(), compaction::make_error_code(compaction::errc::invalid_settings));
    EXPECT_EQ(diag.field, "models.openai/gpt-4.1-nano.contextWindow");
    EXPECT_EQ(
        diag.message,
        "settings field 'models.openai/gpt-4.1-nano.contextWindow': 8000 must be larger than reserveTokens "
        "(8000)"
    );
    // A --reserve-tokens flag applies to every model, and is checked against every window.
    auto in = inputs(
        settings_file("models-flag-window", R"({"models": {"openai/gpt-4.1": {"contextWindow": 30000}}})")
    );
    in.flags.reserve_tokens = 30000;
    EXPECT_FALSE(runtime::load_host_config(in, diag));
    EXPECT_EQ(diag.field, "models.openai/gpt-4.1.contextWindow");
    in.flags.reserve_tokens = 29999;
    EXPECT_TRUE(runtime::load_host_config(in, diag)) << diag.message;
}

// One host configuration for the CLI and the server: the offline delay is read once, with the
// rest of the environment, and the session's summarizer is the host's choice.
TEST(host_config, the_summarizer_choice_and_the_offline_delay_come_from_the_host_configuration)
{
    auto in = inputs(settings_file("offline-delay", R"({"compaction": {"keepRecentTokens": 4321}})"));
    in.getenv = [](const char* name) -> const char* {
        return std::strcmp(name, "AGENTCTX_OFFLINE_DELAY_MS") == 0 ? "250" : nullptr;
    };
    compaction::diagnostics diag;
    auto h = runtime::load_host_config(in, diag);
    ASSERT_TRUE(h) << diag.message;
    EXPECT_EQ(h->offline_delay, std::chrono::milliseconds(250));
    const auto offline = config_of(*h);
    ASSERT_TRUE(offline.summarizer);
    EXPECT_EQ(offline.summarizer->name(), "offline");  // no provider: the offline summarizer
    EXPECT_EQ(offline.settings.keep_recent_tokens, 4321);
    EXPECT_EQ(offline.model.provider, "offline");
    int made = 0;
    h->make_summarizer = [&made](boost::asio::any_io_executor ex) {
        ++made;
        return std::make_shared<providers::offline_summarizer>(ex);
    };
    const auto shared = config_of(*h);
    EXPECT_EQ(made, 1);  // the host's own factory, once per session
    EXPECT_EQ(shared.settings.keep_recent_tokens, 4321);
    const auto with_provider_config =
        config_of(*runtime::load_host_config(inputs(settings_file("provider-choice", with_provider)), diag));
    ASSERT_TRUE(with_provider_config.summarizer);
    EXPECT_EQ(with_provider_config.summarizer->name(), "vllm:m1");
}

// The flags' settings sources, the same for the CLI and the server: a file named by --settings
// must exist; the default global file need not.
TEST(host_config, a_named_settings_file_must_exist_and_the_default_one_need_not)
{
    const auto missing = fs::temp_directory_path() / "agentctx-host-config-missing.json";
    fs::remove(missing);
    runtime::host_inputs in;
    in.getenv = [](const char*) -> const char* { return nullptr; };
    in.sources = runtime::host_settings_sources(missing, std::nullopt, false);
    compaction::diagnostics diag;
    const auto named = runtime::load_host_config(in, diag);
    ASSERT_FALSE(named);
    EXPECT_EQ(named.error(), runtime::make_error_code(runtime::errc::not_found));
    EXPECT_EQ(diag.message, "cannot read the settings file '" + missing.string() + "'");
    in.sources.global_named = false;  // the same path as the default global file: no layer
    const auto absent = runtime::load_host_config(in, diag);
    ASSERT_TRUE(absent) << diag.message;
    EXPECT_EQ(absent->settings.compaction.keep_recent_tokens, 20000);
    const auto defaults = runtime::host_settings_sources(std::nullopt, fs::path("/p"), true);
    EXPECT_EQ(defaults.global, runtime::default_global_settings_path());
    EXPECT_FALSE(defaults.global_named);
    EXPECT_EQ(defaults.project_dir, fs::path("/p"));
    EXPECT_TRUE(defaults.project_trusted);
}
