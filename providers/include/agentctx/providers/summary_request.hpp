// What the runtime asks a summarizer for, and what a summarizer returns (provider-neutral).
#pragma once

#include <agentctx/compaction/message.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace agentctx::providers {

/// One summary call: a system prompt, one user message, an output cap.
struct summary_request
{
    std::string system_prompt;
    std::string prompt;
    std::uint32_t max_output_tokens = 0;
    std::optional<std::string> reasoning_effort;
};

/// A provider's answer, normalized across wire formats.
struct summary_response
{
    std::string text;  ///< text blocks joined with "\n"; reasoning is never part of it
    compaction::stop_reason stop = compaction::stop_reason::stop;
    compaction::usage usage;
    std::string model;
};

/// The JSON spelling of a normalized stop reason (`stop`, `length`, `error`, `aborted`).
const char* to_string(compaction::stop_reason r) noexcept;

}  // namespace agentctx::providers
