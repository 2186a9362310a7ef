// load_settings: files on disk, trust, precedence, and named errors.
#include <agentctx/runtime/settings_files.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace agentctx;
namespace fs = std::filesystem;

namespace {

struct dirs
{
    fs::path root = fs::temp_directory_path() / ("agentctx-settings-" + std::to_string(::getpid()));
    fs::path global = root / "global" / "settings.json";
    fs::path project = root / "project";
    dirs()
    {
        fs::remove_all(root);
        fs::create_directories(global.parent_path());
        fs::create_directories(project / ".pi");
    }
    ~dirs() { fs::remove_all(root); }
    void write(const fs::path& p, const std::string& s) { std::ofstream(p) << s; }
};

}  // namespace

TEST(settings_files, global_then_trusted_project_then_overrides)
{
    dirs d;
    d.write(d.global, R"({"compaction":{"reserveTokens":8000,"keepRecentTokens":4000}})");
    d.write(d.project / ".pi" / "settings.json", R"({"compaction":{"keepRecentTokens":1000}})");
    compaction::diagnostics diag;
    auto s = runtime::load_settings(d.global, d.project, true, {}, diag).value();
    EXPECT_EQ(s.reserve_tokens, 8000);
    EXPECT_EQ(s.keep_recent_tokens, 1000);
    s = runtime::load_settings(d.global, d.project, false, {}, diag).value();  // untrusted: ignored
    EXPECT_EQ(s.keep_recent_tokens, 4000);
    s = runtime::load_settings(d.global, d.project, true, {{"compaction", {{"keepRecentTokens", 7}}}}, diag)
            .value();
    EXPECT_EQ(s.keep_recent_tokens, 7);
    s = runtime::load_settings(d.root / "missing.json", std::nullopt, false, {}, diag).value();  // defaults
    EXPECT_EQ(s.reserve_tokens, 16384);
}

TEST(settings_files, broken_files_are_named_errors)
{
    dirs d;
    d.write(d.global, "{not json");
    compaction::diagnostics diag;
    auto s = runtime::load_settings(d.global, std::nullopt, false, {}, diag);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error(), compaction::make_error_code(compaction::errc::invalid_settings));
    EXPECT_NE(diag.message.find(d.global.string()), std::string::npos);
    d.write(d.global, R"({"retry":{"maxRetries":true}})");
    s = runtime::load_settings(d.global, std::nullopt, false, {}, diag);
    ASSERT_FALSE(s);
    EXPECT_EQ(diag.field, "retry.maxRetries");
    EXPECT_NE(diag.message.find("global settings"), std::string::npos);
}

TEST(settings_files, model_overrides_merge_across_files_for_the_given_model)
{
    dirs d;
    d.write(
        d.global,
        R"({"compaction":{"reserveTokens":8000,"modelOverrides":{"prov/org/big":{"reserveTokens":400000}}}})"
    );
    d.write(
        d.project / ".pi" / "settings.json",
        R"({"compaction":{"modelOverrides":{"prov/org/big":{"keepRecentTokens":5},"prov/bad":7}}})"
    );
    compaction::diagnostics diag;
    const std::string big = "prov/org/big";
    auto s = runtime::load_settings(d.global, d.project, true, {}, diag, big).value();
    EXPECT_EQ(s.reserve_tokens, 400000);
    EXPECT_EQ(s.keep_recent_tokens, 5);
    s = runtime::load_settings(d.global, d.project, true, {}, diag).value();  // no model: overrides ignored
    EXPECT_EQ(s.reserve_tokens, 8000);
    EXPECT_EQ(s.keep_recent_tokens, 20000);
    auto bad = runtime::load_settings(d.global, d.project, true, {}, diag, std::string("prov/bad"));
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error(), compaction::make_error_code(compaction::errc::invalid_settings));
    EXPECT_EQ(
        diag.message, "Invalid compaction.modelOverrides[\"prov/bad\"] setting: 7. Expected an object."
    );
}

TEST(settings_files, global_path_honours_pi_coding_agent_dir)
{
    ::setenv("PI_CODING_AGENT_DIR", "/opt/agent", 1);
    EXPECT_EQ(runtime::default_global_settings_path(), fs::path("/opt/agent/settings.json"));
    ::unsetenv("PI_CODING_AGENT_DIR");
    ::setenv("HOME", "/home/dev", 1);
    EXPECT_EQ(runtime::default_global_settings_path(), fs::path("/home/dev/.pi/agent/settings.json"));
}

