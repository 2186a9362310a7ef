// fake_provider: the loopback fake model provider as a program, for manual runs of the CLI and the server.
//
// Serves on 127.0.0.1 (a free port, printed as the first line of stdout) until stdin closes:
// Chat Completions and Messages summaries, both counting endpoints (bytes / 4), Anthropic's
// compaction edit and OpenAI's responses/compact. On exit it prints the requests per path.
#include "fake_provider_server.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <string>

namespace {

using agentctx::test::recorded_request;
using agentctx::test::scripted_response;

scripted_response reply(std::string body, std::chrono::milliseconds delay)
{
    scripted_response r;
    r.body = std::move(body);
    r.delay = delay;
    return r;
}

}  // namespace

int main(int argc, char** argv)
{
    std::chrono::milliseconds delay{0};
    for (int i = 1; i < argc; ++i)
    {
        if (!std::strcmp(argv[i], "--delay-ms") && i + 1 < argc)
            delay = std::chrono::milliseconds(std::strtoll(argv[++i], nullptr, 10));
        else
        {
            std::fprintf(stderr, "usage: fake_provider [--delay-ms N]   (serves until stdin closes)\n");
            return 2;
        }
    }
    agentctx::test::fake_provider_server server;
    int note = 0;
    const auto note_text = [&note] { return "## Goal\nFake provider note " + std::to_string(++note) + "."; };
    server.route("/chat/completions", [&](const recorded_request&) {
        return reply(agentctx::test::openai_body(note_text()), delay);
    });
    server.route("/responses/input_tokens", [&](const recorded_request& r) {
        return reply(agentctx::test::openai_count_body(static_cast<std::int64_t>(r.body.size() / 4)), delay);
    });
    server.route("/messages/count_tokens", [&](const recorded_request& r) {
        return reply(
            agentctx::test::anthropic_count_body(static_cast<std::int64_t>(r.body.size() / 4)), delay
        );
    });
    server.route("/responses/compact", [&](const recorded_request&) {
        return reply(
            agentctx::test::openai_compact_body({}, {agentctx::test::openai_compaction_item("FAKE-ENC")}),
            delay
        );
    });
    server.route("/messages", [&](const recorded_request& r) {
        if (r.body.find("compact_20260112") != std::string::npos)
            return reply(
                agentctx::test::anthropic_compaction_body(
                    {agentctx::test::anthropic_compaction_block(note_text(), "FAKE-ENC")}
                ),
                delay
            );
        return reply(agentctx::test::anthropic_body(note_text()), delay);
    });
    std::cout << server.base_url() << std::endl;
    for (std::string line; std::getline(std::cin, line);)
    {}
    std::map<std::string, int> by_path;
    for (const auto& r : server.requests())
        ++by_path[r.method + " " + r.target];
    for (const auto& [path, n] : by_path)
        std::cerr << n << " " << path << "\n";
    return 0;
}
