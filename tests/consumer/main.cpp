// Consumer of an installed agentctx: loads a session from memory, projects its context, redacts a key.
#include <agentctx/compaction/projection.hpp>
#include <agentctx/compaction/redaction.hpp>
#include <agentctx/runtime/memory_store.hpp>

#include <cstdio>
#include <string>

int main()
{
    agentctx::runtime::memory_store store(
        "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2026-01-15T09:00:00.000Z\",\"cwd\":"
        "\"/\"}\n"
        "{\"type\":\"message\",\"id\":\"a1\",\"parentId\":null,\"timestamp\":\"2026-01-15T09:00:01.000Z\","
        "\"message\":{\"role\":\"user\",\"content\":\"hello\",\"timestamp\":1}}\n"
    );
    agentctx::compaction::load_report report;
    agentctx::compaction::diagnostics diag;
    auto log = store.load({}, report, diag);
    if (!log)
        return 1;
    auto ctx = agentctx::compaction::build_session_context(*log, diag);
    if (!ctx || ctx->messages.size() != 1)
        return 1;
    // Links RE2 through the package config (agentctx::compaction is static by default).
    auto red = agentctx::compaction::redactor::create(agentctx::compaction::redaction_settings{}, diag);
    if (!red || red->redact("id AKIA" + std::string(16, 'Z')).text != "id [REDACTED:aws_access_key_id]")
        return 1;
    std::puts("consumer ok");
    return 0;
}
