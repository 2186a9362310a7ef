// A deterministic summarizer with no network: the embedded default when no provider is configured.
#pragma once

#include <agentctx/providers/summarizer.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <chrono>

namespace agentctx::providers {

/// Builds the checkpoint from the prompt's serialized transcript with fixed rules (no model):
/// - Goal: the previous summary's goal, else the first substantive user request (not a slash
///   command, greeting or one-word reply); a later request that redefines the task replaces it;
/// - Constraints & Preferences: whole user sentences with must / never / always / don't / prefer / only …;
/// - Progress: files edited or written (with the reason stated just before), checks passing,
///   read-only probes folded into one "Inspected N files" line; In Progress: unanswered calls;
///   Blocked: failures never followed by a success of the same command (or, for tests, any test);
/// - Key Decisions: whole sentences that state a choice ("I'll use…", "instead of", …);
/// - Next Steps: blockers, the last request, the assistant's latest stated plan;
/// - Critical Context: error lines, commands and paths (tool arguments JSON-decoded), newest first.
/// Accepts the `<conversation>` prompt and the `# Conversation` / `# Instructions` form. A
/// turn-prefix prompt gets its own three headings (old or new wording, as the prompt asks). Whole
/// bullets are dropped to fit the output cap (chars/4); strings that look like API keys are masked.
/// Same prompt in, same summary out.
compaction::summary_output offline_summary(const compaction::summary_prompt& prompt);

/// The summarizer form of offline_summary; completes through the given executor. Its name() is
/// "offline", which the runtime records in the compaction's details.
class offline_summarizer final : public summarizer
{
public:
    /// `delay` simulates a slow model (demos, tests): the result arrives after it, and the request
    /// can be cancelled while it waits (completes with `operation_aborted`).
    explicit offline_summarizer(boost::asio::any_io_executor ex, std::chrono::milliseconds delay = {})
        : ex_(std::move(ex)), delay_(delay)
    {}
    std::string name() const override { return "offline"; }
    /// Extractive: the recall gate adds what it leaves out verbatim, without a follow-up request.
    summarizer_capabilities capabilities() const override
    {
        summarizer_capabilities c;
        c.extractive = true;
        return c;
    }

protected:
    void summarize_impl(
        compaction::summary_prompt prompt, boost::asio::any_completion_handler<summarize_signature> handler
    ) override;

private:
    boost::asio::any_io_executor ex_;
    std::chrono::milliseconds delay_;
};

}  // namespace agentctx::providers
