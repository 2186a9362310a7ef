// gen_session: writes a seeded, realistic Pi-format session to stdout or a file.
#include "session_generator.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

int main(int argc, char** argv)
{
    agentctx::tools::generator_options o;
    const char* out = nullptr;
    for (int i = 1; i < argc; ++i)
    {
        auto next = [&]() -> const char* {
            if (i + 1 >= argc)
            {
                std::fprintf(stderr, "gen_session: %s needs a value\n", argv[i]);
                std::exit(2);
            }
            return argv[++i];
        };
        if (!std::strcmp(argv[i], "--seed"))
            o.seed = std::strtoull(next(), nullptr, 10);
        else if (!std::strcmp(argv[i], "--entries"))
            o.entries = std::strtoull(next(), nullptr, 10);
        else if (!std::strcmp(argv[i], "--mean-tool-output"))
            o.mean_tool_output = std::strtoull(next(), nullptr, 10);
        else if (!std::strcmp(argv[i], "--compaction-every"))
            o.compaction_every = std::strtoull(next(), nullptr, 10);
        else if (!std::strcmp(argv[i], "--branch-rate"))
            o.branch_rate = std::strtod(next(), nullptr);
        else if (!std::strcmp(argv[i], "--version"))
            o.version = std::atoi(next());
        else if (!std::strcmp(argv[i], "--pi16"))
            o.pi16 = true;
        else if (!std::strcmp(argv[i], "-o"))
            out = next();
        else
        {
            std::fprintf(
                stderr,
                "usage: gen_session [--seed N] [--entries N] [--mean-tool-output BYTES] "
                "[--compaction-every TURNS] [--branch-rate P] [--version 1|2|3] [--pi16] [-o FILE]\n"
            );
            return 2;
        }
    }
    try
    {
        if (out)
            agentctx::tools::write_session_file(o, out);
        else
            agentctx::tools::generate_session(o, [](const std::string& line) {
                std::fwrite(line.data(), 1, line.size(), stdout);
            });
    }
    catch (const std::exception& e)
    {
        std::fprintf(stderr, "gen_session: %s\n", e.what());
        return 1;
    }
    return 0;
}
