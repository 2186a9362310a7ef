// Seeded generator of realistic Pi-format sessions (tool rounds, large outputs, images, branches,
// earlier compactions) for tests, benchmarks and bundled examples.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace agentctx::tools {

struct generator_options
{
    std::uint64_t seed = 1;
    std::size_t entries = 1000;           ///< entries to write after the header (approximately exact)
    std::size_t mean_tool_output = 2500;  ///< mean tool result size in bytes (heavy-tailed)
    double image_rate = 0.01;             ///< share of tool results / prompts carrying an image
    double branch_rate = 0.01;            ///< chance per turn of going back to an earlier turn
    std::size_t compaction_every = 0;     ///< turns between compactions (0 = none)
    double tool_turn_rate = 1.0;          ///< share of turns that use tools (others are plain chat)
    double metadata_rate = 0.03;          ///< chance per turn of a label (metadata) after the turn
    double interleave_rate = 0;           ///< share of multi-call rounds whose last result arrives
                                          ///< after a later assistant message (interleaved rounds)
    int version = 3;                      ///< 1, 2 or 3 (v1: no ids, index-based compactions)
    /// Pi 1.6 style (v3 only): system messages with section patches and tool changes, context
    /// edits (omissions and replacements), usage entries, overflow/length recovery sequences,
    /// retain-none compactions and compactions carrying their systemMessage checkpoint.
    bool pi16 = false;
};

/// Writes the session line by line (each string ends with '\n') to `sink`.
void generate_session(const generator_options& opts, const std::function<void(const std::string&)>& sink);

/// The whole session as one string.
std::string generate_session(const generator_options& opts);

/// Writes the session to `path` (through a temporary file and a rename). With `reuse`, an existing
/// file is kept as is: benchmarks generate their large sessions once.
void write_session_file(const generator_options& opts, const std::string& path, bool reuse = false);

}  // namespace agentctx::tools