TEST(settings_files, one_read_returns_the_provider_redaction_and_pinned_sections_layered)
{
    dirs d;
    d.write(
        d.global,
        R"({"compaction":{"keepRecentTokens":4000},"provider":{"name":"vllm","model":"qwen3","baseUrl":"http://a"},)"
        R"("redaction":{"allowlist":["x"]}})"
    );
    d.write(
        d.project / ".pi" / "settings.json",
        R"({"provider":{"model":"llama"},"redaction":{"enabled":false},"pinned":{"customTypes":["reminder"]}})"
    );
    compaction::diagnostics diag;
    auto trusted = runtime::load_settings_files({d.global, d.project, true, {}, std::nullopt}, diag);
    ASSERT_TRUE(trusted) << diag.message;
    EXPECT_EQ(trusted->compaction.keep_recent_tokens, 4000);
    EXPECT_EQ(trusted->provider.at("name"), "vllm");    // from the global file
    EXPECT_EQ(trusted->provider.at("model"), "llama");  // the project wins per field
    EXPECT_EQ(trusted->provider.at("baseUrl"), "http://a");
    EXPECT_FALSE(trusted->redaction.enabled);
    EXPECT_EQ(trusted->redaction.allowlist, std::vector<std::string>{"x"});
    EXPECT_EQ(trusted->pins.custom_types, std::vector<std::string>{"reminder"});

    auto untrusted = runtime::load_settings_files({d.global, d.project, false, {}, std::nullopt}, diag);
    ASSERT_TRUE(untrusted) << diag.message;
    EXPECT_EQ(untrusted->provider.at("model"), "qwen3");
    EXPECT_TRUE(untrusted->redaction.enabled);
    EXPECT_TRUE(untrusted->pins.empty());
    EXPECT_FALSE(untrusted->layers.project);  // not even read

    auto none =
        runtime::load_settings_files({d.root / "missing.json", std::nullopt, false, {}, std::nullopt}, diag);
    ASSERT_TRUE(none) << diag.message;
    EXPECT_TRUE(none->provider.empty());
}

TEST(settings_files, a_section_of_the_wrong_type_names_its_field)
{
    dirs d;
    compaction::diagnostics diag;
    d.write(d.global, R"({"provider":"vllm"})");
    auto s = runtime::load_settings_files({d.global, std::nullopt, false, {}, std::nullopt}, diag);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error(), compaction::make_error_code(compaction::errc::invalid_settings));
    EXPECT_EQ(diag.field, "provider");
    d.write(d.global, R"({"pinned":{"ids":"a"}})");
    s = runtime::load_settings_files({d.global, std::nullopt, false, {}, std::nullopt}, diag);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error(), compaction::make_error_code(compaction::errc::invalid_settings));
}

TEST(settings_files, the_jobs_section_is_read_and_a_bad_field_names_its_path)
{
    dirs d;
    compaction::diagnostics diag;
    d.write(
        d.global,
        R"({"jobs":{"rules":[{"tools":["start_build"],"id":{"from":"arguments","field":"jobId"},)"
        R"("completedBy":{"tools":["job_status"]}}]}})"
    );
    auto s = runtime::load_settings_files({d.global, std::nullopt, false, {}, std::nullopt}, diag);
    ASSERT_TRUE(s) << diag.message;
    ASSERT_EQ(s->jobs.rules.size(), 1u);
    EXPECT_EQ(s->jobs.rules[0].tools, std::vector<std::string>{"start_build"});
    EXPECT_EQ(s->jobs.rules[0].id_field, "jobId");
    EXPECT_EQ(s->jobs.rules[0].completion_tools, std::vector<std::string>{"job_status"});
    d.write(
        d.global,
        R"({"jobs":{"rules":[{"tools":["start_build"],"id":{"from":"arguments"},)"
        R"("completedBy":{"tools":["job_status"]}}]}})"
    );
    s = runtime::load_settings_files({d.global, std::nullopt, false, {}, std::nullopt}, diag);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error(), compaction::make_error_code(compaction::errc::invalid_settings));
    EXPECT_EQ(diag.field, "jobs.rules[0].id.field");
    EXPECT_EQ(
        diag.message, "settings: field 'jobs.rules[0].id.field': missing (the id is read from this key)"
    );
}
